package evaluate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/text"
)

// Observed is what the objects that put a budget's enforcement in force show, as its caller read them from the
// request: the admission policies and their bindings, the budget's ResourceQuotas, the namespaces it closes and
// the llmbudget authz replicas' Leases. The caller decodes them; Evaluate only compares them with what the
// budget asks for.
type Observed struct {
	// PoliciesRelated and NamespacesRelated say whether the request relates the policies and bindings, and the
	// namespaces, at all: a point whose objects the request does not hold cannot be checked.
	PoliciesRelated, NamespacesRelated bool
	// Policies names the ValidatingAdmissionPolicies that exist, of those the caller looked for.
	Policies []string
	// Bindings are the ValidatingAdmissionPolicyBindings that exist, by name.
	Bindings map[string]Binding
	// Quotas maps each namespace where the budget's ResourceQuota exists to whether its status.hard is filled.
	Quotas map[string]bool
	// Namespaces maps each namespace the caller saw to whether it carries llmbudget.dev/blocked=true.
	Namespaces map[string]bool
	// Replicas are the llmbudget authz replicas' Leases; none when authz is not deployed.
	Replicas []Replica
}

// Binding is what a ValidatingAdmissionPolicyBinding says of the budgets it hands its policy.
type Binding struct {
	PolicyName string
	// SelectsBlocking: its paramRef selects the budgets labelled llmbudget.dev/blocking=true.
	SelectsBlocking bool
	Actions         []string // its validationActions
}

// Replica is one llmbudget authz replica, as its Lease says.
type Replica struct {
	Name    string    // its pod
	Expires time.Time // renewTime plus leaseDurationSeconds; zero when the Lease does not say
	// Synced: the replica's view of the budgets is complete.
	Synced bool
	// Refusing is the budgets it refuses for, "LLMCostBudget team-ml/chatbot" or "ClusterLLMCostBudget dept".
	Refusing []string
	// Truncated: Refusing was cut at its bound, so a budget not in it may be refused as well.
	Truncated bool
	// Problem is why the Lease's report could not be read; such a replica counts as refusing for nothing.
	Problem string
}

// The reasons of status.enforcementPoints and of the Enforced condition.
const (
	ReasonInForce            = "InForce"
	ReasonPolicyMissing      = "PolicyMissing"
	ReasonBindingMissing     = "BindingMissing"
	ReasonBindingMismatch    = "BindingMismatch" // binds another policy, or does not select the label
	ReasonBindingWarnsOnly   = "BindingWarnsOnly"
	ReasonBindingNoAction    = "BindingWithoutAction"
	ReasonBudgetNotLabelled  = "BudgetNotLabelled"
	ReasonQuotaMissing       = "QuotaMissing"
	ReasonQuotaNotEnforced   = "QuotaNotEnforced"
	ReasonNamespaceUnlabeled = "NamespaceNotLabelled"
	ReasonNoLiveReplica      = "NoLiveReplica"
	ReasonReplicasNotRefuse  = "ReplicasNotRefusing"
	ReasonReplicasRefuse     = "ReplicasStillRefusing"
	ReasonRefusalsTruncated  = "RefusalsTruncated"
	ReasonNotObserved        = "NotObserved"
)

// maxNamed is how many namespaces or replicas a point's message names; it counts the rest.
const maxNamed = 3

// enforcementPoints is one entry per point the spec asks for, in the order of api.EnforcementPoint's constants,
// and the instant one of them next changes with the clock alone (an authz Lease expiring), zero when none does.
// Each entry's since is carried from the previous status while its status and reason stay.
func enforcementPoints(in Input, prev api.Status, v verdict, f freshness, m measurement,
	enf *api.EnforcementStatus, quota *Quota) ([]api.EnforcementPointStatus, time.Time) {
	obs := in.Observed
	if obs == nil || v.invalidSpec() {
		return nil, time.Time{}
	}
	spec := in.Budget.Spec
	asks := spec.Enforcement.Action == api.BlockNewWorkloads && !spec.Suspend
	warn := spec.Enforcement.Mode == api.ModeWarn
	var out []api.EnforcementPointStatus
	add := func(p point) {
		p.message = text.Abbreviate(p.message, maxMessage)
		at := p.at
		if at.IsZero() {
			at = m.at
		}
		since := metaTime(at)
		for _, old := range prev.EnforcementPoints {
			if old.Point == p.point && old.Status == p.status && old.Reason == p.reason && old.Since != nil {
				since = old.Since.DeepCopy()
			}
		}
		out = append(out, api.EnforcementPointStatus{
			Point: p.point, Status: p.status, Reason: p.reason, Message: p.message, Since: since,
		})
	}
	var next time.Time
	if asks && (warn || slices.Contains(spec.Enforcement.Gate.Gates(), api.GatePolicy)) {
		add(policyPoint(in, obs, enf))
	}
	if asks && enf.Blocking && quota != nil {
		add(quotaPoint(obs, quota))
	}
	if asks && enf.Blocking && enf.Mode != api.ModeWarn {
		closes := enf.Namespaces
		if in.Budget.Kind != api.ClusterKind {
			closes = []string{in.Budget.Metadata.Namespace}
		}
		add(namespacePoint(obs, closes))
	}
	if asks && len(obs.Replicas) > 0 {
		var p point
		md := in.Budget.Metadata
		ref := api.BudgetRef{Kind: in.Budget.Kind, Namespace: md.Namespace, Name: md.Name}
		p, next = authzPoint(in, obs.Replicas, enf.RefusesSomeone(ref))
		add(p)
	}
	if f.applies {
		add(spendPoint(v, f))
	}
	return out, next
}

// point is an entry before since is settled: at is when the inputs place its change, zero for m.at.
type point struct {
	point   api.EnforcementPoint
	status  metav1.ConditionStatus
	reason  string
	message string
	at      time.Time
}

func inForce(p api.EnforcementPoint, msg string) point {
	return point{point: p, status: metav1.ConditionTrue, reason: ReasonInForce, message: msg}
}

func unknown(p api.EnforcementPoint, msg string) point {
	return point{point: p, status: metav1.ConditionUnknown, reason: ReasonNotObserved, message: msg}
}

func failing(p api.EnforcementPoint, reason, msg string) point {
	return point{point: p, status: metav1.ConditionFalse, reason: reason, message: msg}
}

// policyPoint: the policy of the budget's kind and mode, its binding of the same name, which hands it the budgets
// labelled llmbudget.dev/blocking with the mode's action, and, while the budget may refuse, that label on it.
func policyPoint(in Input, obs *Observed, enf *api.EnforcementStatus) point {
	name, action, other := in.Subject.Policy, "Deny", "Warn"
	if in.Budget.Spec.Enforcement.Mode == api.ModeWarn {
		name, action, other = WarnPolicy(name), "Warn", "Deny"
	}
	b, bound := obs.Bindings[name]
	switch {
	case !obs.PoliciesRelated:
		return unknown(api.PointPolicy, fmt.Sprintf("the request holds no ValidatingAdmissionPolicies or bindings "+
			"to check %s against: Metacontroller does not relate them to %s (is its controller from this "+
			"version's manifests?)", name, in.Subject.Named))
	case !slices.Contains(obs.Policies, name):
		return failing(api.PointPolicy, ReasonPolicyMissing, fmt.Sprintf("ValidatingAdmissionPolicy %s does not "+
			"exist: the API server refuses nothing for %s", name, in.Subject.Named))
	case !bound:
		return failing(api.PointPolicy, ReasonBindingMissing, fmt.Sprintf("ValidatingAdmissionPolicyBinding %s "+
			"does not exist: ValidatingAdmissionPolicy %s is not applied to any request", name, name))
	case b.PolicyName != name:
		return failing(api.PointPolicy, ReasonBindingMismatch, fmt.Sprintf("ValidatingAdmissionPolicyBinding %s "+
			"binds policy %s, not %s", name, text.Quote(b.PolicyName), name))
	case !b.SelectsBlocking:
		return failing(api.PointPolicy, ReasonBindingMismatch, fmt.Sprintf("ValidatingAdmissionPolicyBinding %s "+
			"does not select its parameters by the label %s=true (spec.paramRef.selector)", name, api.LabelBlocking))
	case !slices.Contains(b.Actions, action) && slices.Contains(b.Actions, other) && action == "Deny":
		return failing(api.PointPolicy, ReasonBindingWarnsOnly, fmt.Sprintf("ValidatingAdmissionPolicyBinding %s "+
			"only warns (validationActions %s) where enforcement.mode Deny asks it to refuse", name,
			actions(b.Actions)))
	case !slices.Contains(b.Actions, action):
		return failing(api.PointPolicy, ReasonBindingNoAction, fmt.Sprintf("ValidatingAdmissionPolicyBinding %s "+
			"has validationActions %s, without %s", name, actions(b.Actions), action))
	case enf.Blocking && in.Budget.Metadata.Labels[api.LabelBlocking] != "true":
		return failing(api.PointPolicy, ReasonBudgetNotLabelled, fmt.Sprintf("%s blocks but does not carry the "+
			"label %s=true yet, so ValidatingAdmissionPolicyBinding %s does not hand it to the policy (the gate "+
			"DecoratorController sets it)", in.Subject.Named, api.LabelBlocking, name))
	case enf.Blocking:
		return inForce(api.PointPolicy, fmt.Sprintf("ValidatingAdmissionPolicy %s and its binding (%s) apply "+
			"to %s, which carries the label %s=true", name, action, in.Subject.Named, api.LabelBlocking))
	}
	return inForce(api.PointPolicy, fmt.Sprintf("ValidatingAdmissionPolicy %s and its binding (%s) are in place "+
		"for %s to block", name, action, in.Subject.Named))
}

func actions(a []string) string {
	quoted := make([]string, 0, min(len(a), 4))
	for _, s := range a[:min(len(a), 4)] {
		quoted = append(quoted, text.Quote(s))
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// quotaPoint: the budget's ResourceQuota in each namespace it closes, with status.hard filled (the controller
// manager counts against it only then).
func quotaPoint(obs *Observed, q *Quota) point {
	var missing, unfilled []string
	for _, ns := range q.Namespaces {
		filled, ok := obs.Quotas[ns]
		switch {
		case !ok:
			missing = append(missing, ns)
		case !filled:
			unfilled = append(unfilled, ns)
		}
	}
	switch {
	case len(missing) > 0:
		return failing(api.PointQuota, ReasonQuotaMissing, fmt.Sprintf("ResourceQuota %s does not exist (yet) in "+
			"%s", q.Name, namespaces(missing, len(q.Namespaces))))
	case len(unfilled) > 0:
		return failing(api.PointQuota, ReasonQuotaNotEnforced, fmt.Sprintf("ResourceQuota %s has no status.hard "+
			"in %s: the controller manager does not enforce it (is its resourcequota controller running?)",
			q.Name, namespaces(unfilled, len(q.Namespaces))))
	}
	return inForce(api.PointQuota, fmt.Sprintf("ResourceQuota %s is enforced (status.hard filled) in %s", q.Name,
		namespaces(q.Namespaces, len(q.Namespaces))))
}

// namespaces names at most maxNamed of some of all namespaces, and counts the rest.
func namespaces(some []string, all int) string {
	if len(some) == 1 && all == 1 {
		return "namespace " + some[0]
	}
	s := fmt.Sprintf("%d of %d namespaces (%s", len(some), all, strings.Join(some[:min(len(some), maxNamed)], ", "))
	if len(some) == all {
		s = fmt.Sprintf("all %d namespaces (%s", all, strings.Join(some[:min(len(some), maxNamed)], ", "))
	}
	if len(some) > maxNamed {
		s += fmt.Sprintf(" and %d more", len(some)-maxNamed)
	}
	return s + ")"
}

// agree is the verb for what namespaces names of all namespaces: one namespace alone takes the singular.
func agree(all int, singular, plural string) string {
	if all == 1 {
		return singular
	}
	return plural
}

// namespacePoint: the label llmbudget.dev/blocked=true on every namespace the budget closes, which the Namespace
// decorator sets and Kueue's and NetworkPolicy's selectors read.
func namespacePoint(obs *Observed, closes []string) point {
	if !obs.NamespacesRelated {
		return unknown(api.PointNamespaceLabel, "the request holds no Namespace to check the label "+api.Group+
			"/blocked on: Metacontroller does not relate it (is its controller from this version's manifests?)")
	}
	var unlabelled []string
	for _, ns := range closes {
		if !obs.Namespaces[ns] {
			unlabelled = append(unlabelled, ns)
		}
	}
	if len(unlabelled) > 0 {
		return failing(api.PointNamespaceLabel, ReasonNamespaceUnlabeled, fmt.Sprintf("%s %s the label %s=true "+
			"(yet): what selects blocked namespaces by it does not see the block there",
			namespaces(unlabelled, len(closes)), agree(len(closes), "does not carry", "do not carry"),
			api.Group+"/blocked"))
	}
	return inForce(api.PointNamespaceLabel, fmt.Sprintf("%s %s the label %s=true", namespaces(closes, len(closes)),
		agree(len(closes), "carries", "carry"), api.Group+"/blocked"))
}

// authzPoint: how many live llmbudget authz replicas refuse for the budget's block (or, while it refuses nothing,
// serve it synced and without refusing for it), and the instant the first live Lease expires unless renewed.
func authzPoint(in Input, replicas []Replica, refuses bool) (point, time.Time) {
	who := in.Subject.Qualified
	var live []Replica
	var lastExpiry, next time.Time
	for _, r := range replicas {
		lastExpiry = latest(lastExpiry, r.Expires)
		if r.Expires.After(in.Now) {
			live = append(live, r)
			if next.IsZero() || r.Expires.Before(next) {
				next = r.Expires
			}
		}
	}
	if len(live) == 0 {
		p := failing(api.PointAuthz, ReasonNoLiveReplica, fmt.Sprintf("none of the %d llmbudget authz replicas "+
			"with a Lease renewed it in time: the gateway's calls are not checked against %s", len(replicas), who))
		p.at = lastExpiry
		return p, time.Time{}
	}
	slices.SortFunc(live, func(a, b Replica) int { return strings.Compare(a.Name, b.Name) })
	var wrong, unknown []string
	for _, r := range live {
		listed := slices.Contains(r.Refusing, who)
		switch {
		case r.Problem != "":
			wrong = append(wrong, r.Name+" ("+text.Abbreviate(r.Problem, 128)+")")
		case !r.Synced:
			wrong = append(wrong, r.Name+" (not synced)")
		case refuses && !listed && r.Truncated:
			unknown = append(unknown, r.Name)
		case refuses != listed:
			wrong = append(wrong, r.Name)
		}
	}
	n := len(live)
	name := func(s []string) string {
		out := strings.Join(s[:min(len(s), maxNamed)], ", ")
		if len(s) > maxNamed {
			out += fmt.Sprintf(" and %d more", len(s)-maxNamed)
		}
		return out
	}
	switch {
	case len(wrong) > 0 && refuses:
		return failing(api.PointAuthz, ReasonReplicasNotRefuse, fmt.Sprintf("%d of %d live llmbudget authz "+
			"replicas do not refuse for %s yet: %s", len(wrong), n, who, name(wrong))), next
	case len(wrong) > 0:
		return failing(api.PointAuthz, ReasonReplicasRefuse, fmt.Sprintf("%d of %d live llmbudget authz "+
			"replicas are not in step with %s, which refuses nothing: %s", len(wrong), n, who, name(wrong))), next
	case len(unknown) > 0:
		return point{point: api.PointAuthz, status: metav1.ConditionUnknown, reason: ReasonRefusalsTruncated,
			message: fmt.Sprintf("%d of %d live llmbudget authz replicas refuse for more budgets than their Lease "+
				"lists, and do not list %s: %s", len(unknown), n, who, name(unknown))}, next
	case refuses:
		return inForce(api.PointAuthz, fmt.Sprintf("%d of %d live llmbudget authz replicas refuse for %s", n, n, who)),
			next
	}
	return inForce(api.PointAuthz, fmt.Sprintf("%d of %d live llmbudget authz replicas are synced and serve %s, "+
		"which refuses nothing", n, n, who)), next
}

// spendPoint is the SpendStale condition's reading: in force while the spend is within maxAge.
func spendPoint(v verdict, f freshness) point {
	switch {
	case !f.known:
		return point{point: api.PointSpend, status: metav1.ConditionUnknown, reason: v.reason,
			message: "spend is unknown: " + v.message}
	case f.stale:
		p := failing(api.PointSpend, api.ReasonSpendStale, f.message)
		p.at = f.turned
		return p
	}
	return point{point: api.PointSpend, status: metav1.ConditionTrue, reason: api.ReasonSpendFresh, message: f.message}
}

// enforced sums the points up as the Enforced condition's status, reason and message; ok is false when there is
// no point to sum.
func enforced(points []api.EnforcementPointStatus) (status metav1.ConditionStatus, reason, msg string, ok bool) {
	if len(points) == 0 {
		return "", "", "", false
	}
	var unknown *api.EnforcementPointStatus
	for i, p := range points {
		switch {
		case p.Status == metav1.ConditionFalse:
			return metav1.ConditionFalse, p.Reason, fmt.Sprintf("%s is not in force: %s", p.Point, p.Message), true
		case p.Status != metav1.ConditionTrue && unknown == nil:
			unknown = &points[i]
		}
	}
	if unknown != nil {
		return metav1.ConditionUnknown, unknown.Reason, fmt.Sprintf("%s cannot be checked: %s", unknown.Point,
			unknown.Message), true
	}
	names := make([]string, len(points))
	for i, p := range points {
		names[i] = string(p.Point)
	}
	return metav1.ConditionTrue, ReasonInForce, "in force: " + strings.Join(names, ", "), true
}
