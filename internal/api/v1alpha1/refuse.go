package v1alpha1

import (
	"slices"

	"github.com/llmbudget/llmbudget/internal/decode"
)

// LabelBlocking is "true" on a budget while the admission policies may refuse, or warn, for it (StatusMayRefuse),
// and absent otherwise: the gate decorator keeps it, and the policies' bindings select their parameters by it.
const LabelBlocking = Group + "/blocking"

// BudgetRef names a budget as the refusal rule reads it.
type BudgetRef struct {
	Kind      string // Kind or ClusterKind
	Namespace string // a Kind's; empty for a ClusterKind
	Name      string
}

// Caller is whom the refusal rule is asked about: a new workload (the admission policies' request), or the Pod or
// namespace an LLM request comes from (authz).
type Caller struct {
	// Namespace is the namespace the workload is created in, or the request comes from.
	Namespace string
	// Budget is the caller's label LabelBudget: empty when it has none, or when it is not known (authz in header
	// mode), which a Labelled budget then does not refuse.
	Budget string
}

// Refuses reports whether the budget of, whose status.enforcement is e, refuses the caller. It is the condition of
// the ValidatingAdmissionPolicies llmbudget-budgets and llmbudget-cluster-budgets (deploy/base/admission), save
// that it reads neither status.enforcement.gates nor status.enforcement.resources: those say through which gate and
// for which kinds of workload the API server refuses, and a caller here has no kind. So it holds where the policies
// refuse a new workload of a kind the budget lists while its gates include Policy, and also for a budget whose block
// only a ResourceQuota (gate Quota) enforces. It holds while all of:
//   - e.Blocking, and e.Mode is not ModeWarn (an absent or unknown mode denies, as in the policies);
//   - for a ClusterKind, e.Namespaces lists the caller's namespace (its scope is not read);
//   - for a Kind, the caller's namespace is the budget's (the policy's binding hands it only the budgets of the
//     request's namespace), and e.Scope is ScopeNamespace, or ScopeLabelled with the caller's Budget the budget's
//     name. Any other scope (absent, or one this version does not know) refuses no one, as in the policies.
//
// A nil e, a budget without status or without status.enforcement, refuses no one: the policies read every field
// through optionals. A status that cannot be decoded into an EnforcementStatus, which the CRD's schema admits only
// when written under another version's, cannot be asked. Its readers refuse nothing for it, save the gate
// decorator, which labels it so that the policies decide: they read each field as it is (a blocking that is not
// true refuses nothing; a mode that is not a string is not Warn, so it denies).
func (e *EnforcementStatus) Refuses(of BudgetRef, c Caller) bool {
	return e.closes(of, c) && e.Mode != ModeWarn
}

// WouldRefuse is Refuses in Warn mode: whether the budget, with e.Mode ModeWarn, would refuse the caller. It is
// the condition of llmbudget-budgets-warn and llmbudget-cluster-budgets-warn, which warn where it holds; for any
// budget and caller at most one of Refuses and WouldRefuse holds.
func (e *EnforcementStatus) WouldRefuse(of BudgetRef, c Caller) bool {
	return e.closes(of, c) && e.Mode == ModeWarn
}

// RefusesIn reports whether Refuses holds for some caller in the namespace: whether the budget blocks the
// namespace, as its posture (the label llmbudget.dev/blocked) says. A Labelled budget refuses there only the
// callers labelled for it, so it is asked about one of those.
func (e *EnforcementStatus) RefusesIn(of BudgetRef, namespace string) bool {
	return e.Refuses(of, Caller{Namespace: namespace, Budget: of.Name})
}

// MayRefuse reports whether Refuses or WouldRefuse holds for some caller anywhere: whether the admission policies'
// bindings must hand them the budget as a parameter, as the gate decorator's label llmbudget.dev/blocking says.
func (e *EnforcementStatus) MayRefuse(of BudgetRef) bool {
	if e == nil {
		return false
	}
	if of.Kind == ClusterKind {
		return slices.ContainsFunc(e.Namespaces, func(ns string) bool { return e.closes(of, Caller{Namespace: ns}) })
	}
	return e.closes(of, Caller{Namespace: of.Namespace, Budget: of.Name})
}

// RefusesSomeone reports whether Refuses holds for some caller anywhere: MayRefuse, save in Warn mode. It is what
// an llmbudget authz replica reports it refuses for, and what the budget's Authz enforcement point expects of it.
func (e *EnforcementStatus) RefusesSomeone(of BudgetRef) bool {
	return e != nil && e.Mode != ModeWarn && e.MayRefuse(of)
}

// StatusMayRefuse is MayRefuse of a budget's status as JSON (empty or null while it has none), as the gate
// decorator labels the budget: a status it cannot decode counts, so that the policies read the budget and decide.
func StatusMayRefuse(of BudgetRef, status []byte) bool {
	if len(status) == 0 || string(status) == "null" {
		return false
	}
	var st struct {
		Enforcement *EnforcementStatus `json:"enforcement"`
	}
	if err := decode.Lenient(status, &st, "status"); err != nil {
		return true
	}
	return st.Enforcement.MayRefuse(of)
}

// closes is the rule both modes share.
func (e *EnforcementStatus) closes(of BudgetRef, c Caller) bool {
	switch {
	case e == nil || !e.Blocking:
		return false
	case of.Kind == ClusterKind:
		return slices.Contains(e.Namespaces, c.Namespace)
	case c.Namespace != of.Namespace:
		return false
	}
	return e.Scope == ScopeNamespace || e.Scope == ScopeLabelled && c.Budget == of.Name
}
