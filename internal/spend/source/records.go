package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/text"
)

// Record is the part of a Kelos TaskRecord (taskrecords.kelos.dev, kelos.dev/v1alpha2) that spend is read from:
// Kelos writes one, immutable, when a Task finishes, with the Task's labels and the usage it reported.
type Record struct {
	Namespace, Name string
	Labels          map[string]string
	Model           string       // spec.model; "" when Kelos did not know it
	Completed       time.Time    // spec.completionTime; zero when absent
	Usage           *spend.Usage // spec.usage; nil when absent
}

// recordJSON is a TaskRecord as Metacontroller sends it; everything else Kelos writes is ignored.
type recordJSON struct {
	Metadata metacontroller.ObjectMeta `json:"metadata"`
	Spec     *struct {
		Model          string       `json:"model"`
		CompletionTime *string      `json:"completionTime"`
		Usage          *recordUsage `json:"usage"`
	} `json:"spec"`
}

// RecordError is a record whose usage cannot be read: Name is its namespace/name, or the object map's key when
// even the name does not decode.
type RecordError struct {
	Name string
	Err  error
}

func (e *RecordError) Error() string { return fmt.Sprintf("TaskRecord %s: %v", e.Name, e.Err) }

func (e *RecordError) Unwrap() error { return e.Err }

// DecodeRecord reads a TaskRecord; key (the object map's "namespace/name") names it when its own metadata does not
// decode. Like a ConfigMap, a record is decoded without unknown-field checks (Kelos's fields are Kelos's) but with
// no member twice; its usage is parsed exactly (see ParseQuantity), and an error names the field.
func DecodeRecord(key string, raw []byte) (Record, error) {
	// One pass over the record, which Metacontroller sends whole, managedFields and all: the decoder goes on past
	// a value of the wrong type, so the metadata still names the record and its labels still select it.
	var j recordJSON
	err := decode.Unique(raw, &j, "")
	r := Record{Namespace: j.Metadata.Namespace, Name: j.Metadata.Name, Labels: j.Metadata.Labels}
	if r.Namespace == "" {
		// A record is namespaced: the key is where the request put it, so that it is read there, not dropped.
		r.Namespace, _, _ = strings.Cut(key, "/")
	}
	if r.Name == "" {
		if err == nil {
			err = errors.New("metadata.name is missing")
		}
		return Record{}, &RecordError{Name: key, Err: err}
	}
	fail := func(err error) (Record, error) {
		return r, &RecordError{Name: r.Namespace + "/" + r.Name, Err: err}
	}
	switch {
	case err != nil:
		return fail(err)
	case j.Spec == nil:
		return fail(errors.New("spec is missing"))
	}
	s := j.Spec
	r.Model = s.Model
	if s.CompletionTime != nil {
		t, err := time.Parse(time.RFC3339, *s.CompletionTime)
		if err != nil {
			return fail(fmt.Errorf("spec.completionTime: %s is not an RFC 3339 time", text.Quote(*s.CompletionTime)))
		}
		r.Completed = t
	}
	if s.Usage != nil {
		u, err := s.Usage.usage()
		if err != nil {
			return fail(err)
		}
		r.Usage = &u
	}
	return r, nil
}

// recordUsage is Kelos's TaskUsage: every field optional, costUSD a resource.Quantity (a string, or a JSON number).
type recordUsage struct {
	CostUSD      json.RawMessage `json:"costUSD"`
	InputTokens  tokenField      `json:"inputTokens"`
	OutputTokens tokenField      `json:"outputTokens"`
}

// usage reads spec.usage; an error names the field by its path from the record.
func (j *recordUsage) usage() (spend.Usage, error) {
	var u spend.Usage
	switch c := j.CostUSD; {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return spend.Usage{}, fmt.Errorf("spec.usage.costUSD: %w", err)
		}
		a, err := ParseQuantity(s)
		if err != nil {
			return spend.Usage{}, fmt.Errorf("spec.usage.costUSD: %w", err)
		}
		u.CostUSD = a
	case c[0] == '-' || c[0] >= '0' && c[0] <= '9':
		a, err := ParseQuantity(string(c))
		if err != nil {
			return spend.Usage{}, fmt.Errorf("spec.usage.costUSD: %w", err)
		}
		u.CostUSD = a
	default:
		return spend.Usage{}, fmt.Errorf("spec.usage.costUSD: %s is not a quantity (a string or a number)", describe(c))
	}
	switch {
	case j.InputTokens.err != nil:
		return spend.Usage{}, fmt.Errorf("spec.usage.inputTokens: %w", j.InputTokens.err)
	case j.OutputTokens.err != nil:
		return spend.Usage{}, fmt.Errorf("spec.usage.outputTokens: %w", j.OutputTokens.err)
	}
	u.InputTokens, u.OutputTokens = j.InputTokens.n, j.OutputTokens.n
	return u, nil
}

// maxExponent bounds the decimal exponent a quantity may carry ("1e30"): resource.ParseQuantity keeps "1e999999"
// as 1 at scale 999999, and reading it as a decimal would compute a power of ten with a million digits.
const maxExponent = 30

// maxQuantityLen bounds a quantity's length: a million-digit mantissa takes seconds to parse; real costs need a few.
const maxQuantityLen = 100

var quantityExponent = regexp.MustCompile(`[eE]([+-]?[0-9]+)$`)

// ParseQuantity reads a Kubernetes quantity ("12500m", "50", "1.5e2", "2Ki") as the exact amount it stands for:
// the value Kelos and the API server read, since they parse it alike (resource.ParseQuantity, which rounds up
// below a nano-dollar). It never passes through float64.
func ParseQuantity(s string) (money.Amount, error) {
	if len(s) > maxQuantityLen {
		return money.Amount{}, fmt.Errorf("%.40q... is longer than %d characters", s, maxQuantityLen)
	}
	if m := quantityExponent.FindStringSubmatch(s); m != nil {
		if e, err := strconv.Atoi(m[1]); err != nil || e < -maxExponent || e > maxExponent {
			return money.Amount{}, fmt.Errorf("%q: exponent beyond ±%d", s, maxExponent)
		}
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return money.Amount{}, fmt.Errorf("%q is not a Kubernetes quantity like 50, 12.5 or 12500m: %w", s, err)
	}
	if q.Sign() < 0 {
		return money.Amount{}, fmt.Errorf("%q is negative", s)
	}
	return money.Parse(q.AsDec().String())
}

// RecordSum is what a budget's records add up to in a period, and how many of them did not count, and why.
type RecordSum struct {
	Usage spend.Usage
	// Counted records completed in the period; Outside ones completed before or after it. Kelos counts nothing for
	// a record without spec.completionTime (Incomplete) or, in the period, without spec.usage (NoUsage).
	Counted, Outside, Incomplete, NoUsage int
}

// SumRecords adds up the usage of the records completed in w, start included and end excluded, as Kelos's
// sumPeriodUsage does: a record without completionTime or usage adds nothing, and one without costUSD adds its
// tokens. A record's model, when it has one, breaks its usage down under that name. The only error is a sum past
// money.Max, naming the record that passes it.
func SumRecords(rs []Record, w period.Window) (RecordSum, error) {
	var s RecordSum
	for _, r := range rs {
		switch {
		case r.Completed.IsZero():
			s.Incomplete++
			continue
		case r.Completed.Before(w.Start) || !r.Completed.Before(w.End):
			s.Outside++
			continue
		case r.Usage == nil:
			s.NoUsage++
			continue
		}
		if s.Usage.CostUSD.Cmp(money.Max.Sub(r.Usage.CostUSD)) > 0 {
			return RecordSum{}, &RecordError{Name: r.Namespace + "/" + r.Name,
				Err: fmt.Errorf("the period's spend passes %s USD, the most an amount holds", money.Max)}
		}
		u := *r.Usage
		if r.Model != "" {
			u.Models = map[string]spend.Usage{r.Model: {CostUSD: u.CostUSD, InputTokens: u.InputTokens,
				OutputTokens: u.OutputTokens}}
		}
		s.Usage = s.Usage.Add(u)
		s.Counted++
	}
	return s, nil
}

// What a budget with a TaskRecords source relates: Kelos's records, at the version Kelos stores them.
const (
	KelosAPIVersion     = "kelos.dev/v1alpha2"
	TaskRecordsResource = "taskrecords"
	TaskRecordGroup     = "TaskRecord." + KelosAPIVersion
)

// RecordsRule relates the TaskRecords sel matches: in namespace, or (namespace "") in the namespaces nsSel selects.
func RecordsRule(namespace string, nsSel, sel *metav1.LabelSelector) metacontroller.RelatedResourceRule {
	return metacontroller.RelatedResourceRule{
		APIVersion: KelosAPIVersion, Resource: TaskRecordsResource,
		Namespace: namespace, NamespaceSelector: nsSel, LabelSelector: sel,
	}
}

// Selector is a validated spec's label selector (of namespaces, or of records); an absent or invalid one (which
// validation reports) selects nothing.
func Selector(s *metav1.LabelSelector) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(s) // nil selects nothing
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// Usable reports whether a related-resource rule can carry s: it is given, and valid.
func Usable(s *metav1.LabelSelector) bool {
	_, err := metav1.LabelSelectorAsSelector(s)
	return s != nil && err == nil
}

// DecodeRecords reads the related TaskRecords in the namespaces member admits that sel matches, in key order.
// Metacontroller selected them already; they are matched again so that eval, which reads every record it is given,
// counts the same ones. A record that does not decode is the first error of its namespace, never skipped (bad
// maps namespace to it), unless its labels decode and sel does not match them: a wrong-typed label, say, is
// taken as Metacontroller's match, so the record is named rather than dropped. A record the request lists under
// two keys (one namespace/name) is read once, from its first key.
func DecodeRecords(related metacontroller.ObjectMap, member func(string) bool,
	sel labels.Selector) (rs []Record, bad map[string]error) {
	bad = map[string]error{}
	seen := map[string]bool{}
	objs := related[TaskRecordGroup]
	for _, key := range slices.Sorted(maps.Keys(objs)) {
		r, err := DecodeRecord(key, objs[key])
		ns := r.Namespace
		if r.Name == "" {
			ns, _, _ = strings.Cut(key, "/")
		}
		id := ns + "/" + r.Name
		switch {
		case !member(ns), r.Name != "" && seen[id]:
		case err != nil:
			if labelsMatch(objs[key], sel) && bad[ns] == nil {
				bad[ns] = err
			}
		case sel.Matches(labels.Set(r.Labels)):
			rs = append(rs, r)
		}
		seen[id] = seen[id] || r.Name != ""
	}
	return rs, bad
}

// labelsMatch reports whether sel matches a record's labels, or they do not decode, so that it cannot tell.
func labelsMatch(raw []byte, sel labels.Selector) bool {
	var j struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	return decode.Lenient(raw, &j, "") != nil || sel.Matches(labels.Set(j.Metadata.Labels))
}

// RecordsRead words what a sum of records is: the period's records summed (where: " over 3 namespaces", or ""),
// and those that count nothing.
func RecordsRead(s RecordSum, sel labels.Selector, where string) string {
	which := "every TaskRecord"
	if !sel.Empty() {
		which = "the TaskRecords labelled " + sel.String()
	}
	msg := fmt.Sprintf("spend summed%s from %d of %s, those completed in the period", where, s.Counted, which)
	if s.Outside > 0 {
		msg += fmt.Sprintf("; %d completed outside it", s.Outside)
	}
	var none []string
	if s.NoUsage > 0 {
		none = append(none, fmt.Sprintf("%d without spec.usage", s.NoUsage))
	}
	if s.Incomplete > 0 {
		none = append(none, fmt.Sprintf("%d without spec.completionTime", s.Incomplete))
	}
	if len(none) > 0 {
		msg += "; " + strings.Join(none, " and ") + " count nothing, as in Kelos"
	}
	return msg
}

// readRecords sums the budget's TaskRecords completed in w.
func readRecords(b api.LLMCostBudget, related metacontroller.ObjectMap, w period.Window) spend.Reading {
	ns, sel := b.Metadata.Namespace, Selector(b.Spec.CostSource.Selector.Meta())
	rs, bad := DecodeRecords(related, func(n string) bool { return n == ns }, sel)
	if err := bad[ns]; err != nil {
		return spend.Reading{Reason: api.ReasonInvalidCostData, Message: err.Error()}
	}
	sum, err := SumRecords(rs, w)
	if err != nil {
		return spend.Reading{Reason: api.ReasonInvalidCostData, Message: err.Error()}
	}
	return spend.Reading{Usage: sum.Usage, Message: RecordsRead(sum, sel, "")}
}
