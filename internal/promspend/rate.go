package promspend

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
)

// Sample is the measure of a rate plan's last query: the time of the latest sample of the counters it asks for.
const Sample Measure = "sample"

// DefaultRateWindow is how far back the burn rate looks: four scrapes at 15 s, long enough to smooth one late
// scrape, short enough that a burn that starts or stops shows within a writer cycle or two.
const DefaultRateWindow = time.Minute

// RatePlan is the plan of the burn rate to write beside p's figures: the growth in the window w before them (from
// the period's start at the latest), and when the latest sample they count was taken. ok is false when w is not
// a positive whole number of steps, or the period has only just begun.
func (p Plan) RatePlan(w time.Duration) (Plan, bool) {
	if w <= 0 || w%p.step != 0 || p.end.IsZero() {
		return Plan{}, false
	}
	start := p.end.Add(-w)
	if start.Before(p.periodStart) {
		start = p.periodStart
	}
	if !p.end.After(start) {
		return Plan{}, false
	}
	rp := Plan{source: p.source, now: p.now, step: p.step, periodStart: p.periodStart, end: p.end}
	rp.Windows = []Window{{Key: "rate", Start: start, End: p.end, Open: true}}
	rp.Queries = rp.asking(nil, 0, rp.Windows[0], false)
	rp.Queries = append(rp.Queries, Query{Measure: Sample, PromQL: latestSample(p.source, p.end)})
	return rp, true
}

// latestSample is the PromQL for when the latest sample of the source's counters up to end was taken: the
// figures' growth ends there, so a projection runs from it.
func latestSample(src Source, end time.Time) string {
	at := end.UnixMilli()
	var sels []string
	for _, m := range []Measure{Cost, Input, Output} {
		for _, sel := range src.Series[m] {
			sels = append(sels, fmt.Sprintf("timestamp(%s @ %d.%03d)", sel, at/1000, at%1000))
		}
	}
	return fmt.Sprintf("max(%s)", strings.Join(sels, " or "))
}

// BurnRate is the rate that the answers to the queries of p, a rate plan, say for the figures of p's instant, with
// the rate of each of models (those the budget limits in USD). A window without series burned nothing; nil when
// no counter has a sample to run a projection from.
func (p Plan) BurnRate(answers []model.Vector, prices *Prices, models []string) (*api.BurnRate, error) {
	if len(answers) != len(p.Queries) || len(p.Windows) != 1 {
		return nil, fmt.Errorf("%d answers for %d queries of a rate plan", len(answers), len(p.Queries))
	}
	last := answers[len(answers)-1]
	if len(last) == 0 {
		return nil, nil
	}
	sampled := float64(last[0].Value)
	if math.IsNaN(sampled) || sampled <= 0 || sampled > float64(p.end.Unix()) {
		return nil, fmt.Errorf("the latest sample's time %v is not a time up to %s", sampled, p.end.Format(time.RFC3339))
	}
	counters := p
	counters.Queries = p.Queries[:len(p.Queries)-1]
	growth := counters.growthByModel(answers[:len(answers)-1])
	u := Usage{CostUSD: "0"}
	if len(growth) > 0 && growth[0] != nil {
		var err error
		if u, err = p.window(growth[0], prices); err != nil {
			return nil, fmt.Errorf("burn rate: %w", err)
		}
	}
	w := p.Windows[0]
	br := &api.BurnRate{
		AsOf:      p.now.UTC().Truncate(time.Second).Format(time.RFC3339),
		SampledAt: time.UnixMilli(int64(math.Round(sampled * 1000))).UTC().Format(time.RFC3339Nano),
		Window:    w.End.Sub(w.Start).String(),
	}
	var err error
	if br.USDPerHour, err = perHour(u.CostUSD, w.End.Sub(w.Start)); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(slices.Values(models)) {
		cost := "0"
		if mu, ok := u.Models[name]; ok {
			cost = mu.CostUSD
		}
		if br.Models == nil {
			br.Models = map[string]string{}
		}
		if br.Models[name], err = perHour(cost, w.End.Sub(w.Start)); err != nil {
			return nil, err
		}
	}
	return br, nil
}

// perHour is cost over d, in USD per hour to the nano-dollar.
func perHour(cost string, d time.Duration) (string, error) {
	c, err := money.Parse(cost)
	if err != nil {
		return "", fmt.Errorf("burn rate: cost %w", err)
	}
	if d < time.Millisecond {
		return "", errors.New("burn rate: window shorter than a millisecond")
	}
	return c.MulDiv(int64(time.Hour/time.Millisecond), d.Milliseconds()).String(), nil
}
