// Package source reads every source of a budget's spend into one spend.Reading (Read): the spend ConfigMap a team
// budget names, the ConfigMaps of the namespaces a cluster budget selects, or Kelos TaskRecords. A ConfigMap value
// is a plain USD decimal ("12.34") or a JSON object of cost, token counts and models (see ParseValue), in one of
// two formats:
//
//   - Total: one key holds the current period's spend; the writer resets it when a period starts.
//   - DailyLedger: each key "<prefix>YYYY-MM-DD" holds one local day's spend; a period's is the sum of its days.
//
// A team budget reads its ConfigMap only when it carries the label llmbudget.dev/spend-source, which only a spend
// writer or a cluster administrator can have put there; one without it is untrusted (api.ReasonSpendUntrusted).
//
// It also reads the stamp a writer puts on the ConfigMap, the time its figures are for (StampOf), and Kelos
// TaskRecords (DecodeRecord), summing those completed in a period (SumRecords) as Kelos does.
//
// Guarantees:
//   - No amount passes through float64: a JSON number's text is parsed, so 12.345678901 is refused, not rounded.
//   - Reading is strict: negative, NaN, Inf, exponents, empty values, whitespace around a decimal, unknown or
//     repeated JSON fields and trailing data are errors that name the key and say what is wrong.
//   - Keys and models are read in sorted order, so the same data always reports the same fault.
//   - No related object is skipped silently: a Namespace, ConfigMap or TaskRecord that does not decode makes its
//     namespace unreadable, and the message names it; a TaskRecord with a label of the wrong type is named, not
//     dropped as unmatched. A ConfigMap or TaskRecord that the request lists twice, under two keys, counts once.
//   - For a cluster budget, a Total source is summed only when its annotation llmbudget.dev/period-start declares
//     the budget's current period; any other makes the sum Unknown (never silently wrong) under either
//     failurePolicy. An unreadable namespace makes the sum Unknown under failurePolicy Closed; under Open it is
//     reported in the breakdown and skipped. The breakdown lists at most api.MaxNamespaces; the totals cover all.
//     The sum is as old as its oldest source (by annotation llmbudget.dev/spend-as-of).
package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/text"
)

// ReadTeam reads a validated LLMCostBudget's spend in the period w from the related objects: from the spend
// ConfigMap it names, or from its namespace's TaskRecords.
func ReadTeam(b api.LLMCostBudget, related metacontroller.ObjectMap, w period.Window) spend.Reading {
	if b.Spec.CostSource.Format == api.TaskRecords {
		return readRecords(b, related, w)
	}
	return readConfigMap(b, related, w)
}

// readConfigMap reads the budget's spend ConfigMap, the one related object it names, for the period w;
// a ConfigMap's stamp says when its figures are for.
func readConfigMap(b api.LLMCostBudget, related metacontroller.ObjectMap, w period.Window) spend.Reading {
	name, ns := b.Spec.CostSource.ConfigMapName, b.Metadata.Namespace
	raw, found := related[metacontroller.ConfigMapGroup][metacontroller.Key(ns, name)]
	if !found {
		msg := fmt.Sprintf("ConfigMap %q not found in namespace %q", name, ns)
		return spend.Reading{Reason: api.ReasonCostSourceMissing, Message: msg}
	}
	src := keysOf(b.Spec.CostSource)
	cm, err := DecodeConfigMap(raw)
	u := spend.Usage{}
	if err == nil {
		if _, labelled := cm.Metadata.Labels[api.LabelSpendSource]; !labelled {
			return spend.Reading{Reason: api.ReasonSpendUntrusted, Message: untrusted(ns, name)}
		}
		u, err = Data(src, cm.Data, w)
	}
	if err != nil {
		return spend.Reading{Reason: ReasonOf(err), Message: fmt.Sprintf("ConfigMap %q: %v", name, err)}
	}
	read := fmt.Sprintf("spend read from key %q of ConfigMap %q", src.Key, name)
	if src.Format == api.DailyLedger {
		days := len(w.Dates())
		unit := "days"
		if days == 1 {
			unit = "day"
		}
		read = fmt.Sprintf("spend summed over the period's %d %s of keys %q of ConfigMap %q",
			days, unit, src.KeyPrefix+"YYYY-MM-DD", name)
	}
	source := fmt.Sprintf("ConfigMap %s/%s", ns, name)
	stamp := StampOf(source, cm.Metadata.Annotations)
	return spend.Reading{Usage: u, Message: read, Stamp: stamp, Rate: RateOf(source, cm.Metadata.Annotations, stamp)}
}

// untrusted says why a ConfigMap without the spend-source label is not read: only the spend writers may create a
// labelled ConfigMap and only a cluster administrator may label one, so a ConfigMap without it may have been made
// or stamped by the very team the budget limits (one created before the budget named it, say).
func untrusted(ns, name string) string {
	return fmt.Sprintf("ConfigMap %s/%s carries no label %s, so no spend writer made or labelled it: it is not "+
		"read (a cluster administrator deletes it for the writer to create, or labels it)", ns, name,
		api.LabelSpendSource)
}

// keysOf is where in a spend ConfigMap's data the spec's spend is.
func keysOf(c api.CostSource) Source {
	return Source{Format: c.Format, Key: c.Key, KeyPrefix: c.KeyPrefix}
}

// Source says where in the ConfigMap's data the spend is; validation ensures a known format and Total's key.
type Source struct {
	Format    api.SourceFormat // "" means Total, the spec's default
	Key       string           // holds the period's spend, for Total
	KeyPrefix string           // starts every ledger key, for DailyLedger; may be empty
}

var errMissing = errors.New("missing")

// ReasonOf is the BudgetEvaluated reason of an error from Read or DecodeData: api.ReasonCostKeyMissing when the
// Total key is not in the ConfigMap, api.ReasonInvalidCostData when a key or value is malformed.
func ReasonOf(err error) string {
	if errors.Is(err, errMissing) {
		return api.ReasonCostKeyMissing
	}
	return api.ReasonInvalidCostData
}

// Data returns the spend in data for the period w; every error names the key at fault. Total reads src.Key.
// DailyLedger sums w.Dates(); every key with the prefix must be a valid date holding a valid value, even outside
// w, lest a broken ledger look like a cheap period. Other keys are ignored; no ledger keys means zero usage.
func Data(src Source, data map[string]string, w period.Window) (spend.Usage, error) {
	if src.Format == api.DailyLedger {
		return readLedger(src.KeyPrefix, data, w)
	}
	value, ok := data[src.Key]
	if !ok {
		return spend.Usage{}, fmt.Errorf("key %s is %w", quoteKey(src.Key), errMissing)
	}
	u, err := ParseValue(value)
	if err != nil {
		return spend.Usage{}, fmt.Errorf("key %s: %w", quoteKey(src.Key), err)
	}
	return u, nil
}

func readLedger(prefix string, data map[string]string, w period.Window) (spend.Usage, error) {
	// Dates() are consecutive days and "YYYY-MM-DD" sorts like the dates it names, so membership is a range check.
	var first, last string
	if dates := w.Dates(); len(dates) > 0 {
		first, last = dates[0], dates[len(dates)-1]
	}
	var sum spend.Usage
	for _, k := range slices.Sorted(maps.Keys(data)) {
		date, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		inPeriod := first != "" && date >= first && date <= last
		u, err := ParseValue(data[k])
		t, dateErr := time.Parse(time.DateOnly, date)
		switch {
		case dateErr != nil || t.Format(time.DateOnly) != date:
			err = fmt.Errorf("%s after the prefix is not a date in YYYY-MM-DD form", text.Quote(date))
		case err == nil && inPeriod && sum.CostUSD.Cmp(money.Max.Sub(u.CostUSD)) > 0:
			err = fmt.Errorf("the period's spend passes %s USD, the most an amount holds", money.Max)
		}
		if err != nil {
			return spend.Usage{}, fmt.Errorf("key %s: %w", quoteKey(k), err)
		}
		if inPeriod {
			sum = sum.Add(u)
		}
	}
	return sum, nil
}

// maxKeyQuoted is the longest data key an error quotes whole: Kubernetes's own limit on a ConfigMap key.
const maxKeyQuoted = 253

// quoteKey quotes a data key for an error. A key Kubernetes accepts is quoted whole, so a ledger key keeps its day
// however long its prefix; a longer one (only a crafted request carries it) is cut in the middle, keeping its end.
func quoteKey(k string) string {
	if len(k) <= maxKeyQuoted {
		return strconv.Quote(k)
	}
	head, tail := k[:maxKeyQuoted/2], k[len(k)-maxKeyQuoted/2:]
	return strconv.Quote(head) + "..." + strconv.Quote(tail)
}

// ConfigMap is the part of a spend ConfigMap that is read.
type ConfigMap struct {
	Metadata metacontroller.ObjectMeta `json:"metadata"`
	Data     map[string]string         `json:"data"` // never nil once decoded
}

// DecodeConfigMap reads a ConfigMap as Metacontroller sends it (raw, valid JSON). The API server stores only
// strings in data, labels and annotations, and no member twice; an error names the first value that breaks
// either rule, so that unreadable data never reads as no spend, nor one value hides behind another.
func DecodeConfigMap(raw []byte) (ConfigMap, error) {
	var cm ConfigMap
	if err := decode.Unique(raw, &cm, ""); err != nil {
		return ConfigMap{}, notAString(raw, err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	return cm, nil
}

// looseObject is a related object's string maps with their values raw, to name one that is not a string.
type looseObject struct {
	Metadata struct {
		Labels      map[string]json.RawMessage `json:"labels"`
		Annotations map[string]json.RawMessage `json:"annotations"`
	} `json:"metadata"`
	Data map[string]json.RawMessage `json:"data"`
}

// notAString says which value is not a string, the first of data, labels and annotations in key order; any
// other error is err.
func notAString(raw []byte, err error) error {
	var loose looseObject
	if decode.Lenient(raw, &loose, "") != nil {
		return err
	}
	for _, field := range []struct {
		what   string
		values map[string]json.RawMessage
	}{{"key", loose.Data}, {"label", loose.Metadata.Labels}, {"annotation", loose.Metadata.Annotations}} {
		for _, k := range slices.Sorted(maps.Keys(field.values)) {
			if v := field.values[k]; v[0] != '"' && string(v) != "null" {
				return fmt.Errorf("%s %s: the value is %s, not a string", field.what, text.Quote(k), describe(v))
			}
		}
	}
	return err
}

// StampOf reads the stamp of the spend source named source from its annotations: an RFC 3339 time, or the
// Problem that it is missing or is not one (quoting the value shortened: the annotation is the writer's, up to
// 256 KiB).
func StampOf(source string, annotations map[string]string) spend.Stamp {
	v, ok := annotations[api.AnnotationSpendAsOf]
	if !ok {
		return spend.Stamp{Source: source, Problem: "has no " + api.AnnotationSpendAsOf + " annotation"}
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return spend.Stamp{Source: source, Problem: fmt.Sprintf("has annotation %s %s, which is not an RFC 3339 time",
			api.AnnotationSpendAsOf, text.Quote(v))}
	}
	return spend.Stamp{Source: source, AsOf: t}
}
