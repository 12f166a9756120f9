// Package promspend turns Prometheus counters of LLM usage (LiteLLM, vLLM, OTel GenAI, custom) into spend
// ConfigMap data. It is pure: it writes a budget's current-period PromQL and turns the answers into values.
//
// Guarantees:
//   - The period is the one the hooks evaluate: same period code, same zone.
//   - A query measures a counter's true growth in (start, end], not increase()'s extrapolation: it sums the
//     change between evaluation steps, counting a reset or new series as growth from zero. With a step at most
//     the scrape interval every sample is seen: the sum is exact up to float64 rounding, and a series silent up
//     to an hour (failed scrapes) is not recounted.
//   - A finished ledger day is evaluated at its end with the @ modifier: its value never changes between runs.
//   - Only Data rounds float64 to decimal: cost to 1e-6 USD, tokens to integers, priced cost half up to 1e-9 USD.
//   - Nothing is silently free: a model without a price is an error, as is a current-period query finding no
//     series. Only a finished ledger day with no series (past retention) is left out, keeping its earlier value.
package promspend

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
)

// Measure is one of the counters a source has.
type Measure string

// The measures, in the order their queries run.
const (
	Cost   Measure = "cost"
	Input  Measure = "input"
	Output Measure = "output"
)

// Source is, per measure, the series selectors of its counter (no Cost is priced from tokens) and the label naming
// the model. A measure with several selectors is one counter under the names of several exporter releases, the
// newest first: for each model, process (labels job and instance) and evaluation step, the first name that has
// series is counted and the others are not, so an exporter emitting both generations is counted once, and one
// upgraded in the period is counted under its old name before and its new name after.
type Source struct {
	Series     map[Measure][]string
	ModelLabel string
}

// Selection picks the budget's series: each set field adds a label matcher, Match raw ones such as `env="prod"`.
type Selection struct {
	Team, Key, Namespace, Service string
	PodLabels                     []string // "label=value"
	Match                         []string
}

// Preset returns the source of a known exporter: litellm, vllm or otel-genai. Metric and label names are the
// exporters' own, as Prometheus stores them, each generation of names there has been:
//   - litellm: the proxy's Prometheus callback. Spend is litellm_spend_metric_total in every release; the token
//     counters are litellm_input_tokens_metric_total and litellm_output_tokens_metric_total since LiteLLM appended
//     _metric to their names (BerriAI/litellm#13271), litellm_input_tokens_total and litellm_output_tokens_total
//     before.
//   - vllm: vLLM's /metrics, one generation.
//   - otel-genai: the OpenTelemetry GenAI counters gen_ai.client.inference.usage.input_tokens and .output_tokens,
//     which replaced the histogram gen_ai.client.token.usage (its sum by gen_ai.token.type, read where they are not).
//     Prometheus' OTLP translation (the default UnderscoreEscapingWithSuffixes) turns dots into underscores, drops
//     the {token} unit (an annotation in braces) and appends _total to a monotonic sum:
//     gen_ai_client_inference_usage_input_tokens_total; the histogram's sum is gen_ai_client_token_usage_sum.
func Preset(name string, sel Selection) (Source, error) {
	var m []string
	add := func(label, value string) {
		if value != "" {
			m = append(m, label+"="+strconv.Quote(value))
		}
	}
	for _, pl := range sel.PodLabels {
		k, v, ok := strings.Cut(pl, "=")
		if !ok || !model.UTF8Validation.IsValidLabelName(k) {
			return Source{}, fmt.Errorf("--pod-label %q: want label=value with a Prometheus label name", pl)
		}
		add(k, v)
	}
	add("namespace", sel.Namespace)
	add("team", sel.Team)
	add("hashed_api_key", sel.Key)
	add("job", sel.Service)
	m = append(m, sel.Match...)
	series := func(metric string, extra ...string) string {
		return metric + "{" + strings.Join(append(extra, m...), ",") + "}"
	}
	switch name {
	case "litellm":
		return Source{ModelLabel: "model", Series: map[Measure][]string{
			Cost:   {series("litellm_spend_metric_total")},
			Input:  {series("litellm_input_tokens_metric_total"), series("litellm_input_tokens_total")},
			Output: {series("litellm_output_tokens_metric_total"), series("litellm_output_tokens_total")},
		}}, nil
	case "vllm":
		return Source{ModelLabel: "model_name", Series: map[Measure][]string{
			Input:  {series("vllm:prompt_tokens_total")},
			Output: {series("vllm:generation_tokens_total")},
		}}, nil
	case "otel-genai":
		return Source{ModelLabel: "gen_ai_request_model", Series: map[Measure][]string{
			Input: {series("gen_ai_client_inference_usage_input_tokens_total"),
				series("gen_ai_client_token_usage_sum", `gen_ai_token_type="input"`)},
			Output: {series("gen_ai_client_inference_usage_output_tokens_total"),
				series("gen_ai_client_token_usage_sum", `gen_ai_token_type="output"`)},
		}}, nil
	}
	return Source{}, fmt.Errorf("source %q is not one of litellm, vllm, otel-genai", name)
}

// TokensOnly reports whether the source has no cost counter, so that its tokens are priced from a table.
func (s Source) TokensOnly() bool { return len(s.Series[Cost]) == 0 }

// Window is the spend of one ConfigMap key: the growth in (Start, End].
type Window struct {
	Key        string
	Start, End time.Time
	Open       bool // End is now rather than the end of a ledger day
}

// Query is one PromQL query of a plan: Measure's growth in Window.
type Query struct {
	Window  int // index in Plan.Windows
	Measure Measure
	PromQL  string
}

// Plan is what to ask Prometheus for one budget at one instant.
type Plan struct {
	Windows []Window
	Queries []Query
	source  Source
	now     time.Time
	total   *period.Window // the period a Total key covers
}

// NewPlan plans the queries for spec's current period at now, stepping by step (at most the scrape interval; it
// must divide the period's boundaries, as any divisor of 15 minutes does). Total has one window, the period so
// far; DailyLedger one per local day of the period up to today, plus the day before, so the previous period's
// last minutes get written. A finished day ends at its end, the open one at now rounded down to a step.
func NewPlan(spec api.Spec, now time.Time, src Source, step time.Duration) (Plan, error) {
	spec.Default()
	if err := spec.Validate().ToAggregate(); err != nil {
		return Plan{}, err
	}
	if step < 10*time.Millisecond || step%time.Millisecond != 0 {
		return Plan{}, fmt.Errorf("step %s must be a whole number of milliseconds, at least 10ms", step)
	}
	if !model.UTF8Validation.IsValidLabelName(src.ModelLabel) {
		return Plan{}, fmt.Errorf("model label %q is not a Prometheus label name", src.ModelLabel)
	}
	ps := spec.PeriodSpec()
	cur := ps.Containing(now)
	end := time.UnixMilli(now.UnixMilli() - now.UnixMilli()%step.Milliseconds()).In(ps.Location)
	p := Plan{source: src, now: now}
	if spec.CostSource.Format == api.Total {
		p.total = &cur
		p.Windows = []Window{{Key: spec.CostSource.Key, Start: cur.Start, End: end, Open: true}}
	} else {
		days := period.Spec{Kind: period.Daily, Location: ps.Location}
		for d := days.Containing(cur.Start.Add(-time.Nanosecond)); !d.Start.After(now); d = days.Containing(d.End) {
			w := Window{Key: spec.CostSource.KeyPrefix + d.Start.Format(time.DateOnly), Start: d.Start, End: d.End}
			if d.End.After(end) {
				w.End, w.Open = end, true
			}
			p.Windows = append(p.Windows, w)
		}
	}
	for i, w := range p.Windows {
		if !w.End.After(w.Start) {
			continue // nothing happened yet; the value is zero
		}
		for _, t := range []time.Time{w.Start, w.End} {
			if t.UnixMilli()%step.Milliseconds() != 0 {
				return Plan{}, fmt.Errorf("%s (key %q) is not a multiple of the step %s; use a step that divides 15m",
					t.Format(time.RFC3339), w.Key, step)
			}
		}
		for _, m := range []Measure{Cost, Input, Output} {
			if sels := src.Series[m]; len(sels) > 0 {
				p.Queries = append(p.Queries, Query{Window: i, Measure: m, PromQL: growth(sels, src.ModelLabel, w, step)})
			}
		}
	}
	return p, nil
}

// growth is the PromQL for the growth in w of the counter sels name, by model. At each step t (a multiple of step
// in (Start, End]) it takes every series' change since t-step, or, for a new or reset series, its whole value; the
// subquery sums the steps. The changes telescope: last - first plus each pre-reset value. last_over_time bridges
// gaps of up to an hour (failed scrapes, restarts) where a plain selector's staleness marker would make it look new.
// The subquery ends 1ms short of w so its first step is Start+step whether Prometheus treats its left edge as open
// or closed. With several names, each step sums each name's changes by model, job and instance, and `or` keeps, for
// each such group, the first name's (`or` adds the right side's groups whose labels none on its left has).
func growth(sels []string, label string, w Window, step time.Duration) string {
	change := func(sel string) string {
		cur := fmt.Sprintf("last_over_time(%s[1h])", sel)
		prev := fmt.Sprintf("last_over_time(%s[1h] offset %s)", sel, model.Duration(step))
		return fmt.Sprintf("(%s - %s) >= 0 or %s", cur, prev, cur)
	}
	expr := change(sels[0])
	if len(sels) > 1 {
		names := make([]string, len(sels))
		for i, sel := range sels {
			names[i] = fmt.Sprintf("sum by (%s, job, instance) (%s)", label, change(sel))
		}
		expr = strings.Join(names, " or ")
	}
	at := w.End.UnixMilli()
	return fmt.Sprintf("sum_over_time((sum by (%s) (%s))[%s:%s] @ %d.%03d)",
		label, expr, model.Duration(w.End.Sub(w.Start)-time.Millisecond), model.Duration(step), at/1000, at%1000)
}

// Annotations are the spend ConfigMap's annotations for the plan's figures: api.AnnotationSpendAsOf, the plan's
// instant in UTC to the second, and for Total api.AnnotationPeriodStart, the start of the period its key covers
// in the budget's zone, as status.period.start says it.
func (p Plan) Annotations() map[string]string {
	a := map[string]string{api.AnnotationSpendAsOf: p.now.UTC().Truncate(time.Second).Format(time.RFC3339)}
	if p.total != nil {
		a[api.AnnotationPeriodStart] = p.total.Start.Format(time.RFC3339)
	}
	return a
}

// ErrEmpty is wrapped by Data's error for a query that found no series.
var ErrEmpty = errors.New("no series matched")

// Usage is a window's or a model's figures, in the JSON form package spend reads.
type Usage struct {
	CostUSD      string           `json:"costUSD"`
	InputTokens  int64            `json:"inputTokens"`
	OutputTokens int64            `json:"outputTokens"`
	Models       map[string]Usage `json:"models,omitempty"`
}

// Data turns the answers to p.Queries (answers[i] answers p.Queries[i]) into ConfigMap data: a key per window,
// except finished days without any series. prices cost a token-only source's tokens and may otherwise be nil.
func (p Plan) Data(answers []model.Vector, prices *Prices) (map[string]string, error) {
	figures, err := p.Figures(answers, prices)
	if err != nil {
		return nil, err
	}
	return Encode(figures), nil
}

// Encode is figures as ConfigMap data: each key's Usage in JSON.
func Encode(figures map[string]Usage) map[string]string {
	data := make(map[string]string, len(figures))
	for key, u := range figures {
		js, _ := json.Marshal(u) // strings and integers: it cannot fail
		data[key] = string(js)
	}
	return data
}

// Figures is Data before encoding: each key's Usage.
func (p Plan) Figures(answers []model.Vector, prices *Prices) (map[string]Usage, error) {
	if len(answers) != len(p.Queries) {
		return nil, fmt.Errorf("%d answers for %d queries", len(answers), len(p.Queries))
	}
	if p.source.TokensOnly() && prices == nil {
		return nil, errors.New("this source counts tokens only: a price table is required")
	}
	// byModel[window][measure][model] is the growth; "" is series without a model label.
	byModel := make([]map[Measure]map[string]float64, len(p.Windows))
	empty := make([]int, len(p.Windows)) // how many of the window's queries found no series
	for i, q := range p.Queries {
		if byModel[q.Window] == nil {
			byModel[q.Window] = map[Measure]map[string]float64{}
		}
		vals := map[string]float64{}
		for _, s := range answers[i] {
			vals[string(s.Metric[model.LabelName(p.source.ModelLabel)])] += float64(s.Value)
		}
		byModel[q.Window][q.Measure] = vals
		if len(vals) == 0 {
			empty[q.Window]++
		}
	}
	// Only a finished day may find no series, and then for all its queries.
	for i, q := range p.Queries {
		w := p.Windows[q.Window]
		if len(answers[i]) == 0 && (w.Open || empty[q.Window] < len(byModel[q.Window])) {
			return nil, fmt.Errorf("key %q, %s: %w: %s", w.Key, q.Measure, ErrEmpty, q.PromQL)
		}
	}
	figures := make(map[string]Usage, len(p.Windows))
	for i, w := range p.Windows {
		if empty[i] > 0 {
			continue
		}
		u, err := p.window(byModel[i], prices)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", w.Key, err)
		}
		figures[w.Key] = u
	}
	return figures, nil
}

// window sums one window's models; the total is the exact sum of the rounded per-model figures, so they add up.
func (p Plan) window(vals map[Measure]map[string]float64, prices *Prices) (Usage, error) {
	names := map[string]bool{}
	for _, m := range vals {
		for name := range m {
			names[name] = true
		}
	}
	total := Usage{Models: map[string]Usage{}} // omitempty leaves out an empty breakdown
	var missing []string
	var sum money.Amount
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if name != "" && !api.ValidModelName(name) {
			return Usage{}, fmt.Errorf("model %q is not a valid model name", name)
		}
		in, inErr := tokens("input", vals[Input][name])
		out, outErr := tokens("output", vals[Output][name])
		var cost money.Amount
		var costErr error
		if !p.source.TokensOnly() {
			cost, costErr = dollars(vals[Cost][name])
		} else if c, ok := prices.cost(name, in, out); ok {
			cost = c
		} else {
			missing = append(missing, strconv.Quote(name))
		}
		if err := cmp.Or(inErr, outErr, costErr); err != nil {
			return Usage{}, fmt.Errorf("model %q: %w", name, err)
		}
		sum = sum.Add(cost)
		total.InputTokens += in
		total.OutputTokens += out
		if name != "" {
			total.Models[name] = Usage{CostUSD: cost.String(), InputTokens: in, OutputTokens: out}
		}
	}
	if len(missing) > 0 {
		return Usage{}, fmt.Errorf("no price for model %s and no default price", strings.Join(missing, ", "))
	}
	total.CostUSD = sum.String()
	return total, nil
}

// tokens refuses counts past 2^53, beyond which a float64 skips whole numbers.
func tokens(direction string, v float64) (int64, error) {
	if math.IsNaN(v) || v < 0 || v > 1<<53 {
		return 0, fmt.Errorf("%s tokens: %v is not a token count between 0 and 2^53", direction, v)
	}
	return int64(math.Round(v)), nil
}

func dollars(v float64) (money.Amount, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return money.Amount{}, fmt.Errorf("cost: %v is not a non-negative amount", v)
	}
	// 1e-6 USD: float64 sums of per-request costs carry noise far below it.
	return money.Parse(strconv.FormatFloat(v, 'f', 6, 64))
}

// Price is what a million tokens of a model cost, in USD.
type Price struct{ Input, Output money.Amount }

// Prices is a price table: per model, and optionally a default for the rest.
type Prices struct {
	Models  map[string]Price
	Default *Price
}

// decimal is a price as written: quoted or not, YAML keeps its literal text, so 0.000000001 reads exactly.
type decimal struct{ money.Amount }

func (d *decimal) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode { // a null never gets here: the field stays nil
		return fmt.Errorf("line %d: want a decimal price", n.Line)
	}
	var err error
	if d.Amount, err = money.Parse(n.Value); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

type priceYAML struct {
	Input  *decimal `yaml:"input"`
	Output *decimal `yaml:"output"`
}

// ParsePrices reads a price table in YAML (or JSON):
//
//	# USD per million tokens, at most 9 decimals
//	models:
//	  gpt-4o: {input: "2.50", output: "10.00"}
//	default: {input: "1", output: "4"}   # optional
//
// Unknown fields, a missing direction and a second YAML document are errors, worded without Go's type names.
func ParsePrices(doc []byte) (*Prices, error) {
	var raw struct {
		Models  map[string]priceYAML `yaml:"models"`
		Default *priceYAML           `yaml:"default"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return nil, tableError(err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, errors.New("price table: a second YAML document: a table is one document")
	}
	p := &Prices{Models: make(map[string]Price, len(raw.Models))}
	var err error
	for name, py := range raw.Models {
		if !api.ValidModelName(name) {
			return nil, fmt.Errorf("price table: %q is not a valid model name", name)
		}
		if p.Models[name], err = py.price(); err != nil {
			return nil, fmt.Errorf("price table: models.%s: %w", name, err)
		}
	}
	if raw.Default != nil {
		p.Default = new(Price)
		if *p.Default, err = raw.Default.price(); err != nil {
			return nil, fmt.Errorf("price table: default: %w", err)
		}
	}
	return p, nil
}

// The yaml.v3 messages that name Go types: "field x not found in type struct { Models ... }" and
// "cannot unmarshal !!str `x` into map[string]promspend.priceYAML".
var (
	unknownField = regexp.MustCompile(`(?s)field (.*) not found in type .*`)
	notMapping   = regexp.MustCompile("(?s)cannot unmarshal (\\S+)( `.*`)? into .*")
)

// tableError words a price table's decoding error as the table's fields, not as Go's types.
func tableError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("price table: %w", err)
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		m = unknownField.ReplaceAllString(m, "unknown field $1: a price table has models and default, "+
			"a price input and output")
		msgs[i] = notMapping.ReplaceAllString(m, "a mapping is expected, got $1$2")
	}
	return fmt.Errorf("price table: %s", strings.Join(msgs, "; "))
}

func (py priceYAML) price() (Price, error) {
	switch {
	case py.Input == nil:
		return Price{}, errors.New("input is missing")
	case py.Output == nil:
		return Price{}, errors.New("output is missing")
	}
	return Price{Input: py.Input.Amount, Output: py.Output.Amount}, nil
}

// cost prices model name's in and out tokens, each rounded half up to 1e-9 USD, and reports whether it has a price.
func (p *Prices) cost(name string, in, out int64) (money.Amount, bool) {
	price, ok := p.Models[name]
	if !ok && p.Default != nil {
		price, ok = *p.Default, true
	}
	// Twice the exact product of USD per million tokens in half-nanos, truncated, then halved with the half added.
	halfUp := func(perMillion money.Amount, tokens int64) money.Amount {
		return perMillion.MulDiv(tokens, 1_000_000/2).Add(money.FromNanos(1)).MulDiv(1, 2)
	}
	return halfUp(price.Input, in).Add(halfUp(price.Output, out)), ok
}

// FromSpec returns the source a budget's spec.costSource.prometheus declares: its preset narrowed by its
// selector, or its own series. The stanza is assumed valid (api.Spec.Validate).
func FromSpec(p *api.PrometheusSource) (Source, error) {
	if p.Series != nil {
		src := Source{ModelLabel: cmp.Or(p.Series.ModelLabel, "model"), Series: map[Measure][]string{}}
		for m, sel := range map[Measure]string{Cost: p.Series.Cost, Input: p.Series.Input, Output: p.Series.Output} {
			if sel != "" {
				src.Series[m] = []string{sel}
			}
		}
		return src, nil
	}
	var sel Selection
	if s := p.Selector; s != nil {
		sel = Selection{Team: s.Team, Key: s.Key, Namespace: s.Namespace, Service: s.Service, Match: s.Match}
		for _, k := range slices.Sorted(maps.Keys(s.PodLabels)) {
			sel.PodLabels = append(sel.PodLabels, k+"="+s.PodLabels[k])
		}
	}
	return Preset(string(p.Source), sel)
}
