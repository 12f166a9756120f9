package evaluate

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// Blocking condition reasons, and the reason of the Event announcing a lift
// (ReasonUnblocked, never a condition reason).
const (
	ReasonBlocking            = "BlockingNewWorkloads"
	ReasonUnblocked           = "Unblocked"
	ReasonNotBlocking         = "NotBlocking"
	ReasonEnforcementDisabled = "EnforcementDisabled"
	ReasonSuspended           = "Suspended"
)

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

func (e *evaluation) block() {
	enf := e.spec.Enforcement
	why := fmt.Sprintf("%s is OverBudget (%s reached its limit) for the period %s to %s", e.who.named, e.driver, e.st.Period.Start, e.st.Period.End)
	if e.st.State == api.Unknown {
		why = fmt.Sprintf("%s cannot read its spend (%s) and its failurePolicy is Closed", e.who.named, e.reason)
	}
	st := &api.EnforcementStatus{Blocking: true, Gates: enf.Gate.Gates(), Scope: enf.Scope, Resources: slices.Clone(enf.Resources), Namespaces: e.selected, Message: e.policyMessage()}
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

// gates names the objects that enforce the spec's gates, or when lifted
// says how their lifting is told.
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

// policyMessage starts the admission policy's message, which appends what is
// refused where. Only a valid spec blocks, so the period is known.
func (e *evaluation) policyMessage() string {
	var detail string
	switch {
	case e.st.State == api.Unknown:
		detail = e.reason + ", failurePolicy Closed;"
	case e.driver == "spend":
		detail = fmt.Sprintf("%s of %s USD", e.st.ObservedSpendUSD, e.st.LimitUSD)
	default:
		detail = e.driver + " reached its limit"
	}
	return fmt.Sprintf("%s is %s (%s this %s period, ends %s)", e.who.qualified, e.st.State, detail, e.spec.Period.Type, e.st.Period.End)
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
	// Lifting a block has no reason of its own: the Unblocked Event announces
	// that moment and the condition's lastTransitionTime records it.
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
	if e.limits.usd != nil {
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

// announce lists the Events to keep: the occurrences earlier syncs recorded
// that are still inside their window, and this sync's new ones (none while
// suspended). The record in the status keeps an Event until its window ends,
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
		e.st.Announcements = append(e.st.Announcements, api.AnnouncementStatus{Slug: a.Slug, Type: a.Type, Reason: a.Reason, Message: a.Message, At: *metaTime(a.At)})
	}
}

func (e *evaluation) occurrences() {
	limit := "the budget's limit"
	if l := e.limits.usd; l != nil {
		limit = "the limit of " + l.String() + " USD"
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
	e.periodReset()
}

// crossingAnnouncement tells that usage of limit, the budget's or (named by
// slugPrefix and who) one model's own, reached threshold t.
func (e *evaluation) crossingAnnouncement(slugPrefix, who, limit string, t api.ThresholdStatus) Announcement {
	a := Announcement{Type: EventWarning, Reason: "BudgetWarning", At: t.CrossedAt.Time, Slug: fmt.Sprintf("%sthreshold-%d-%s", slugPrefix, t.Percent, strings.ToLower(string(t.Basis)))}
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

// slugOf turns a model name into a fragment valid in an object name: lower
// case letters, digits and '-', with a short hash so that "GPT-4o" and
// "gpt-4o" stay apart.
func slugOf(model string) string {
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(model))
	slug = strings.Trim(slug, "-")
	if len(slug) > 40 {
		slug = strings.Trim(slug[:40], "-")
	}
	sum := sha256.Sum256([]byte(model))
	return slug + "-" + hex.EncodeToString(sum[:3])
}

// periodReset announces a new period to budgets that existed before it began.
func (e *evaluation) periodReset() {
	start := e.window.Start
	if e.reason == api.ReasonInvalidSpec || !e.in.Budget.Metadata.CreationTimestamp.Time.Before(start) {
		return
	}
	msg := fmt.Sprintf("a new %s period began: %s to %s", e.spec.Period.Type, e.st.Period.Start, e.st.Period.End)
	if n := len(e.st.History); n > 0 && e.st.History[n-1].End == e.st.Period.Start {
		last := e.st.History[n-1]
		msg += fmt.Sprintf("; the previous period ended %s with %s of %s USD spent", last.State, cmp.Or(last.SpentUSD, "-"), cmp.Or(last.LimitUSD, "-"))
	}
	e.add(Announcement{Slug: "periodreset", Type: EventNormal, Reason: "BudgetPeriodReset", Message: msg, At: start})
}

// add keeps a while it is inside its window, unless kept already: the first
// record of an occurrence wins, so its content never changes.
func (e *evaluation) add(a Announcement) {
	age := e.now.Sub(a.At)
	kept := slices.ContainsFunc(e.anns, func(b Announcement) bool { return b.Slug == a.Slug && b.At.Unix() == a.At.Unix() })
	if age >= 0 && age < AnnounceFor && !kept {
		e.anns = append(e.anns, a)
	}
}

func (e *evaluation) scheduleResync() {
	if e.reason != api.ReasonInvalidSpec { // the period is known
		e.sooner(e.window.End.Sub(e.now))
		if e.limits.usd != nil {
			e.sooner(e.nextForecastChange().Sub(e.now))
		}
	}
	for _, a := range e.anns {
		e.sooner(a.At.Add(AnnounceFor).Sub(e.now))
	}
}

func (e *evaluation) sooner(d time.Duration) { e.resync = min(e.resync, max(d, time.Second)) }

// result stamps lastEvaluatedTime only when the status changed: Metacontroller
// syncs a parent again whenever its status changes, so a status that moved with
// every call (a timestamp, a forecast by the second) would make it sync forever.
func (e *evaluation) result() Result {
	e.enforce()
	e.conditions()
	e.announce()
	e.scheduleResync()
	e.st.LastEvaluatedTime = metaTime(e.now)
	if e.prev.LastEvaluatedTime != nil && sameStatus(e.st, e.prev) {
		e.st.LastEvaluatedTime = e.prev.LastEvaluatedTime
	}
	return Result{Status: e.st, Announcements: e.anns, Quota: e.quota, ResyncAfter: e.resync}
}

// sameStatus compares two statuses as they are written, lastEvaluatedTime aside.
func sameStatus(a, b api.Status) bool {
	a.LastEvaluatedTime, b.LastEvaluatedTime = nil, nil
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
