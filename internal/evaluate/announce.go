package evaluate

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// conditions are the status conditions BudgetEvaluated, SpendStale (while a maxAge applies), OverBudget, Blocking
// and Ready, each keeping its previous lastTransitionTime while its status is unchanged.
func conditions(in Input, prev api.Status, v verdict, f freshness, m measurement, proj projection,
	enf *api.EnforcementStatus) []metav1.Condition {
	gen, spec := in.Budget.Metadata.Generation, in.Budget.Spec
	var out []metav1.Condition
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		out = append(out, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
			LastTransitionTime: metav1.NewTime(since(prev.Conditions, typ, status, transition(typ, status, f, m,
				proj, enf))),
		})
	}
	evaluated := metav1.ConditionFalse
	if v.evaluated() {
		evaluated = metav1.ConditionTrue
	}
	set(api.ConditionBudgetEvaluated, evaluated, v.reason, v.message)
	switch {
	case !f.applies:
	case !f.known:
		set(api.ConditionSpendStale, metav1.ConditionUnknown, v.reason, "spend is unknown: "+v.message)
	case f.stale:
		set(api.ConditionSpendStale, metav1.ConditionTrue, api.ReasonSpendStale, f.message)
	default:
		set(api.ConditionSpendStale, metav1.ConditionFalse, api.ReasonSpendFresh, f.message)
	}
	switch m.state {
	case api.OverBudget:
		set(api.ConditionOverBudget, metav1.ConditionTrue, "OverBudget", usageMessage(m))
	case api.Unknown:
		set(api.ConditionOverBudget, metav1.ConditionUnknown, v.reason, "spend is unknown: "+v.message)
	default:
		set(api.ConditionOverBudget, metav1.ConditionFalse, "WithinBudget", usageMessage(m))
	}
	// A lift has no reason of its own: the Unblocked Event announces it and lastTransitionTime records it.
	switch {
	case enf.Blocking:
		set(api.ConditionBlocking, metav1.ConditionTrue, blockingReason(enf), enf.Reason)
	case spec.Suspend:
		set(api.ConditionBlocking, metav1.ConditionFalse, ReasonSuspended, enf.Reason)
	case spec.Enforcement.Action != api.BlockNewWorkloads:
		set(api.ConditionBlocking, metav1.ConditionFalse, ReasonEnforcementDisabled, enf.Reason)
	default:
		set(api.ConditionBlocking, metav1.ConditionFalse, ReasonNotBlocking, enf.Reason)
	}
	if v.invalidSpec() {
		set(api.ConditionReady, metav1.ConditionFalse, api.ReasonInvalidSpec, v.message)
	} else {
		set(api.ConditionReady, metav1.ConditionTrue, "Evaluated", fmt.Sprintf("generation %d evaluated: %s", gen, m.state))
	}
	return out
}

// blockingReason is the Blocking condition's reason, and its Event's, while enf blocks.
func blockingReason(enf *api.EnforcementStatus) string {
	switch {
	case enf.Mode == api.ModeWarn && enf.Projected:
		return ReasonWouldBlockProjected
	case enf.Mode == api.ModeWarn:
		return ReasonWouldBlock
	case enf.Projected:
		return ReasonBlockingProjected
	}
	return ReasonBlocking
}

// since is when a condition of type typ took status: the previous transition if it had status already, else at.
func since(prev []metav1.Condition, typ string, status metav1.ConditionStatus, at time.Time) time.Time {
	if old := meta.FindStatusCondition(prev, typ); old != nil && old.Status == status {
		return old.LastTransitionTime.Time
	}
	return metaTime(at).Time
}

// transition is when the inputs place a condition's change to status, never the clock: spend turned stale when
// its stamp reached maxAge (or when the inputs place it, if later), a block on a projection began at the
// projected crossing and, if no later figures lifted it first, ended when its projection lapsed; anything else
// when the inputs place it.
func transition(typ string, status metav1.ConditionStatus, f freshness, m measurement, proj projection,
	enf *api.EnforcementStatus) time.Time {
	switch {
	case typ == api.ConditionSpendStale && status == metav1.ConditionTrue:
		return latest(m.at, f.turned)
	case typ == api.ConditionBlocking && status == metav1.ConditionTrue && enf.Projected:
		return proj.at
	case typ == api.ConditionBlocking && status == metav1.ConditionFalse && proj.lapsed:
		return latest(m.at, proj.until)
	}
	return m.at
}

func usageMessage(m measurement) string {
	var parts []string
	if m.limitUSD != "" {
		parts = append(parts, fmt.Sprintf("spend %s of %s USD (%d%%)", m.spentUSD, m.limitUSD, *m.percentUsed))
	}
	if t := m.tokens; t != nil {
		parts = append(parts, fmt.Sprintf("tokens input %d, output %d, total %d", t.Input, t.Output, t.Total))
	}
	msg := strings.Join(parts, "; ")
	if m.state == api.OverBudget {
		msg = fmt.Sprintf("%s reached its limit (%s): %s", m.driver, m.driver.figures(), msg)
	}
	return msg
}

// occurrences lists what this sync has to announce: crossings, unknown or stale spend, a block and its lift, a new
// period.
func occurrences(in Input, prev api.Status, v verdict, f freshness, p periodView, m measurement, proj projection,
	enf *api.EnforcementStatus) []Announcement {
	var out []Announcement
	period := periodWords{kind: in.Budget.Spec.Period.Type, status: p.status}
	if !v.invalidSpec() { // an invalid spec's thresholds are the previous status', already announced
		forecast := use{what: "forecast spend", used: m.forecastUSD, limit: m.limitUSD}
		for _, t := range m.thresholds {
			if t.CrossedAt != nil {
				a := crossing("", m.worst, forecast, t, period)
				a.fresh = !crossed(p.carried, t)
				out = append(out, a)
			}
		}
	}
	carried := carriedModels(p, prev)
	for _, ms := range m.models {
		for _, t := range ms.Thresholds {
			if t.CrossedAt != nil {
				a := crossing("model-"+slugOf(ms.Model)+"-", ms.worst, use{}, t, period)
				a.fresh = !crossed(carried[ms.Model], t)
				out = append(out, a)
			}
		}
	}
	// Each of these is fresh when the previous status' condition did not say so yet.
	turned := func(typ string, status metav1.ConditionStatus) bool {
		old := meta.FindStatusCondition(prev.Conditions, typ)
		return old == nil || old.Status != status
	}
	if m.state == api.Unknown && v.reason != api.ReasonSpendStale {
		at := since(prev.Conditions, api.ConditionBudgetEvaluated, metav1.ConditionFalse, m.at)
		out = append(out, Announcement{
			Slug: strings.ToLower(v.reason), Type: EventWarning, Reason: v.reason, Message: v.message, At: at,
			fresh: turned(api.ConditionBudgetEvaluated, metav1.ConditionFalse),
		})
	}
	if f.stale { // under either policy, from when SpendStale turned True
		at := since(prev.Conditions, api.ConditionSpendStale, metav1.ConditionTrue, latest(m.at, f.turned))
		out = append(out, Announcement{
			Slug: "spendstale", Type: EventWarning, Reason: api.ReasonSpendStale, Message: f.event, At: at,
			fresh: turned(api.ConditionSpendStale, metav1.ConditionTrue),
		})
	}
	blocks := turned(api.ConditionBlocking, metav1.ConditionTrue)
	switch {
	case enf.Blocking:
		slug := "blocking"
		if enf.Mode == api.ModeWarn { // a slug of its own: a switch to Deny is a block of its own
			slug = "blocking-warn"
		}
		at := since(prev.Conditions, api.ConditionBlocking, metav1.ConditionTrue,
			transition(api.ConditionBlocking, metav1.ConditionTrue, f, m, proj, enf))
		out = append(out, Announcement{
			Slug: slug, Type: EventWarning, Reason: blockingReason(enf), Message: enf.Reason, At: at, fresh: blocks,
		})
	case meta.IsStatusConditionTrue(prev.Conditions, api.ConditionBlocking): // this sync lifts the block
		out = append(out, Announcement{Slug: "unblocked", Type: EventNormal, Reason: ReasonUnblocked,
			Message: lifted(in, prev), At: metaTime(transition(api.ConditionBlocking, metav1.ConditionFalse, f, m, proj,
				enf)).Time, fresh: true})
	}
	// A new period, announced to budgets that existed before it began.
	if !v.invalidSpec() && in.Budget.Metadata.CreationTimestamp.Time.Before(in.Window.Start) {
		msg := fmt.Sprintf("a new %s period began: %s to %s", period.kind, p.status.Start, p.status.End)
		if n := len(p.history); n > 0 && p.history[n-1].End == p.status.Start {
			last := p.history[n-1]
			msg += fmt.Sprintf("; the previous period ended %s with %s of %s USD spent",
				last.State, cmp.Or(last.SpentUSD, "-"), cmp.Or(last.LimitUSD, "-"))
		}
		out = append(out, Announcement{Slug: "periodreset", Type: EventNormal, Reason: "BudgetPeriodReset", Message: msg,
			At: in.Window.Start, fresh: prev.Period != nil && !p.same})
	}
	return out
}

// crossed reports whether carried, a previous status' thresholds, records t crossed.
func crossed(carried []api.ThresholdStatus, t api.ThresholdStatus) bool {
	for _, c := range carried {
		if c.Percent == t.Percent && c.Basis == t.Basis && c.CrossedAt != nil {
			return true
		}
	}
	return false
}

// lifted says what the lift of the previous status' block changes, in the mode that block was in.
func lifted(in Input, prev api.Status) string {
	was := in.Budget.Spec
	was.Enforcement.Mode = api.ModeDeny
	if prev.Enforcement != nil && prev.Enforcement.Mode == api.ModeWarn {
		was.Enforcement.Mode = api.ModeWarn
		return fmt.Sprintf("%s: new workloads are admitted without a warning in %s",
			gates(was, in.Subject, true), in.Subject.Where)
	}
	return fmt.Sprintf("%s: new workloads are admitted again in %s", gates(was, in.Subject, true), in.Subject.Where)
}

// periodWords is what crossing messages say of the period.
type periodWords struct {
	kind   api.PeriodType
	status *api.PeriodStatus
}

// crossing tells that the limit used most (the budget's, or one model's) reached t; a Forecasted threshold is
// reached by the forecast, against the USD limit. The message names the limit and gives its figures.
func crossing(slugPrefix string, worst, forecast use, t api.ThresholdStatus, p periodWords) Announcement {
	slug := fmt.Sprintf("%sthreshold-%d-%s", slugPrefix, t.Percent, strings.ToLower(string(t.Basis)))
	a := Announcement{Slug: slug, Type: EventWarning, Reason: "BudgetWarning", At: t.CrossedAt.Time}
	reached := worst
	switch {
	case t.Basis == api.Forecasted:
		a.Reason, reached = "ForecastOverBudget", forecast
	case t.Percent >= api.OverBudgetThreshold:
		a.Reason = "OverBudget"
	}
	a.Message = fmt.Sprintf("%s reached %d%% of its limit (%s) in the %s period %s to %s",
		reached, t.Percent, reached.figures(), p.kind, p.status.Start, p.status.End)
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

// MaxAnnouncements is the most announcements a status records, and so the most Events a budget keeps. A budget
// announces at most one crossing per threshold (10) for itself and each of its models (20), a few changes of its
// spend and enforcement, and a new period; a status recording more was not written by this service.
const MaxAnnouncements = 256

// announce lists the Events to keep: the occurrences earlier syncs recorded in prev that are still inside their
// window, then this sync's new ones (Evaluate finds none while suspended). An occurrence is its slug and the instant
// the inputs place it, which is its Event's name: its first record wins, so an Event's content never changes, and
// the record in the status keeps an Event until its window ends, whatever the budget does meanwhile, so it is never
// created twice. Past MaxAnnouncements the newest are kept; left is how many were left out; until is when each
// Event stops being desired.
//
// An occurrence's window is AnnounceFor from when the inputs place it, which is never the clock: after an outage
// of AnnounceFor or more that window is over before any sync runs. The first sync to find the occurrence (fresh)
// announces it all the same, late, under the same name and words, so that a stale or concurrent sync from the
// same inputs desires the very same Event. Its record, evaluated past its window (which no other record is: a
// sync at the end of a window drops it), then keeps the Event for AnnounceFor from when the API server created it
// (created, from the request's children), or LateGrace after the evaluation that recorded it while no child shows
// it, and never again once dropped: a later sync finds the occurrence carried, not fresh.
func announce(prev api.Status, occurring []Announcement, created map[Occurrence]time.Time, now time.Time) (
	out []Announcement, until []time.Time, left int) {
	type kept struct {
		Announcement
		until time.Time
	}
	var all []kept
	seen := make(map[Occurrence]bool, min(len(prev.Announcements), MaxAnnouncements)+len(occurring))
	add := func(a Announcement, late func() (time.Time, bool)) {
		id := Occurrence{a.Slug, a.At.Unix()}
		age := now.Sub(a.At)
		if age < 0 || seen[id] {
			return
		}
		k := kept{Announcement: a, until: a.At.Add(AnnounceFor)}
		if age >= AnnounceFor {
			at, ok := late()
			if !ok || !now.Before(at) {
				return
			}
			k.until = at
		}
		k.fresh = false
		seen[id] = true
		all = append(all, k)
	}
	for _, r := range prev.Announcements {
		a := Announcement{Slug: r.Slug, Type: r.Type, Reason: r.Reason, Message: r.Message, At: r.At.Time}
		add(a, func() (time.Time, bool) {
			// Only a record evaluated past its window was announced late: any other's window is simply over.
			if lastEvaluated(prev).Before(a.At.Add(AnnounceFor)) {
				return time.Time{}, false
			}
			if c, ok := created[Occurrence{a.Slug, a.At.Unix()}]; ok {
				return c.Add(AnnounceFor), true
			}
			return lastEvaluated(prev).Add(LateGrace), true
		})
	}
	for _, a := range occurring {
		add(a, func() (time.Time, bool) { return now.Add(LateGrace), a.fresh })
	}
	if len(all) > MaxAnnouncements {
		slices.SortStableFunc(all, func(a, b kept) int { return b.At.Compare(a.At) })
		all, left = all[:MaxAnnouncements], len(all)-MaxAnnouncements
	}
	slices.SortFunc(all, func(a, b kept) int {
		return cmp.Or(strings.Compare(a.Slug, b.Slug), a.At.Compare(b.At))
	})
	for _, k := range all {
		out, until = append(out, k.Announcement), append(until, k.until)
	}
	return out, until, left
}

// capped says in the BudgetEvaluated condition that left announcements were left out of the status, and so
// have no Event.
func capped(conds []metav1.Condition, left int) {
	if c := meta.FindStatusCondition(conds, api.ConditionBudgetEvaluated); c != nil {
		c.Message += fmt.Sprintf("; %d announcements left out: status.announcements keeps at most %d (MaxAnnouncements)",
			left, MaxAnnouncements)
	}
}

// records is status.announcements.
func records(anns []Announcement) []api.AnnouncementStatus {
	var out []api.AnnouncementStatus
	for _, a := range anns {
		out = append(out, api.AnnouncementStatus{Slug: a.Slug, Type: a.Type, Reason: a.Reason, Message: a.Message,
			At: *metaTime(a.At)})
	}
	return out
}
