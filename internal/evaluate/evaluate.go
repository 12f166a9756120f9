// Package evaluate is the pure heart of llmbudget: from a budget, its spend and the time, it computes the
// budget's status, the Events to announce, whether to close the namespace to new workloads, and when to look again.
//
// The same input gives the same Result, byte for byte once encoded; no budget or data makes it panic; money and
// percentages never pass through floating point.
package evaluate

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// Input is everything an evaluation may look at.
type Input struct {
	// Budget.Status is what the previous sync wrote: nil, or partly foreign, on the first sync.
	Budget api.LLMCostBudget
	// SpecErr is why the spec did not decode: the budget is then Unknown (InvalidSpec), with it as the message.
	SpecErr      error
	SpendData    map[string]string // nil when the spend ConfigMap is missing
	SpendDataErr error             // why its data is unreadable (from spend.DecodeData)
	Now          time.Time
	Pool         PoolReader // when set, reads the spend instead: a ClusterLLMCostBudget's sum over its namespaces
}

// PoolReader reads a cluster budget's spend for its source and current window.
type PoolReader func(spend.Source, period.Window) Pool

// Pool is spend summed over the sources of many namespaces.
type Pool struct {
	Usage     spend.Usage
	Selected  []string              // the namespaces the budget covers, sorted; closed while blocking
	Breakdown []api.NamespaceStatus // status.namespaces
	Omitted   int32                 // how many namespaces Breakdown leaves out
	// Reason is why the sum is unknown (empty if it is known); Message is the BudgetEvaluated condition's message.
	Reason, Message string
}

// Result is what a sync must answer.
type Result struct {
	Status        api.Status
	Announcements []Announcement // the Events desired right now, sorted by Slug
	Quota         *Quota         // the ResourceQuota to keep while blocking; nil otherwise
	ResyncAfter   time.Duration  // when to evaluate again if nothing changes
}

// Announcement is one occurrence to be told once, as a Kubernetes Event.
type Announcement struct {
	Slug    string // identifies the occurrence within the budget (used in Event names)
	Type    string // Normal or Warning
	Reason  string
	Message string
	At      time.Time // when it occurred; the Event is desired until At+AnnounceFor
}

// Quota describes the ResourceQuota that closes the namespace.
type Quota struct {
	Name      string
	Resources []string
	Why       string
}

const (
	EventNormal  = "Normal"
	EventWarning = "Warning"
	// Blocking condition reasons; ReasonUnblocked is the reason of the Event announcing a lift, never a condition's.
	ReasonBlocking            = "BlockingNewWorkloads"
	ReasonUnblocked           = "Unblocked"
	ReasonNotBlocking         = "NotBlocking"
	ReasonEnforcementDisabled = "EnforcementDisabled"
	ReasonSuspended           = "Suspended"
	// AnnounceFor is how long an Event stays desired after its occurrence: below the API server's default event
	// TTL (1h) so that an expired Event is never re-created, and each occurrence is announced exactly once.
	AnnounceFor  = 55 * time.Minute
	maxResync    = time.Hour // a budget is looked at hourly even when nothing it watches changes
	forecastStep = time.Hour // its forecast is recomputed at each whole hour since the period start
)

// subject is how messages name the budget and where it enforces, with the names of its ResourceQuota and of the
// ValidatingAdmissionPolicy that deploy/ installs as the Policy gate.
type subject struct {
	named         string // "LLMCostBudget chatbot"
	qualified     string // "LLMCostBudget team-ml/chatbot"
	where         string // "namespace team-ml"
	quota, policy string
}

func subjectOf(in Input) subject {
	m := in.Budget.Metadata
	if in.Pool == nil {
		return subject{
			named: api.Kind + " " + m.Name, qualified: api.Kind + " " + m.Namespace + "/" + m.Name,
			where: "namespace " + m.Namespace, quota: "llmbudget-" + m.Name, policy: "llmbudget-budgets",
		}
	}
	// The quota name stands apart from a team budget's so that a team budget of the same name keeps its own.
	named := api.ClusterKind + " " + m.Name
	return subject{
		named: named, qualified: named, where: "the namespaces it selects",
		quota: "llmbudget-cluster-" + m.Name, policy: "llmbudget-cluster-budgets",
	}
}

// Evaluate computes the Result for in.
func Evaluate(in Input) Result {
	e := &evaluation{in: in, who: subjectOf(in), now: in.Now, spec: in.Budget.Spec}
	e.spec.Thresholds = slices.Clone(in.Budget.Spec.Thresholds) // Default fills them in
	if in.Budget.Status != nil {
		e.prev = *in.Budget.Status
	}
	// The previous period, thresholds and history stay while the spec is unreadable; run replaces them otherwise.
	e.st = api.Status{ObservedGeneration: in.Budget.Metadata.Generation,
		Period: e.prev.Period, Thresholds: e.prev.Thresholds, History: e.prev.History}
	e.run()
	e.enforce()
	e.conditions()
	e.announce()
	resync := maxResync
	sooner := func(at time.Time) { resync = min(resync, max(at.Sub(e.now), time.Second)) }
	if e.reason != api.ReasonInvalidSpec { // the period is known
		sooner(e.window.End)
		if e.st.LimitUSD != "" {
			sooner(e.nextForecastChange())
		}
	}
	for _, a := range e.anns {
		sooner(a.At.Add(AnnounceFor))
	}
	// lastEvaluatedTime is stamped only when the status changed: Metacontroller syncs a parent again whenever its
	// status changes, so a status that moved with every call (a timestamp, a forecast by the second) would make it
	// sync forever. Both statuses carry the previous stamp, so that they are compared as they would be written.
	e.st.LastEvaluatedTime = e.prev.LastEvaluatedTime
	cur, errCur := json.Marshal(e.st)
	prev, errPrev := json.Marshal(e.prev)
	if e.prev.LastEvaluatedTime == nil || errCur != nil || errPrev != nil || !bytes.Equal(cur, prev) {
		e.st.LastEvaluatedTime = metaTime(e.now)
	}
	return Result{Status: e.st, Announcements: e.anns, Quota: e.quota, ResyncAfter: resync}
}

// evaluation carries one Evaluate call's working state.
type evaluation struct {
	in   Input
	who  subject
	now  time.Time
	spec api.Spec
	prev api.Status

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
}

// run measures the budget: its period, history, spend, state and thresholds.
func (e *evaluation) run() {
	err := e.in.SpecErr
	if err == nil {
		e.spec.Default()
		validate := e.spec.Validate
		if e.in.Pool != nil {
			validate = e.spec.ValidateCluster
		}
		err = validate().ToAggregate()
	}
	if err != nil {
		e.fail(api.ReasonInvalidSpec, err.Error())
		return
	}
	// Validate loaded the zone and parsed the limits: neither fails here.
	e.window = e.spec.PeriodSpec().Containing(e.now)
	e.st.Period = &api.PeriodStatus{Start: e.window.Start.Format(time.RFC3339), End: e.window.End.Format(time.RFC3339)}
	e.rollover()
	limit := parseLimit(e.spec.LimitUSD)
	if limit != nil {
		e.st.LimitUSD = limit.String()
	}
	if e.readSpend() {
		e.measure(limit)
	}
	e.st.Thresholds = e.crossings(e.st.Thresholds, e.crossed, "")
}

func (e *evaluation) fail(reason, message string) {
	e.reason, e.message = reason, message
	e.st.State = api.Unknown
}

func (e *evaluation) readSpend() bool {
	src := spend.Source{Format: e.spec.CostSource.Format, Key: e.spec.CostSource.Key, KeyPrefix: e.spec.CostSource.KeyPrefix}
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

// measure gauges the budget against its USD limit l (nil when it has none) and its token limits, then each limited
// model likewise: the budget is as bad as its worst model.
func (e *evaluation) measure(l *money.Amount) {
	b, percent, driver := e.gauge(l, e.spec.TokenLimits, e.usage)
	e.st.State, e.st.ObservedSpendUSD, e.st.PercentUsed, e.st.Tokens = b.State, b.ObservedSpendUSD, &b.PercentUsed, b.Tokens
	e.percent, e.driver = percent, driver
	if l != nil {
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
		ms, percent, driver := e.gauge(parseLimit(m.LimitUSD), m.TokenLimits, e.usage.Models[m.Model])
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

// gauge measures u against the budget's limits or a model's, in USD and tokens. It returns the status figures,
// the largest percent of any limit, and what that limit measures.
func (e *evaluation) gauge(usd *money.Amount, t *api.TokenLimits, u spend.Usage) (ms api.ModelStatus, percent int64, driver string) {
	consider := func(p int64, what string) {
		if p > percent {
			percent, driver = p, what
		}
	}
	ms = api.ModelStatus{State: api.UnderBudget, ObservedSpendUSD: u.CostUSD.String()}
	if usd != nil {
		ms.LimitUSD, ms.PercentUsed = usd.String(), u.CostUSD.PercentOf(*usd)
		consider(ms.PercentUsed, "spend")
	}
	if t.HasTokenLimit() {
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
	if usd == nil {
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
func (e *evaluation) forecast() (money.Amount, bool) {
	elapsed := e.now.Sub(e.window.Start).Truncate(forecastStep)
	total := e.window.Duration()
	if elapsed <= 0 || elapsed*10 < total {
		return money.Amount{}, false
	}
	return e.usage.CostUSD.MulDiv(total.Milliseconds(), elapsed.Milliseconds()), true
}

// nextForecastChange is when the forecast next changes: at its first appearance (the first whole hour past the
// period's first tenth), then hourly.
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
		// The period was redefined (type, zone or start day changed): the old window never finished, so is not history.
		return
	}
	p := e.prev
	h := append(slices.Clone(p.History), api.HistoryEntry{
		Start: p.Period.Start, End: p.Period.End, SpentUSD: p.ObservedSpendUSD, LimitUSD: p.LimitUSD, State: p.State,
	})
	e.st.History = h[max(0, len(h)-api.MaxHistory):]
}

// crossings lists the effective thresholds (only those of basis, when it is set), each with its first crossing this
// period: the time recorded in carried, or now if crossed reports it crossed.
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

// crossed reports whether the measured budget reached t; unknown spend crosses nothing.
func (e *evaluation) crossed(t api.Threshold) bool {
	switch {
	case e.st.State == api.Unknown:
		return false
	case t.Basis == api.Forecasted:
		return e.st.ForecastSpendUSD != "" && e.forecastPercent >= int64(t.Percent)
	}
	return e.percent >= int64(t.Percent)
}

func (e *evaluation) enforce() {
	enf := e.spec.Enforcement
	idle := func(reason string) { e.st.Enforcement = &api.EnforcementStatus{Reason: reason} }
	switch {
	case e.reason == api.ReasonInvalidSpec:
		// The resource list itself may be what is invalid: never block on it.
		idle("the spec is invalid; nothing is enforced until it is fixed")
	case enf.Action != api.BlockNewWorkloads:
		idle("enforcement.action is None: the budget only reports")
	case e.spec.Suspend:
		idle("the budget is suspended: nothing is enforced")
	case e.st.State == api.OverBudget, e.st.State == api.Unknown && enf.FailurePolicy == api.FailClosed:
		e.block()
	default:
		idle(fmt.Sprintf("the budget is %s: new workloads are admitted", e.st.State))
	}
}

// block closes the namespaces by the spec's gates and explains why twice: in full (why) on the quota and in the
// status, and briefly (detail) in the sentence the admission policy's message starts with; the policy adds what
// is refused where. Only a valid spec blocks, so the period is known.
func (e *evaluation) block() {
	enf := e.spec.Enforcement
	why := fmt.Sprintf("%s is OverBudget (%s reached its limit) for the period %s to %s", e.who.named, e.driver, e.st.Period.Start, e.st.Period.End)
	detail := e.driver + " reached its limit"
	switch {
	case e.st.State == api.Unknown:
		why = fmt.Sprintf("%s cannot read its spend (%s) and its failurePolicy is Closed", e.who.named, e.reason)
		detail = e.reason + ", failurePolicy Closed;"
	case e.driver == "spend":
		detail = fmt.Sprintf("%s of %s USD", e.st.ObservedSpendUSD, e.st.LimitUSD)
	}
	policy := fmt.Sprintf("%s is %s (%s this %s period, ends %s)", e.who.qualified, e.st.State, detail, e.spec.Period.Type, e.st.Period.End)
	st := &api.EnforcementStatus{
		Blocking: true, Gates: enf.Gate.Gates(), Scope: enf.Scope, Resources: slices.Clone(enf.Resources),
		Namespaces: e.selected, Message: policy,
	}
	if slices.Contains(st.Gates, api.GateQuota) {
		st.QuotaName = e.who.quota
		e.quota = &Quota{Name: st.QuotaName, Resources: st.Resources, Why: why}
	}
	what := strings.Join(enf.Resources, ", ")
	if enf.Scope == api.ScopeLabelled {
		what += " labelled " + api.LabelBudget + "=" + e.in.Budget.Metadata.Name
	}
	st.Reason = fmt.Sprintf("%s: new %s are refused in %s by %s", why, what, e.who.where, e.gates(false))
	e.st.Enforcement = st
}

// gates names the objects that enforce the spec's gates; when lifted, it also says that each has stopped refusing.
func (e *evaluation) gates(lifted bool) string {
	var names []string
	for _, g := range e.spec.Enforcement.Gate.Gates() {
		name, how := "ValidatingAdmissionPolicy "+e.who.policy, " no longer refuses for "+e.who.named
		if g == api.GateQuota {
			name, how = "ResourceQuota "+e.who.quota, " was lifted"
		}
		if lifted {
			name += how
		}
		names = append(names, name)
	}
	return strings.Join(names, " and ")
}

func (e *evaluation) conditions() {
	gen := e.in.Budget.Metadata.Generation
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		c := metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: *metaTime(e.now)}
		if old := meta.FindStatusCondition(e.prev.Conditions, typ); old != nil && old.Status == status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		e.st.Conditions = append(e.st.Conditions, c)
	}
	evaluated := metav1.ConditionFalse
	if e.reason == api.ReasonEvaluated {
		evaluated = metav1.ConditionTrue
	}
	set(api.ConditionBudgetEvaluated, evaluated, e.reason, e.message)
	switch e.st.State {
	case api.OverBudget:
		set(api.ConditionOverBudget, metav1.ConditionTrue, "OverBudget", e.usageMessage())
	case api.Unknown:
		set(api.ConditionOverBudget, metav1.ConditionUnknown, e.reason, "spend is unknown: "+e.message)
	default:
		set(api.ConditionOverBudget, metav1.ConditionFalse, "WithinBudget", e.usageMessage())
	}
	// A lift has no reason of its own: the Unblocked Event announces it and lastTransitionTime records it.
	switch enf := e.st.Enforcement; {
	case enf.Blocking:
		set(api.ConditionBlocking, metav1.ConditionTrue, ReasonBlocking, enf.Reason)
	case e.spec.Suspend:
		set(api.ConditionBlocking, metav1.ConditionFalse, ReasonSuspended, enf.Reason)
	case e.spec.Enforcement.Action != api.BlockNewWorkloads:
		set(api.ConditionBlocking, metav1.ConditionFalse, ReasonEnforcementDisabled, enf.Reason)
	default:
		set(api.ConditionBlocking, metav1.ConditionFalse, ReasonNotBlocking, enf.Reason)
	}
	if e.reason == api.ReasonInvalidSpec {
		set(api.ConditionReady, metav1.ConditionFalse, api.ReasonInvalidSpec, e.message)
	} else {
		set(api.ConditionReady, metav1.ConditionTrue, "Evaluated", fmt.Sprintf("generation %d evaluated: %s", gen, e.st.State))
	}
}

func (e *evaluation) usageMessage() string {
	var parts []string
	if e.st.LimitUSD != "" {
		parts = append(parts, fmt.Sprintf("spend %s of %s USD (%d%%)", e.st.ObservedSpendUSD, e.st.LimitUSD, *e.st.PercentUsed))
	}
	if t := e.st.Tokens; t != nil {
		parts = append(parts, fmt.Sprintf("tokens input %d, output %d, total %d", t.Input, t.Output, t.Total))
	}
	msg := strings.Join(parts, "; ")
	if e.st.State == api.OverBudget {
		msg = e.driver + " reached its limit: " + msg
	}
	return msg
}

// announce lists the Events to keep: the occurrences earlier syncs recorded that are still inside their window,
// and this sync's new ones (none while suspended). The record in the status keeps an Event until its window ends,
// whatever the budget does meanwhile, so it is never created twice.
func (e *evaluation) announce() {
	for _, r := range e.prev.Announcements {
		e.add(Announcement{Slug: r.Slug, Type: r.Type, Reason: r.Reason, Message: r.Message, At: r.At.Time})
	}
	if !e.spec.Suspend {
		e.occurrences()
	}
	slices.SortFunc(e.anns, func(a, b Announcement) int { return cmp.Or(strings.Compare(a.Slug, b.Slug), a.At.Compare(b.At)) })
	for _, a := range e.anns {
		rec := api.AnnouncementStatus{Slug: a.Slug, Type: a.Type, Reason: a.Reason, Message: a.Message, At: *metaTime(a.At)}
		e.st.Announcements = append(e.st.Announcements, rec)
	}
}

// occurrences adds what the current state has to announce.
func (e *evaluation) occurrences() {
	limit := "the budget's limit"
	if e.st.LimitUSD != "" {
		limit = "the limit of " + e.st.LimitUSD + " USD"
	}
	for _, t := range e.st.Thresholds {
		if t.CrossedAt != nil && e.reason != api.ReasonInvalidSpec {
			e.add(e.crossingAnnouncement("", "", limit, t))
		}
	}
	for _, m := range e.st.Models {
		limit := "its token limits"
		if m.LimitUSD != "" {
			limit = "its limit of " + m.LimitUSD + " USD"
		}
		for _, t := range m.Thresholds {
			if t.CrossedAt != nil {
				e.add(e.crossingAnnouncement("model-"+slugOf(m.Model)+"-", "model "+m.Model+": ", limit, t))
			}
		}
	}
	if c := meta.FindStatusCondition(e.st.Conditions, api.ConditionBudgetEvaluated); c != nil && e.st.State == api.Unknown {
		e.add(Announcement{Slug: strings.ToLower(c.Reason), Type: EventWarning, Reason: c.Reason, Message: c.Message, At: c.LastTransitionTime.Time})
	}
	if c := meta.FindStatusCondition(e.st.Conditions, api.ConditionBlocking); c != nil {
		switch {
		case c.Status == metav1.ConditionTrue:
			e.add(Announcement{Slug: "blocking", Type: EventWarning, Reason: ReasonBlocking, Message: c.Message, At: c.LastTransitionTime.Time})
		case meta.IsStatusConditionTrue(e.prev.Conditions, api.ConditionBlocking): // this sync lifts the block
			msg := fmt.Sprintf("%s: new workloads are admitted again in %s", e.gates(true), e.who.where)
			e.add(Announcement{Slug: "unblocked", Type: EventNormal, Reason: ReasonUnblocked, Message: msg, At: c.LastTransitionTime.Time})
		}
	}
	// A new period, announced to budgets that existed before it began.
	if e.reason != api.ReasonInvalidSpec && e.in.Budget.Metadata.CreationTimestamp.Time.Before(e.window.Start) {
		msg := fmt.Sprintf("a new %s period began: %s to %s", e.spec.Period.Type, e.st.Period.Start, e.st.Period.End)
		if n := len(e.st.History); n > 0 && e.st.History[n-1].End == e.st.Period.Start {
			last := e.st.History[n-1]
			msg += fmt.Sprintf("; the previous period ended %s with %s of %s USD spent", last.State, cmp.Or(last.SpentUSD, "-"), cmp.Or(last.LimitUSD, "-"))
		}
		e.add(Announcement{Slug: "periodreset", Type: EventNormal, Reason: "BudgetPeriodReset", Message: msg, At: e.window.Start})
	}
}

// crossingAnnouncement tells that usage of limit (the budget's, or one model's named by slugPrefix and who) reached t.
func (e *evaluation) crossingAnnouncement(slugPrefix, who, limit string, t api.ThresholdStatus) Announcement {
	slug := fmt.Sprintf("%sthreshold-%d-%s", slugPrefix, t.Percent, strings.ToLower(string(t.Basis)))
	a := Announcement{Slug: slug, Type: EventWarning, Reason: "BudgetWarning", At: t.CrossedAt.Time}
	usage := "usage"
	switch {
	case t.Basis == api.Forecasted:
		a.Reason, usage = "ForecastOverBudget", "forecast spend"
	case t.Percent >= api.OverBudgetThreshold:
		a.Reason = "OverBudget"
	}
	a.Message = fmt.Sprintf("%s%s reached %d%% of %s in the %s period %s to %s", who, usage, t.Percent, limit, e.spec.Period.Type, e.st.Period.Start, e.st.Period.End)
	return a
}

// slugOf turns a model name into a fragment valid in an object name: lower case letters, digits and '-', with a
// short hash so that "GPT-4o" and "gpt-4o" stay apart.
func slugOf(model string) string {
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(model))
	slug = strings.Trim(slug, "-")
	slug = strings.Trim(slug[:min(len(slug), 40)], "-")
	sum := sha256.Sum256([]byte(model))
	return slug + "-" + hex.EncodeToString(sum[:3])
}

// add keeps a if it is inside its window and not kept already: an occurrence's first record wins, so an Event's
// content never changes.
func (e *evaluation) add(a Announcement) {
	age := e.now.Sub(a.At)
	kept := slices.ContainsFunc(e.anns, func(b Announcement) bool { return b.Slug == a.Slug && b.At.Unix() == a.At.Unix() })
	if age >= 0 && age < AnnounceFor && !kept {
		e.anns = append(e.anns, a)
	}
}

func metaTime(t time.Time) *metav1.Time {
	return new(metav1.NewTime(t.UTC().Truncate(time.Second)))
}
