// Package promspend turns Prometheus counters of LLM usage (LiteLLM, vLLM,
// OpenTelemetry GenAI, or any counters named by the user) into the data of a
// budget's spend ConfigMap. It is pure: it writes the PromQL a budget's
// current period needs and turns the answers into ConfigMap values; the
// caller runs the queries.
//
// Guarantees:
//   - The period is the one the hooks evaluate: same period code, same zone.
//   - A query measures a counter's true growth in (start, end], not
//     increase()'s extrapolation: it sums the change between evaluation
//     steps, counting a reset's or a new series' value as growth from zero.
//     With a step no longer than the scrape interval every sample is seen,
//     so the sum is exact up to float64 rounding; a series silent for up to
//     an hour (a failed scrape) is not counted again.
//   - A finished ledger day is evaluated at its end with the @ modifier, so
//     its value never changes from one run to the next.
//   - Float64 becomes decimal only in Data: cost is rounded to 1e-6 USD,
//     tokens to whole numbers; priced cost is rounded half up to 1e-9 USD.
//   - Nothing is silently free: a model without a price is an error, and so
//     is a query of the current period that finds no series. Only a finished
//     ledger day without any series (past Prometheus's retention) is left
//     out, so that the value written earlier stays.
package promspend

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
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

// gap is how long a series may go without samples (failed scrapes, a
// restarting target) and still be recognised with its old value rather than
// counted again from zero.
const gap = time.Hour

// Source names the counters to read: a series selector per measure (Cost may
// be empty: cost is then priced from tokens) and the label naming the model.
type Source struct {
	Series     map[Measure]string
	ModelLabel string
}

// Selection says which series of a preset belong to the budget: each field
// set adds one label matcher (an empty one adds none); Match holds extra raw
// matchers such as `env="prod"`.
type Selection struct {
	Team, Key, Namespace, Service string
	PodLabels                     []string // "label=value"
	Match                         []string
}

// Preset returns the source of a known exporter: litellm, vllm or otel-genai.
// Metric and label names are the exporters' own: LiteLLM's proxy Prometheus
// callback, vLLM's /metrics, and the OpenTelemetry GenAI histogram
// gen_ai.client.token.usage as Prometheus stores it (dots become
// underscores, the {token} unit is dropped).
func Preset(name string, sel Selection) (Source, error) {
	var m []string
	add := func(label, value string) {
		if value != "" {
			m = append(m, label+"="+strconv.Quote(value))
		}
	}
	for _, pl := range sel.PodLabels {
		k, v, ok := strings.Cut(pl, "=")
		if !ok || !model.LabelName(k).IsValid() {
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
		return Source{ModelLabel: "model", Series: map[Measure]string{
			Cost:   series("litellm_spend_metric_total"),
			Input:  series("litellm_input_tokens_metric_total"),
			Output: series("litellm_output_tokens_metric_total"),
		}}, nil
	case "vllm":
		return Source{ModelLabel: "model_name", Series: map[Measure]string{
			Input:  series("vllm:prompt_tokens_total"),
			Output: series("vllm:generation_tokens_total"),
		}}, nil
	case "otel-genai":
		return Source{ModelLabel: "gen_ai_request_model", Series: map[Measure]string{
			Input:  series("gen_ai_client_token_usage_sum", `gen_ai_token_type="input"`),
			Output: series("gen_ai_client_token_usage_sum", `gen_ai_token_type="output"`),
		}}, nil
	}
	return Source{}, fmt.Errorf("source %q is not one of litellm, vllm, otel-genai", name)
}

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
}

// NewPlan plans the queries for spec's current period at now, with
// evaluation steps of step (at most the scrape interval; it must divide the
// period's boundaries, which any divisor of 15 minutes does).
//
// Total has one window, the period so far. DailyLedger has one per local
// day of the period up to today, and the day before the period, so that the
// last minutes of the previous period are written too. A finished day ends
// at its end; the open one at now, rounded down to a step.
func NewPlan(spec api.Spec, now time.Time, src Source, step time.Duration) (Plan, error) {
	spec.Default()
	if err := spec.Validate(); err != nil {
		return Plan{}, err
	}
	if step < 10*time.Millisecond || step%time.Millisecond != 0 {
		return Plan{}, fmt.Errorf("step %s must be a whole number of milliseconds, at least 10ms", step)
	}
	if !model.LabelName(src.ModelLabel).IsValid() {
		return Plan{}, fmt.Errorf("model label %q is not a Prometheus label name", src.ModelLabel)
	}
	ps := spec.PeriodSpec()
	cur := ps.Containing(now)
	end := time.UnixMilli(now.UnixMilli() - now.UnixMilli()%step.Milliseconds()).In(ps.Location)
	var wins []Window
	if spec.CostSource.Format == api.Total {
		wins = []Window{{Key: spec.CostSource.Key, Start: cur.Start, End: end, Open: true}}
	} else {
		days := period.Spec{Kind: period.Daily, Location: ps.Location}
		for d := days.Containing(cur.Start.Add(-time.Nanosecond)); !d.Start.After(now); d = days.Containing(d.End) {
			w := Window{Key: spec.CostSource.KeyPrefix + d.Start.Format(time.DateOnly), Start: d.Start, End: d.End}
			if d.End.After(end) {
				w.End, w.Open = end, true
			}
			wins = append(wins, w)
		}
	}
	p := Plan{Windows: wins, source: src}
	for i, w := range wins {
		if !w.End.After(w.Start) {
			continue // nothing happened yet; the value is zero
		}
		for _, t := range []time.Time{w.Start, w.End} {
			if t.UnixMilli()%step.Milliseconds() != 0 {
				return Plan{}, fmt.Errorf("%s (key %q) is not a multiple of the step %s; use a step that divides 15m", t.Format(time.RFC3339), w.Key, step)
			}
		}
		for _, m := range []Measure{Cost, Input, Output} {
			if sel := src.Series[m]; sel != "" {
				p.Queries = append(p.Queries, Query{Window: i, Measure: m, PromQL: growth(sel, src.ModelLabel, w, step)})
			}
		}
	}
	return p, nil
}

// growth is the PromQL for the growth of the counters sel in w, by model.
//
// At each step t (a multiple of step in (Start, End]) it takes every
// series' change since t-step, or, where the series is new or was reset,
// its whole value; the subquery sums the steps. The changes telescope to
// last - first, plus the value reached before each reset. last_over_time
// bridges gaps of up to gap, which a plain selector would not: after a
// failed scrape its staleness marker would make the series look new.
// The subquery range ends 1ms short of the window so that its first step is
// Start+step whether the Prometheus version treats the range's left edge as
// open or closed.
func growth(sel, label string, w Window, step time.Duration) string {
	cur := fmt.Sprintf("last_over_time(%s[%s])", sel, model.Duration(gap))
	prev := fmt.Sprintf("last_over_time(%s[%s] offset %s)", sel, model.Duration(gap), model.Duration(step))
	at := w.End.UnixMilli()
	return fmt.Sprintf("sum_over_time((sum by (%s) ((%s - %s) >= 0 or %s))[%s:%s] @ %d.%03d)",
		label, cur, prev, cur, model.Duration(w.End.Sub(w.Start)-time.Millisecond), model.Duration(step), at/1000, at%1000)
}

// ErrEmpty is returned by Data when a query of an open window found no
// series: a selector that matches nothing must not read as zero spend.
var ErrEmpty = errors.New("no series matched")
