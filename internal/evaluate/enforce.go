package evaluate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/text"
)

// enforce decides whether the budget closes its namespaces to new workloads, and by which gates. A block on spend
// read this period (last) holds while the spend cannot be read in full, whatever the failurePolicy, and for a
// TaskRecords source while it is in force at all: a source that its budget's own users can delete or garble must
// not lift the block they are under. A cluster budget that selects too many namespaces to read (whoever can
// create or label a Namespace can bring that about) holds its block on the namespaces it closed, held.
func enforce(in Input, v verdict, m measurement, proj projection, p periodView, last *api.SpendReading,
	held []string) (*api.EnforcementStatus, *Quota) {
	spec := in.Budget.Spec
	idle := func(reason string) (*api.EnforcementStatus, *Quota) {
		return &api.EnforcementStatus{Reason: reason}, nil
	}
	switch {
	case v.invalidSpec():
		// The resource list itself may be what is invalid: never block on it.
		return idle("the spec is invalid; nothing is enforced until it is fixed")
	case spec.Enforcement.Action != api.BlockNewWorkloads:
		return idle("enforcement.action is None: the budget only reports")
	case spec.Suspend:
		return idle("the budget is suspended: nothing is enforced")
	case m.state == api.OverBudget:
		return block(in, v, m, p, last, held)
	case last != nil && (!v.evaluated() || in.Spend.Skipped != ""):
		return block(in, v, m, p, last, held)
	case v.reason == api.ReasonTooManyNamespaces:
		// Neither its status nor a sync's answer could hold every namespace it selects: none is closed anew.
		return idle(fmt.Sprintf("it selects too many namespaces to read its spend (%s); it closes none until it "+
			"selects fewer", v.reason))
	case last != nil && spec.CostSource.Format == api.TaskRecords:
		// Records only add up within a period: a sum under the limit it was over this period means records were
		// deleted, by Kelos's clean-up or by whoever may delete them, and that must not lift the block either.
		in.Spend.Skipped = "fewer TaskRecords count now than when it blocked; records deleted in a period " +
			"do not lift its block"
		return block(in, v, m, p, last, held)
	case m.state == api.Unknown && spec.Enforcement.FailurePolicy == api.FailClosed:
		return block(in, v, m, p, nil, held)
	case proj.blocks:
		return blockProjected(in, v, proj, p, held)
	case proj.lapsed && spec.Enforcement.BlockOn == api.BlockOnProjected:
		return idle(fmt.Sprintf("the budget is %s: new workloads are admitted; the projection from its sample at %s "+
			"(%s) lapsed at %s, %s after it, with no newer figures", m.state,
			proj.status.SampledAt.UTC().Format(time.RFC3339), proj.words(), proj.until.UTC().Format(time.RFC3339),
			ProjectFor))
	}
	return idle(fmt.Sprintf("the budget is %s: new workloads are admitted", m.state))
}

// lastNamespaces is the namespaces the previous status closed, whose block a cluster budget that selects too many
// namespaces to read holds (when lastReading holds its reading).
func lastNamespaces(prev api.Status) []string {
	if prev.Enforcement == nil {
		return nil
	}
	return prev.Enforcement.Namespaces
}

// lastReading is the reading the previous status blocked on, if it is of the current period and the current
// spec: a new period or an administrator's change to the spec (a new generation) starts afresh.
func lastReading(in Input, p periodView, prev api.Status) *api.SpendReading {
	enf := prev.Enforcement
	if enf == nil || !enf.Blocking || enf.BlockedOn == nil || !p.same ||
		prev.ObservedGeneration != in.Budget.Metadata.Generation {
		return nil
	}
	return enf.BlockedOn
}

// block closes the namespaces by the spec's gates and explains why twice: in full (why) on the quota and in the
// status, and briefly (detail) in the sentence the admission policy's message starts with; the policy adds what
// is refused where. Only a valid spec blocks, so the period is known. last is the reading a previous sync blocked
// on, if any, and held the namespaces it closed.
func block(in Input, v verdict, m measurement, p periodView, last *api.SpendReading, held []string) (
	*api.EnforcementStatus, *Quota) {
	who := in.Subject
	why := fmt.Sprintf("%s is OverBudget (%s reached its limit: %s) for the period %s to %s",
		who.Named, m.driver, m.driver.figures(), p.status.Start, p.status.End)
	detail := m.driver.String() + " " + m.driver.figures() // "total tokens 1200 of 1000"
	reading := readingOf(m, last)
	switch {
	case reading == nil && last != nil: // held: the spend cannot be read in full now
		reading = last
		unreadable := "cannot be read now (" + v.reason + ": " + v.message + ")"
		if v.evaluated() {
			unreadable = "cannot be read in full now (" + text.Abbreviate(in.Spend.Skipped, maxMessage) + ")"
		}
		readAt := last.ReadAt.UTC().Format(time.RFC3339)
		why = fmt.Sprintf("%s keeps blocking: it read %s at %s in this period, and its spend %s; an unreadable "+
			"spend source does not lift a block before readable spend is under the limit, the period ends or the "+
			"spec changes", who.Named, last.Reading, readAt, unreadable)
		detail = fmt.Sprintf("last read %s at %s, unreadable now;", last.Reading, readAt)
	case m.state == api.Unknown:
		why = fmt.Sprintf("%s cannot read its spend (%s) and its failurePolicy is Closed", who.Named, v.reason)
		if v.reason == api.ReasonSpendStale {
			why = fmt.Sprintf("%s counts its stale spend as unknown (%s) since its failurePolicy is Closed",
				who.Named, v.reason)
		}
		detail = v.reason + ", failurePolicy Closed;"
	case m.driver.String() == "spend":
		detail = m.driver.figures()
	}
	return closeNamespaces(in, v, p, cause{why: why, detail: detail, state: string(m.state), reading: reading}, held)
}

// cause is why a budget blocks: in full (why) on the quota and in the status, briefly (detail) in the sentence the
// admission policy's message starts with, the state that sentence names, and the reading it holds on to.
type cause struct {
	why, detail, state string
	reading            *api.SpendReading
}

// closeNamespaces closes the namespaces by the spec's gates for c: the budget's own, the namespaces a cluster
// budget selects, or (for a cluster budget that selects too many to read) held, those it closed before.
func closeNamespaces(in Input, v verdict, p periodView, c cause, held []string) (*api.EnforcementStatus, *Quota) {
	spec, who := in.Budget.Spec, in.Subject
	enf := spec.Enforcement
	st := &api.EnforcementStatus{
		BlockedOn: c.reading,
		Blocking:  true, Gates: enf.Gate.Gates(), Scope: enf.Scope, Resources: slices.Clone(enf.Resources),
		Message: fmt.Sprintf("%s is %s (%s this %s period, ends %s)",
			who.Qualified, c.state, c.detail, spec.Period.Type, p.status.End),
	}
	closes := []string{in.Budget.Metadata.Namespace}
	switch {
	case in.Spend.Namespaces != nil:
		st.Namespaces, closes = in.Spend.Namespaces.Selected, in.Spend.Namespaces.Selected
	case v.reason == api.ReasonTooManyNamespaces: // held: the namespaces are too many to read now
		st.Namespaces, closes = slices.Clone(held), slices.Clone(held)
	}
	what := strings.Join(enf.Resources, ", ")
	if enf.Scope == api.ScopeLabelled {
		what += " labelled " + api.LabelBudget + "=" + in.Budget.Metadata.Name
	}
	if enf.Mode == api.ModeWarn {
		// Whatever the gate, a warn-mode budget only warns, through the policy: a quota cannot warn.
		st.Mode, st.Gates = api.ModeWarn, []api.Gate{api.GatePolicy}
		st.Reason = fmt.Sprintf("%s: it would refuse new %s in %s; enforcement.mode is Warn, so %s admits them "+
			"with a warning", c.why, what, who.Where, gates(spec, who, false))
		return st, nil
	}
	var quota *Quota
	if slices.Contains(st.Gates, api.GateQuota) {
		st.QuotaName = who.Quota
		quota = &Quota{Name: who.Quota, Resources: st.Resources, Why: c.why, Namespaces: closes}
	}
	st.Reason = fmt.Sprintf("%s: new %s are refused in %s by %s", c.why, what, who.Where, gates(spec, who, false))
	return st, quota
}

// blockProjected closes the namespaces at the projected crossing, before the measured spend reaches the limit: it
// holds no reading, so that later figures projecting the limit further off lift it.
func blockProjected(in Input, v verdict, proj projection, p periodView, held []string) (
	*api.EnforcementStatus, *Quota) {
	c := cause{
		why: fmt.Sprintf("%s is projected to reach its limit: %s, from its sample at %s, for the period %s to %s",
			in.Subject.Named, proj.words(), proj.status.SampledAt.UTC().Format(time.RFC3339), p.status.Start,
			p.status.End),
		detail: proj.words(), state: "projected " + string(api.OverBudget),
	}
	st, quota := closeNamespaces(in, v, p, c, held)
	st.Projected = true
	return st, quota
}

// readingOf is the reading an OverBudget measurement blocks on, first made when last was if it is the same
// reading, else when the inputs place it; nil when the budget is not OverBudget.
func readingOf(m measurement, last *api.SpendReading) *api.SpendReading {
	if m.state != api.OverBudget {
		return nil
	}
	r := &api.SpendReading{Reading: m.driver.String() + " " + m.driver.figures(), ReadAt: *metaTime(m.at)}
	if last != nil && last.Reading == r.Reading {
		r.ReadAt = last.ReadAt
	}
	return r
}

// gates names the objects that enforce the spec's gates; when lifted, it also says that each has stopped refusing.
// In Warn mode the one object is the policy that warns.
func gates(spec api.Spec, who Subject, lifted bool) string {
	if spec.Enforcement.Mode == api.ModeWarn {
		name := "ValidatingAdmissionPolicy " + WarnPolicy(who.Policy)
		if lifted {
			name += " no longer warns for " + who.Named
		}
		return name
	}
	var names []string
	for _, g := range spec.Enforcement.Gate.Gates() {
		name, how := "ValidatingAdmissionPolicy "+who.Policy, " no longer refuses for "+who.Named
		if g == api.GateQuota {
			name, how = "ResourceQuota "+who.Quota, " was lifted"
		}
		if lifted {
			name += how
		}
		names = append(names, name)
	}
	return strings.Join(names, " and ")
}

// WarnPolicy is the name of the policy that warns for the budgets whose Policy gate is named policy.
func WarnPolicy(policy string) string { return policy + "-warn" }
