package promspend

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/period"
)

// Window is the spend of one ConfigMap key: the growth in (Start, End].
type Window struct {
	Key        string
	Start, End time.Time
	Open       bool // End is now rather than the end of a ledger day
}

// Query is one PromQL query of a plan: Measure's growth in Window, or in a part of it (Resume).
type Query struct {
	Window  int // index in Plan.Windows
	Measure Measure
	PromQL  string
	Settled bool // the part of a resumed plan's window up to its mark, which Next checkpoints
}

// Plan is what to ask Prometheus for one budget at one instant.
type Plan struct {
	Windows []Window
	Queries []Query
	source  Source
	now     time.Time
	step    time.Duration
	total   *period.Window // the period a Total key covers
	mark    time.Time      // where Resume split the Total window; zero if it did not
	resumed *Checkpoint    // what Resume went on from
	// periodStart is the start of the current period, and end where its figures end: now rounded down to a step.
	periodStart, end time.Time
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
	p := Plan{source: src, now: now, step: step, periodStart: cur.Start, end: end}
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
		p.Queries = p.asking(p.Queries, i, w, false)
	}
	return p, nil
}

// asking is queries with those of w (window i of the plan, or a part of it), one per measure the source counts.
func (p Plan) asking(queries []Query, i int, w Window, settled bool) []Query {
	for _, m := range []Measure{Cost, Input, Output} {
		if sels := p.source.Series[m]; len(sels) > 0 {
			queries = append(queries, Query{Window: i, Measure: m, Settled: settled,
				PromQL: growth(sels, p.source.ModelLabel, w, p.step)})
		}
	}
	return queries
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

// Now is the instant the plan is for.
func (p Plan) Now() time.Time { return p.now }

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
