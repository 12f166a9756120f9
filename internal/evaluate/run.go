package evaluate

import (
	"fmt"
	"math"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
)

type evaluation struct {
	in     Input
	who    subject
	now    time.Time
	spec   api.Spec
	prev   api.Status
	limits limits // the validated spec's

	st              api.Status
	window          period.Window
	usage           spend.Usage
	percent         int64  // the largest percent of any budget-wide limit (USD or tokens)
	driver          string // what drives the state, for messages
	forecastPercent int64  // of the USD limit, when a forecast is shown
	samePeriod      bool   // the previous status is of the current period
	reason, message string // the BudgetEvaluated condition's
	quota           *Quota
	selected        []string // a cluster budget's namespaces
	anns            []Announcement
	resync          time.Duration
}

func (e *evaluation) run() {
	if err := e.in.SpecErr; err != nil {
		e.fail(api.ReasonInvalidSpec, err.Error())
		return
	}
	e.spec.Default()
	validate := e.spec.Validate
	if e.in.Pool != nil {
		validate = e.spec.ValidateCluster
	}
	if err := validate(); err != nil {
		e.fail(api.ReasonInvalidSpec, err.Error())
		return
	}
	// Validate loaded the zone and parsed the limits: neither fails here.
	e.window = e.spec.PeriodSpec().Containing(e.now)
	e.limits = limits{usd: parseLimit(e.spec.LimitUSD), tokens: e.spec.TokenLimits}
	e.st.Period = &api.PeriodStatus{Start: e.window.Start.Format(time.RFC3339), End: e.window.End.Format(time.RFC3339)}
	e.rollover()
	if l := e.limits.usd; l != nil {
		e.st.LimitUSD = l.String()
	}
	if e.readSpend() {
		e.measure()
	}
	e.st.Thresholds = e.crossings(e.st.Thresholds, e.crossed, "")
}

func (e *evaluation) fail(reason, message string) {
	e.reason, e.message = reason, message
	e.st.State = api.Unknown
}

func (e *evaluation) readSpend() bool {
	cs := e.spec.CostSource
	src := spend.Source{Format: cs.Format, Key: cs.Key, KeyPrefix: cs.KeyPrefix}
	var p Pool
	if e.in.Pool != nil {
		p = e.in.Pool(src, e.window)
		e.st.NamespaceCount, e.st.Namespaces, e.st.NamespacesOmitted = new(int32(len(p.Selected))), p.Breakdown, p.Omitted
		e.selected = p.Selected
	} else {
		p = e.readConfigMap(src)
	}
	if p.Reason != "" {
		e.fail(p.Reason, p.Message)
		return false
	}
	e.usage, e.reason, e.message = p.Usage, api.ReasonEvaluated, p.Message
	return true
}

func (e *evaluation) readConfigMap(src spend.Source) Pool {
	name := e.spec.CostSource.ConfigMapName
	if e.in.SpendData == nil && e.in.SpendDataErr == nil {
		return Pool{Reason: api.ReasonCostSourceMissing, Message: fmt.Sprintf("ConfigMap %q not found in namespace %q", name, e.in.Budget.Metadata.Namespace)}
	}
	u, err := spend.Usage{}, e.in.SpendDataErr
	if err == nil {
		u, err = spend.Read(src, e.in.SpendData, e.window)
	}
	if err != nil {
		return Pool{Reason: string(spend.ReasonOf(err)), Message: fmt.Sprintf("ConfigMap %q: %v", name, err)}
	}
	read := fmt.Sprintf("spend read from key %q of ConfigMap %q", src.Key, name)
	if src.Format == api.DailyLedger {
		days := len(e.window.Dates())
		unit := "days"
		if days == 1 {
			unit = "day"
		}
		read = fmt.Sprintf("spend summed over the period's %d %s of keys %q of ConfigMap %q", days, unit, src.KeyPrefix+"YYYY-MM-DD", name)
	}
	return Pool{Usage: u, Message: read}
}

// measure gauges the budget, then each limited model likewise: the budget is
// as bad as its worst model.
func (e *evaluation) measure() {
	b, percent, driver := e.gauge(e.limits, e.usage)
	e.st.State, e.st.ObservedSpendUSD, e.st.PercentUsed, e.st.Tokens = b.State, b.ObservedSpendUSD, &b.PercentUsed, b.Tokens
	e.percent, e.driver = percent, driver
	if l := e.limits.usd; l != nil {
		remaining := l.Sub(e.usage.CostUSD)
		if remaining.Sign() < 0 {
			remaining = money.Amount{}
		}
		e.st.RemainingUSD = remaining.String()
		if f, ok := e.forecast(); ok {
			e.st.ForecastSpendUSD = f.String()
			e.forecastPercent = f.PercentOf(*l)
		}
	}
	for _, m := range e.spec.ModelLimits {
		// A model absent from the data has spent nothing.
		ms, percent, driver := e.gauge(limits{usd: parseLimit(m.LimitUSD), tokens: m.TokenLimits}, e.usage.Models[m.Model])
		ms.Model = m.Model
		var carried []api.ThresholdStatus
		if i := slices.IndexFunc(e.prev.Models, func(p api.ModelStatus) bool { return p.Model == m.Model }); e.samePeriod && i >= 0 {
			carried = e.prev.Models[i].Thresholds
		}
		ms.Thresholds = e.crossings(carried, func(t api.Threshold) bool { return percent >= int64(t.Percent) }, api.Actual)
		if severity[ms.State] > severity[e.st.State] {
			e.st.State = ms.State
			e.driver = "model " + m.Model + " " + driver
		}
		e.st.Models = append(e.st.Models, ms)
	}
}

// severity orders the states a measure gives; any other counts as UnderBudget.
var severity = map[api.State]int{api.Warning: 1, api.OverBudget: 2}

type limits struct {
	usd    *money.Amount
	tokens *api.TokenLimits
}

// gauge measures u against l, the budget's limits or a model's: its status
// figures, and the largest percent of any limit with what it measures.
func (e *evaluation) gauge(l limits, u spend.Usage) (ms api.ModelStatus, percent int64, driver string) {
	percent = -1
	consider := func(p int64, what string) {
		if p > percent {
			percent, driver = p, what
		}
	}
	ms = api.ModelStatus{State: api.UnderBudget, ObservedSpendUSD: u.CostUSD.String()}
	if l.usd != nil {
		ms.LimitUSD, ms.PercentUsed = l.usd.String(), u.CostUSD.PercentOf(*l.usd)
		consider(ms.PercentUsed, "spend")
	}
	if t := l.tokens; t.HasTokenLimit() {
		ms.Tokens = &api.TokenUsage{Input: u.InputTokens, Output: u.OutputTokens, Total: u.TotalTokens()}
		for _, m := range []struct {
			name  string
			used  int64
			limit *int64
		}{{"input tokens", u.InputTokens, t.Input}, {"output tokens", u.OutputTokens, t.Output}, {"total tokens", u.TotalTokens(), t.Total}} {
			if m.limit != nil {
				consider(percentOf(m.used, *m.limit), m.name)
			}
		}
	}
	percent = max(percent, 0)
	if l.usd == nil {
		ms.PercentUsed = percent
	}
	switch {
	case percent >= int64(api.OverBudgetThreshold):
		ms.State = api.OverBudget
	case percent >= int64(*e.spec.WarnThresholdPercent):
		ms.State = api.Warning
	}
	return ms, percent, driver
}

// parseLimit reads a limit that Validate has already parsed, so it cannot fail.
func parseLimit(s *string) *money.Amount {
	if s == nil {
		return nil
	}
	l, _ := money.ParseMaxDecimals(*s, api.LimitDecimals)
	return &l
}

// percentOf is floor(used*100/limit), saturating at MaxInt64, by the exact
// arithmetic of money (a count of tokens read as a count of nanos); a zero
// limit is exhausted by any usage, even none.
func percentOf(used, limit int64) int64 {
	if limit <= 0 {
		return math.MaxInt64
	}
	return max(money.FromNanos(used).PercentOf(money.FromNanos(limit)), 0)
}

// forecast extrapolates spend linearly to the period end, once a tenth of the
// period has passed (earlier figures swing too wildly to act on). It is
// computed as of the last whole hour of the period, so that it changes hourly
// rather than on every call: an unchanged budget must get an unchanged status.
func (e *evaluation) forecast() (money.Amount, bool) {
	elapsed := e.now.Sub(e.window.Start).Truncate(forecastStep)
	total := e.window.Duration()
	if elapsed <= 0 || elapsed*10 < total {
		return money.Amount{}, false
	}
	return e.usage.CostUSD.MulDiv(total.Milliseconds(), elapsed.Milliseconds()), true
}

// nextForecastChange is when the forecast next changes: at its first
// appearance (the first whole hour past the period's first tenth), then hourly.
func (e *evaluation) nextForecastChange() time.Time {
	tenth := e.window.Duration() / 10
	first := e.window.Start.Add((tenth + forecastStep - 1) / forecastStep * forecastStep)
	if first.After(e.now) {
		return first
	}
	return e.window.Start.Add(e.now.Sub(e.window.Start).Truncate(forecastStep) + forecastStep)
}

// rollover moves the previous period into history once a new one has begun.
func (e *evaluation) rollover() {
	e.st.Thresholds = nil
	if e.prev.Period == nil {
		return
	}
	prevStart, errStart := time.Parse(time.RFC3339, e.prev.Period.Start)
	prevEnd, errEnd := time.Parse(time.RFC3339, e.prev.Period.End)
	switch {
	case errStart != nil || errEnd != nil:
		return // a status this version did not write: start afresh
	case prevStart.Equal(e.window.Start):
		e.samePeriod = true
		e.st.Thresholds = e.prev.Thresholds
		return
	case prevEnd.After(e.window.Start):
		// The period itself was redefined (type, zone or start day changed):
		// the old window never finished, so it is not history.
		return
	}
	p := e.prev
	h := append(slices.Clone(p.History), api.HistoryEntry{Start: p.Period.Start, End: p.Period.End, SpentUSD: p.ObservedSpendUSD, LimitUSD: p.LimitUSD, State: p.State})
	e.st.History = h[max(0, len(h)-api.MaxHistory):]
}

// crossings lists the effective thresholds (only those of basis when it is
// set) with their first crossing this period: carried from carried, or now
// when crossed says so.
func (e *evaluation) crossings(carried []api.ThresholdStatus, crossed func(api.Threshold) bool, basis api.Basis) []api.ThresholdStatus {
	at := make(map[api.Threshold]*metav1.Time, len(carried))
	for _, t := range carried {
		if t.CrossedAt != nil {
			at[api.Threshold{Percent: t.Percent, Basis: t.Basis}] = t.CrossedAt
		}
	}
	eff := e.spec.EffectiveThresholds()
	out := make([]api.ThresholdStatus, 0, len(eff))
	for _, t := range eff {
		if basis != "" && t.Basis != basis {
			continue
		}
		ts := api.ThresholdStatus{Percent: t.Percent, Basis: t.Basis, CrossedAt: at[t]}
		if ts.CrossedAt == nil && crossed(t) {
			ts.CrossedAt = metaTime(e.now)
		}
		out = append(out, ts)
	}
	return out
}

func (e *evaluation) crossed(t api.Threshold) bool {
	if e.st.State == api.Unknown {
		return false
	}
	if t.Basis == api.Forecasted {
		return e.st.ForecastSpendUSD != "" && e.forecastPercent >= int64(t.Percent)
	}
	return e.percent >= int64(t.Percent)
}
