// Package spend reads a budget's observed spend from its spend ConfigMap's data, each value a plain USD decimal
// ("12.34") or a JSON object of cost, token counts and models (see ParseValue), in one of two formats:
//
//   - Total: one key holds the current period's spend; the writer resets it when a period starts.
//   - DailyLedger: each key "<prefix>YYYY-MM-DD" holds one local day's spend; a period's is the sum of its days.
//
// It also reads the stamp a writer puts on the ConfigMap, the time its figures are for (StampOf), and Kelos
// TaskRecords (DecodeRecord), summing those completed in a period (SumRecords) as Kelos does.
//
// Guarantees:
//   - No amount passes through float64: a JSON number's text is parsed, so 12.345678901 is refused, not rounded.
//   - Reading is strict: negative, NaN, Inf, exponents, empty values, whitespace around a decimal, unknown or
//     repeated JSON fields and trailing data are errors that name the key and say what is wrong.
//   - Keys and models are read in sorted order, so the same data always reports the same fault.
//   - Token counts never overflow; sums saturate at math.MaxInt64.
package spend

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
)

// Usage is spend observed over some time: cost, LLM tokens and optionally the same per model.
type Usage struct {
	CostUSD      money.Amount
	InputTokens  int64
	OutputTokens int64
	Models       map[string]Usage // by model name; nil when the data has none, and in a model
}

// TotalTokens is InputTokens + OutputTokens, saturating at math.MaxInt64.
func (u Usage) TotalTokens() int64 { return addSaturating(u.InputTokens, u.OutputTokens) }

// Add returns the sum of u and v; token sums saturate rather than overflow.
func (u Usage) Add(v Usage) Usage {
	sum := Usage{
		CostUSD:      u.CostUSD.Add(v.CostUSD),
		InputTokens:  addSaturating(u.InputTokens, v.InputTokens),
		OutputTokens: addSaturating(u.OutputTokens, v.OutputTokens),
	}
	if len(u.Models)+len(v.Models) > 0 {
		sum.Models = make(map[string]Usage, len(u.Models)+len(v.Models))
		maps.Copy(sum.Models, u.Models)
		for name, m := range v.Models {
			sum.Models[name] = sum.Models[name].Add(m)
		}
	}
	return sum
}

// addSaturating adds token counts, which Read never lets be negative.
func addSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
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

// Read returns the spend in data for the period w; every error names the key at fault. Total reads src.Key.
// DailyLedger sums w.Dates(); every key with the prefix must be a valid date holding a valid value, even outside
// w, lest a broken ledger look like a cheap period. Other keys are ignored; no ledger keys means zero usage.
func Read(src Source, data map[string]string, w period.Window) (Usage, error) {
	if src.Format == api.DailyLedger {
		return readLedger(src.KeyPrefix, data, w)
	}
	value, ok := data[src.Key]
	if !ok {
		return Usage{}, fmt.Errorf("key %s is %w", money.Quote(src.Key), errMissing)
	}
	u, err := ParseValue(value)
	if err != nil {
		return Usage{}, fmt.Errorf("key %s: %w", money.Quote(src.Key), err)
	}
	return u, nil
}

func readLedger(prefix string, data map[string]string, w period.Window) (Usage, error) {
	// Dates() are consecutive days and "YYYY-MM-DD" sorts like the dates it names, so membership is a range check.
	var first, last string
	if dates := w.Dates(); len(dates) > 0 {
		first, last = dates[0], dates[len(dates)-1]
	}
	var sum Usage
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
			err = fmt.Errorf("%s after the prefix is not a date in YYYY-MM-DD form", money.Quote(date))
		case err == nil && inPeriod && sum.CostUSD.Cmp(money.Max.Sub(u.CostUSD)) > 0:
			err = fmt.Errorf("the period's spend passes %s USD, the most an amount holds", money.Max)
		}
		if err != nil {
			return Usage{}, fmt.Errorf("key %s: %w", money.Quote(k), err)
		}
		if inPeriod {
			sum = sum.Add(u)
		}
	}
	return sum, nil
}

// clip shortens inputs too long to read in an error message.
func clip(s string) string {
	if len(s) > clipAt {
		return s[:clipAt] + "..."
	}
	return s
}

const clipAt = 48

// ConfigMap is the part of a spend ConfigMap that is read.
type ConfigMap struct {
	Metadata struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Data map[string]string `json:"data"` // never nil once decoded
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

// notAString says which value is not a string, the first of data, labels and annotations in key order; any
// other error is err.
func notAString(raw []byte, err error) error {
	var loose struct {
		Metadata struct {
			Labels      map[string]json.RawMessage `json:"labels"`
			Annotations map[string]json.RawMessage `json:"annotations"`
		} `json:"metadata"`
		Data map[string]json.RawMessage `json:"data"`
	}
	if decode.Lenient(raw, &loose, "") != nil {
		return err
	}
	for _, field := range []struct {
		what   string
		values map[string]json.RawMessage
	}{{"key", loose.Data}, {"label", loose.Metadata.Labels}, {"annotation", loose.Metadata.Annotations}} {
		for _, k := range slices.Sorted(maps.Keys(field.values)) {
			if v := field.values[k]; v[0] != '"' && string(v) != "null" {
				return fmt.Errorf("%s %s: the value is %s, not a string", field.what, money.Quote(k), describe(v))
			}
		}
	}
	return err
}

// Stamp is what a spend source says of its figures' time, in its annotation api.AnnotationSpendAsOf.
type Stamp struct {
	Source string    // the source, as messages name it: "ConfigMap team-ml/llm-spend"
	AsOf   time.Time // the instant the figures are for; zero when Problem says why there is none
	// Problem is, when AsOf is zero, what is wrong with the stamp, said of Source: "has no ... annotation".
	Problem string
}

// StampOf reads the stamp of the spend source named source from its annotations: an RFC 3339 time, or the
// Problem that it is missing or is not one (quoting the value shortened: the annotation is the writer's, up to
// 256 KiB).
func StampOf(source string, annotations map[string]string) Stamp {
	v, ok := annotations[api.AnnotationSpendAsOf]
	if !ok {
		return Stamp{Source: source, Problem: "has no " + api.AnnotationSpendAsOf + " annotation"}
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return Stamp{Source: source, Problem: fmt.Sprintf("has annotation %s %s, which is not an RFC 3339 time",
			api.AnnotationSpendAsOf, money.Quote(v))}
	}
	return Stamp{Source: source, AsOf: t}
}

// Older is the older of two stamps, s on a tie: a stamp without AsOf is older than any (its figures' age is
// unknown), and the zero Stamp, of no source, is younger than any.
func (s Stamp) Older(t Stamp) Stamp {
	switch {
	case t.Source == "" || s.Source != "" && s.AsOf.IsZero():
		return s
	case s.Source == "" || t.AsOf.IsZero() || t.AsOf.Before(s.AsOf):
		return t
	}
	return s
}

// ParseValue parses one ConfigMap value: a plain USD decimal with at most 9 decimals ("12.34"), or a JSON
// object: costUSD is required (a decimal string or a JSON number), token counts are optional non-negative
// integers (null is absent), and models may break the usage down per model with the same fields but models:
// {"costUSD": "9", "inputTokens": 1200, "outputTokens": 340, "models": {"gpt-4o": {"costUSD": "7"}}}.
//
// The object is decoded strictly, since a person or a pipeline wrote it: unknown and repeated fields are errors
// ("costUsd" is a typo, not a synonym). The plain form allows no surrounding whitespace; the JSON form allows
// JSON's, so a YAML block scalar's final newline is fine.
func ParseValue(s string) (Usage, error) {
	if strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") {
		var v valueJSON
		if err := decode.Strict([]byte(s), &v, ""); err != nil {
			return Usage{}, err
		}
		return v.usage()
	}
	cost, err := money.Parse(s) // the zero Amount on error
	return Usage{CostUSD: cost}, err
}

// usageJSON is a value's or a model's object. Each field reads its literal JSON as the decoder meets it, which
// keeps money out of float64 without copying the value, and keeps its error for usage to report with its name.
type usageJSON struct {
	CostUSD      costField  `json:"costUSD"`
	InputTokens  tokenField `json:"inputTokens"`
	OutputTokens tokenField `json:"outputTokens"`
}

type costField struct {
	amount money.Amount
	set    bool
	err    error
}

func (c *costField) UnmarshalJSON(raw []byte) error {
	c.amount, c.err = parseCost(raw)
	c.set = true
	return nil
}

type tokenField struct {
	n   int64
	err error
}

func (t *tokenField) UnmarshalJSON(raw []byte) error {
	t.n, t.err = parseTokens(raw)
	return nil
}

type valueJSON struct {
	usageJSON
	Models map[string]json.RawMessage `json:"models"`
}

func (v valueJSON) usage() (Usage, error) {
	u, err := v.usageJSON.usage()
	if err != nil || v.Models == nil {
		return u, err
	}
	u.Models = make(map[string]Usage, len(v.Models))
	for _, name := range slices.Sorted(maps.Keys(v.Models)) {
		if !api.ValidModelName(name) {
			return Usage{}, fmt.Errorf("models: %s is not a valid model name (1-%d printable characters, "+
				"no spaces or quotes)", money.Quote(name), api.MaxModelNameLength)
		}
		var m usageJSON
		if err := decode.Strict(v.Models[name], &m, "models."+name); err != nil {
			return Usage{}, err
		}
		if u.Models[name], err = m.usage(); err != nil {
			return Usage{}, fmt.Errorf("models.%s: %w", name, err)
		}
	}
	return u, nil
}

func (j usageJSON) usage() (Usage, error) {
	switch {
	case !j.CostUSD.set:
		return Usage{}, errors.New(`field "costUSD" is missing`)
	case j.CostUSD.err != nil:
		return Usage{}, fmt.Errorf("costUSD: %w", j.CostUSD.err)
	case j.InputTokens.err != nil:
		return Usage{}, fmt.Errorf("inputTokens: %w", j.InputTokens.err)
	case j.OutputTokens.err != nil:
		return Usage{}, fmt.Errorf("outputTokens: %w", j.OutputTokens.err)
	}
	return Usage{CostUSD: j.CostUSD.amount, InputTokens: j.InputTokens.n, OutputTokens: j.OutputTokens.n}, nil
}

func parseCost(raw []byte) (money.Amount, error) {
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return money.Amount{}, err
		}
		return money.Parse(s)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return money.Parse(string(raw))
	}
	return money.Amount{}, fmt.Errorf("%s is not a decimal string or number", describe(raw))
}

// parseTokens reads a count, or null for none.
func parseTokens(raw []byte) (int64, error) {
	text := string(raw)
	switch {
	case text == "null":
		return 0, nil
	case raw[0] == '-':
		return 0, fmt.Errorf("%s is negative", clip(text))
	case raw[0] < '0' || raw[0] > '9':
		return 0, fmt.Errorf("%s is not a number", describe(raw))
	}
	v, err := strconv.ParseInt(text, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%s is too large", clip(text))
	case err != nil:
		return 0, fmt.Errorf("%s is not a whole number", clip(text))
	}
	return v, nil
}

func describe(raw []byte) string {
	switch raw[0] {
	case '"':
		return "string " + clip(string(raw))
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return clip(string(raw))
}
