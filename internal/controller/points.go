// The objects of a budget's enforcement points, as the budget's CompositeController relates them and as its sync
// reads them for package evaluate: the admission policies and their bindings, the namespace a team budget closes,
// the llmbudget authz replicas' Leases, and the budget's own ResourceQuotas among its children. The hook reads
// them from the request alone; an object that does not decode counts as one that does not enforce.

package controller

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/text"
)

// The authz replicas' Leases: in their own namespace (DefaultAuthzNamespace unless the service is told another,
// WithAuthzNamespace), labelled LabelName=llmbudget and LabelComponent=authz, named
// AuthzLeasePrefix + the pod's name, each with its report in AnnotationAuthzRefusing.
const (
	DefaultAuthzNamespace   = "llmbudget-system"
	AuthzLeasePrefix        = "llmbudget-authz."
	AnnotationAuthzRefusing = api.Group + "/authz-refusing"
	LabelName               = "app.kubernetes.io/name"
	LabelComponent          = "app.kubernetes.io/component"
	admissionAPIVersion     = "admissionregistration.k8s.io/v1"
	leaseAPIVersion         = "coordination.k8s.io/v1"
)

// The object-map keys of what enforcementRules relates.
var (
	policyGroup  = metacontroller.GroupKey(admissionAPIVersion, "ValidatingAdmissionPolicy")
	bindingGroup = metacontroller.GroupKey(admissionAPIVersion, "ValidatingAdmissionPolicyBinding")
	leaseGroup   = metacontroller.GroupKey(leaseAPIVersion, "Lease")
)

// MaxAuthzReplicas bounds the authz Leases a sync reads: a Lease past it is not read, and the point says so
// through the replicas it counts.
const MaxAuthzReplicas = 64

// enforcementRules relates what shows whether a blocking-capable budget's enforcement points are in force: the
// policy of its kind and the one that warns, with their bindings of the same names; the authz replicas' Leases;
// and, for a team budget, its namespace (a cluster budget relates its namespaces already). A budget whose action is
// None relates none of them. Only authzNamespace's Leases count ("" relates none): whoever may write Leases
// elsewhere (a namespace's own users may) cannot pose as a replica.
func (k Kind) enforcementRules(b api.LLMCostBudget, authzNamespace string) []metacontroller.RelatedResourceRule {
	b.Spec.Default()
	enf := b.Spec.Enforcement
	if enf.Action != api.BlockNewWorkloads {
		return nil
	}
	var rules []metacontroller.RelatedResourceRule
	if enf.Mode == api.ModeWarn || slices.Contains(enf.Gate.Gates(), api.GatePolicy) {
		names := []string{k.Policy, evaluate.WarnPolicy(k.Policy)}
		rules = append(rules,
			metacontroller.RelatedResourceRule{APIVersion: admissionAPIVersion, Resource: "validatingadmissionpolicies",
				Names: names},
			metacontroller.RelatedResourceRule{APIVersion: admissionAPIVersion,
				Resource: "validatingadmissionpolicybindings", Names: slices.Clone(names)})
	}
	if authzNamespace != "" {
		// Metacontroller then watches every Lease of the cluster: see docs/operations.md for what that costs.
		rules = append(rules, metacontroller.RelatedResourceRule{
			APIVersion: leaseAPIVersion, Resource: "leases", Namespace: authzNamespace,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				LabelName: Component, LabelComponent: "authz",
			}},
		})
	}
	if !k.cluster() {
		rules = append(rules, metacontroller.RelatedResourceRule{APIVersion: "v1", Resource: "namespaces",
			Names: []string{b.Metadata.Namespace}})
	}
	return rules
}

// observe reads the objects of the enforcement points from the request.
func (k Kind) observe(owner Owner, related, children metacontroller.ObjectMap) *evaluate.Observed {
	obs := &evaluate.Observed{
		Bindings: map[string]evaluate.Binding{}, Quotas: map[string]bool{}, Namespaces: map[string]bool{},
	}
	_, policies := related[policyGroup]
	_, bindings := related[bindingGroup]
	_, namespaces := related[metacontroller.NamespaceGroup]
	obs.PoliciesRelated, obs.NamespacesRelated = policies && bindings, namespaces
	for _, raw := range related[policyGroup] {
		var p struct {
			Metadata metacontroller.ObjectMeta `json:"metadata"`
		}
		if decode.Lenient(raw, &p, "validatingadmissionpolicy") == nil && p.Metadata.Name != "" {
			obs.Policies = append(obs.Policies, p.Metadata.Name)
		}
	}
	slices.Sort(obs.Policies)
	for _, raw := range related[bindingGroup] {
		if name, b, ok := readBinding(raw); ok {
			obs.Bindings[name] = b
		}
	}
	for _, raw := range related[metacontroller.NamespaceGroup] {
		var ns namespace
		if decode.Lenient(raw, &ns, "namespace") == nil && ns.Metadata.Name != "" {
			obs.Namespaces[ns.Metadata.Name] = ns.Metadata.Labels[LabelBlocked] == "true"
		}
	}
	quota := k.QuotaPrefix + owner.Name
	for _, raw := range children[metacontroller.ResourceQuotaGroup] {
		var q struct {
			Metadata metacontroller.ObjectMeta `json:"metadata"`
			Status   struct {
				Hard map[string]json.RawMessage `json:"hard"`
			} `json:"status"`
		}
		if decode.Lenient(raw, &q, "resourcequota") == nil && q.Metadata.Name == quota {
			obs.Quotas[q.Metadata.Namespace] = len(q.Status.Hard) > 0
		}
	}
	leases := related[leaseGroup]
	keys := make([]string, 0, len(leases))
	for key := range leases {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys[:min(len(keys), MaxAuthzReplicas)] {
		if r, ok := ReadAuthzLease(leases[key]); ok {
			obs.Replicas = append(obs.Replicas, r)
		}
	}
	return obs
}

// readBinding reads a ValidatingAdmissionPolicyBinding: its name, policy, whether its paramRef selects the budgets
// labelled api.LabelBlocking=true (by matchLabels), and its actions.
func readBinding(raw []byte) (string, evaluate.Binding, bool) {
	var b struct {
		Metadata metacontroller.ObjectMeta `json:"metadata"`
		Spec     struct {
			PolicyName string `json:"policyName"`
			ParamRef   *struct {
				Selector *metav1.LabelSelector `json:"selector"`
			} `json:"paramRef"`
			ValidationActions []string `json:"validationActions"`
		} `json:"spec"`
	}
	if decode.Lenient(raw, &b, "validatingadmissionpolicybinding") != nil || b.Metadata.Name == "" {
		return "", evaluate.Binding{}, false
	}
	out := evaluate.Binding{PolicyName: b.Spec.PolicyName, Actions: b.Spec.ValidationActions}
	if ref := b.Spec.ParamRef; ref != nil && ref.Selector != nil {
		out.SelectsBlocking = ref.Selector.MatchLabels[api.LabelBlocking] == "true"
	}
	return b.Metadata.Name, out, true
}

// AuthzReport is the annotation AnnotationAuthzRefusing of an authz replica's Lease: whether its view of the
// budgets is synced, and the budgets it refuses for ("LLMCostBudget team-ml/chatbot", "ClusterLLMCostBudget
// dept"), sorted, cut at MaxAuthzRefusing with Truncated set.
type AuthzReport struct {
	Synced    bool     `json:"synced"`
	Budgets   []string `json:"budgets"`
	Truncated bool     `json:"truncated"`
}

// MaxAuthzRefusing is how many budgets a replica's report lists at most.
const MaxAuthzRefusing = 2000

// ReadAuthzLease reads one authz replica's Lease; ok is false for an object that is not such a Lease. A Lease
// whose times or report cannot be read is a replica with a Problem, which refuses for nothing.
func ReadAuthzLease(raw []byte) (evaluate.Replica, bool) {
	var l struct {
		Metadata metacontroller.ObjectMeta `json:"metadata"`
		Spec     struct {
			HolderIdentity       string          `json:"holderIdentity"`
			LeaseDurationSeconds *int32          `json:"leaseDurationSeconds"`
			RenewTime            json.RawMessage `json:"renewTime"`
		} `json:"spec"`
	}
	if decode.Lenient(raw, &l, "lease") != nil || l.Metadata.Name == "" {
		return evaluate.Replica{}, false
	}
	// Messages name the replica: its pod's name is at most 253 characters, and so is what is echoed of it.
	r := evaluate.Replica{Name: text.Abbreviate(cmp.Or(l.Spec.HolderIdentity, l.Metadata.Name), 253)}
	var renew metav1.MicroTime
	switch {
	case len(l.Spec.RenewTime) == 0 || string(l.Spec.RenewTime) == "null":
		r.Problem = "its Lease has no spec.renewTime"
		return r, true
	case renew.UnmarshalJSON(l.Spec.RenewTime) != nil:
		r.Problem = "its Lease's spec.renewTime is not a time"
		return r, true
	case l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds <= 0:
		r.Problem = "its Lease has no positive spec.leaseDurationSeconds"
		return r, true
	}
	r.Expires = renew.UTC().Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	report, ok := l.Metadata.Annotations[AnnotationAuthzRefusing]
	if !ok {
		r.Problem = "its Lease has no annotation " + AnnotationAuthzRefusing
		return r, true
	}
	var rep AuthzReport
	if err := decode.Lenient([]byte(report), &rep, "metadata.annotations["+AnnotationAuthzRefusing+"]"); err != nil {
		r.Problem = err.Error()
		return r, true
	}
	if len(rep.Budgets) > MaxAuthzRefusing {
		r.Problem = fmt.Sprintf("its annotation %s lists %d budgets, more than %d (MaxAuthzRefusing)",
			AnnotationAuthzRefusing, len(rep.Budgets), MaxAuthzRefusing)
		return r, true
	}
	r.Synced, r.Refusing, r.Truncated = rep.Synced, rep.Budgets, rep.Truncated
	return r, true
}
