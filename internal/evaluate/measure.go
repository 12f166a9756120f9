package evaluate

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// periodView is the current period as the status shows it, and what the previous status carries into it.
type periodView struct {
	status  *api.PeriodStatus
	history []api.HistoryEntry
	same    bool // the previous status is of the current period: its crossings carry over
	// carried is the previous status' thresholds: its crossings this period, or (for an invalid spec, whose
	// period is unknown) whatever it recorded.
	carried []api.ThresholdStatus
}

// periodOf moves the previous period into history once a new one has begun. While the spec is invalid the period
// is unknown, and the previous period, thresholds and history stay as they were.
func periodOf(in Input, prev api.Status) periodView {
	if in.Invalid != nil {
		return periodView{status: prev.Period, history: prev.History, carried: prev.Thresholds}
	}
	w := in.Window
	v := periodView{
		status:  &api.PeriodStatus{Start: w.Start.Format(time.RFC3339), End: w.End.Format(time.RFC3339)},
		history: prev.History,
	}
	if prev.Period == nil {
		return v
	}
	prevStart, errStart := time.Parse(time.RFC3339, prev.Period.Start)
	prevEnd, errEnd := time.Parse(time.RFC3339, prev.Period.End)
	switch {
	case errStart != nil || errEnd != nil:
		return v // a status this version did not write: start afresh
	case prevStart.Equal(w.Start):
		v.same, v.carried = true, prev.Thresholds
		return v
	case prevEnd.After(w.Start):
		// The period was redefined (type, zone or start day changed): the old window never finished, so is not history.
		return v
	}
	h := append(slices.Clone(prev.History), api.HistoryEntry{
		Start: prev.Period.Start, End: prev.Period.End, SpentUSD: prev.ObservedSpendUSD, LimitUSD: prev.LimitUSD,
		State: prev.State,
	})
	v.history = h[max(0, len(h)-api.MaxHistory):]
	return v
}

// measurement is where the budget stands against each of its limits.
type measurement struct {
	state                                         api.State
	limitUSD, spentUSD, remainingUSD, forecastUSD string
	percentUsed                                   *int64
	tokens                                        *api.TokenUsage
	thresholds                                    []api.ThresholdStatus
	models                                        []gauged
	// worst is the budget-wide limit used most; driver is the limit that drives the state, which may be a
	// model's.
	worst, driver use
	// forecastPercent is the forecast's percent of the USD limit, when a forecast is shown.
	forecastPercent int64
	// at is when the inputs place what this sync finds new (dated); a forecast's crossing is placed no earlier
	// than the whole hour the forecast is computed at.
	at, forecastAt time.Time
}

// use is how much of one limit is used.
type use struct {
	model       string // whose limit it is: a model's, or the budget's when empty
	what        string // "spend", "input tokens", "output tokens" or "total tokens"
	used, limit string // as the status shows them: USD amounts for spend, counts for tokens
	percent     int64
}

// String names the limit as messages do: "spend", "total tokens", "model gpt-4o spend".
func (u use) String() string {
	if u.model != "" {
		return "model " + u.model + " " + u.what
	}
	return u.what
}

// figures are the limit's own: "612.00 of 500.00 USD", "2110000 of 2000000" (tokens).
func (u use) figures() string {
	if strings.HasSuffix(u.what, "spend") {
		return u.used + " of " + u.limit + " USD"
	}
	return u.used + " of " + u.limit
}

// measure gauges the spend against the budget's USD limit and token limits, then each limited model likewise:
// the budget is as bad as its worst model. Unknown spend leaves the budget Unknown, with its limit shown.
func measure(in Input, v verdict, p periodView, prev api.Status, at time.Time) measurement {
	if v.invalidSpec() {
		return measurement{state: api.Unknown, thresholds: p.carried, at: at}
	}
	spec := in.Budget.Spec
	limit := parseLimit(spec.LimitUSD)
	m := measurement{state: api.Unknown}
	if limit != nil {
		m.limitUSD = limit.String()
	}
	if v.evaluated() {
		m = gaugeBudget(spec, limit, in.Spend.Usage, in.Window, in.Now)
		m.models = gaugeModels(spec, in.Spend.Usage, carriedModels(p, prev), at)
		for _, ms := range m.models {
			if severity[ms.State] > severity[m.state] {
				m.state, m.driver = ms.State, ms.worst
			}
		}
	}
	m.at, m.forecastAt = at, latest(at, forecastAsOf(in.Window, in.Now))
	m.thresholds = crossings(spec.EffectiveThresholds(), p.carried, m.reached, m.dating)
	return m
}

// gaugeBudget measures u against the budget-wide limits, with the forecast of its USD spend.
func gaugeBudget(spec api.Spec, limit *money.Amount, u spend.Usage, w period.Window, now time.Time) measurement {
	g := gauge(*spec.WarnThresholdPercent, limit, spec.TokenLimits, u)
	m := measurement{
		state: g.State, spentUSD: g.ObservedSpendUSD, percentUsed: &g.PercentUsed, tokens: g.Tokens,
		limitUSD: g.LimitUSD, worst: g.worst, driver: g.worst,
	}
	if limit == nil {
		return m
	}
	remaining := limit.Sub(u.CostUSD)
	if remaining.Sign() < 0 {
		remaining = money.Amount{}
	}
	m.remainingUSD = remaining.String()
	if f, ok := forecast(u.CostUSD, w, now); ok {
		m.forecastUSD, m.forecastPercent = f.String(), f.PercentOf(*limit)
	}
	return m
}

// gaugeModels measures each limited model; a model absent from the data has spent nothing.
func gaugeModels(spec api.Spec, u spend.Usage, carried map[string][]api.ThresholdStatus, at time.Time) []gauged {
	var out []gauged
	actual := slices.DeleteFunc(slices.Clone(spec.EffectiveThresholds()), func(t api.Threshold) bool {
		return t.Basis != api.Actual
	})
	for _, ml := range spec.ModelLimits {
		g := gauge(*spec.WarnThresholdPercent, parseLimit(ml.LimitUSD), ml.TokenLimits, u.Models[ml.Model])
		g.Model, g.worst.model = ml.Model, ml.Model
		g.Thresholds = crossings(actual, carried[ml.Model], func(t api.Threshold) bool {
			return g.worst.percent >= int64(t.Percent)
		}, func(api.Threshold) time.Time { return at })
		out = append(out, g)
	}
	return out
}

// carriedModels is each model's crossings in the previous status, when it is of the current period.
func carriedModels(p periodView, prev api.Status) map[string][]api.ThresholdStatus {
	out := map[string][]api.ThresholdStatus{}
	if !p.same {
		return out
	}
	for _, ms := range slices.Backward(prev.Models) { // the first of a repeated model wins
		out[ms.Model] = ms.Thresholds
	}
	return out
}

// severity orders the states a measure gives; any other counts as UnderBudget.
var severity = map[api.State]int{api.Warning: 1, api.OverBudget: 2}

// gauged is a status of u against one set of limits, with the limit used most.
type gauged struct {
	api.ModelStatus
	worst use
}

// gauge measures u against a USD limit (nil for none) and token limits, the budget's or a model's.
func gauge(warn int32, usd *money.Amount, t *api.TokenLimits, u spend.Usage) gauged {
	g := gauged{ModelStatus: api.ModelStatus{State: api.UnderBudget, ObservedSpendUSD: u.CostUSD.String()}}
	consider := func(l use) {
		if l.percent > g.worst.percent {
			g.worst = l
		}
	}
	if usd != nil {
		g.LimitUSD, g.PercentUsed = usd.String(), u.CostUSD.PercentOf(*usd)
		consider(use{what: "spend", used: g.ObservedSpendUSD, limit: g.LimitUSD, percent: g.PercentUsed})
	}
	if t.HasTokenLimit() {
		g.Tokens = &api.TokenUsage{Input: u.InputTokens, Output: u.OutputTokens, Total: u.TotalTokens()}
		for _, l := range []struct {
			what  string
			used  int64
			limit *int64
		}{
			{"input tokens", u.InputTokens, t.Input},
			{"output tokens", u.OutputTokens, t.Output},
			{"total tokens", u.TotalTokens(), t.Total},
		} {
			if l.limit != nil {
				consider(use{what: l.what, used: strconv.FormatInt(l.used, 10), limit: strconv.FormatInt(*l.limit, 10),
					percent: percentOf(l.used, *l.limit)})
			}
		}
	}
	if usd == nil {
		g.PercentUsed = g.worst.percent
	}
	switch {
	case g.worst.percent >= int64(api.OverBudgetThreshold):
		g.State = api.OverBudget
	case g.worst.percent >= int64(warn):
		g.State = api.Warning
	}
	return g
}

// dating is when the inputs place t's crossing.
func (m measurement) dating(t api.Threshold) time.Time {
	if t.Basis == api.Forecasted {
		return m.forecastAt
	}
	return m.at
}

// reached reports whether the measured budget reached t; unknown spend reaches nothing.
func (m measurement) reached(t api.Threshold) bool {
	switch {
	case m.state == api.Unknown:
		return false
	case t.Basis == api.Forecasted:
		return m.forecastUSD != "" && m.forecastPercent >= int64(t.Percent)
	}
	return m.worst.percent >= int64(t.Percent)
}

// crossings lists the thresholds, each with its first crossing this period: the time recorded in carried, or at
// (when dating says the inputs place it) if reached says it is reached.
func crossings(thresholds []api.Threshold, carried []api.ThresholdStatus, reached func(api.Threshold) bool,
	dating func(api.Threshold) time.Time) []api.ThresholdStatus {
	at := make(map[api.Threshold]*metav1.Time, len(carried))
	for _, t := range carried {
		if t.CrossedAt != nil {
			at[api.Threshold{Percent: t.Percent, Basis: t.Basis}] = t.CrossedAt
		}
	}
	out := make([]api.ThresholdStatus, 0, len(thresholds))
	for _, t := range thresholds {
		ts := api.ThresholdStatus{Percent: t.Percent, Basis: t.Basis, CrossedAt: at[t]}
		if ts.CrossedAt == nil && reached(t) {
			ts.CrossedAt = metaTime(dating(t))
		}
		out = append(out, ts)
	}
	return out
}

// parseLimit reads a limit that validation has already parsed, so it cannot fail.
func parseLimit(s *string) *money.Amount {
	if s == nil {
		return nil
	}
	l, _ := money.ParseMaxDecimals(*s, api.LimitDecimals)
	return &l
}

// percentOf is floor(used*100/limit), saturating at MaxInt64, by the exact arithmetic of money (a count of
// tokens read as a count of nanos); a zero limit is exhausted by any usage, even none.
func percentOf(used, limit int64) int64 {
	if limit <= 0 {
		return math.MaxInt64
	}
	return max(money.FromNanos(used).PercentOf(money.FromNanos(limit)), 0)
}

// forecast extrapolates spend linearly to the period end, once a tenth of the period has passed (earlier figures
// swing too wildly to act on). It is computed as of the last whole hour of the period, so that it changes hourly
// rather than on every call: an unchanged budget must get an unchanged status.
func forecast(spent money.Amount, w period.Window, now time.Time) (money.Amount, bool) {
	elapsed := forecastAsOf(w, now).Sub(w.Start)
	total := w.Duration()
	if elapsed <= 0 || elapsed*10 < total {
		return money.Amount{}, false
	}
	return spent.MulDiv(total.Milliseconds(), elapsed.Milliseconds()), true
}

// forecastAsOf is the whole hour of the period the forecast is computed at.
func forecastAsOf(w period.Window, now time.Time) time.Time {
	return w.Start.Add(now.Sub(w.Start).Truncate(forecastStep))
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// nextForecastChange is when the forecast next changes: at its first appearance (the first whole hour past the
// period's first tenth), then hourly.
func nextForecastChange(w period.Window, now time.Time) time.Time {
	tenth := w.Duration() / 10
	first := w.Start.Add((tenth + forecastStep - 1) / forecastStep * forecastStep)
	if first.After(now) {
		return first
	}
	return w.Start.Add(now.Sub(w.Start).Truncate(forecastStep) + forecastStep)
}

// modelStatuses is status.models.
func (m measurement) modelStatuses() []api.ModelStatus {
	var out []api.ModelStatus
	for _, g := range m.models {
		out = append(out, g.ModelStatus)
	}
	return out
}
