// The ClusterLLMCostBudget CompositeController: a department's budget over the namespaces it selects. Its sync
// is the shared flow of sync.go, for this kind: it evaluates the spend summed from the
// selected namespaces' sources (package spend/source reads them) and closes each of those namespaces while the
// budget blocks; what is its own is which related objects it watches.
//
// Guarantees, besides the shared flow's (a bad spec is answered with state Unknown, reason InvalidSpec; only a
// request without a usable parent is refused):
//   - The namespaces are the related Namespaces that match the current selector: one that stops matching is
//     dropped, with its quota, by the first sync that sees it.
//   - No related object is skipped silently: a Namespace or ConfigMap that does not decode (a value that is not a
//     string, a member written twice) makes its namespace unreadable, and the message names it; a ConfigMap that
//     the request lists twice counts once.
//   - A Total source is summed only when its annotation llmbudget.dev/period-start declares the budget's current
//     period; any other makes the sum Unknown (never silently wrong) under either failurePolicy.
//   - An unreadable namespace makes the sum Unknown under failurePolicy Closed; under Open it is reported in
//     status.namespaces and skipped.
//   - status.namespaces lists at most api.MaxNamespaces; the totals cover all.
//   - A budget that selects more than api.MaxSelectedNamespaces (with a quota in each, api.MaxQuotaNamespaces) is
//     not read: it is Unknown (TooManyNamespaces, naming the bound) and closes no namespace anew, so that its
//     status and answer stay in proportion to a bounded request; a block of this period holds on the namespaces
//     it closed, as on any spend that cannot be read, so that whoever can create or label a Namespace cannot
//     lift it.
//   - The summed spend is as old as its oldest source (by annotation llmbudget.dev/spend-as-of), which
//     spec.costSource.maxAge ages; a source without the annotation is older than any.

package controller

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

// ClusterBudgetPolicy is the ValidatingAdmissionPolicy that deploy/ installs as the Policy gate of
// ClusterLLMCostBudgets.
const ClusterBudgetPolicy = "llmbudget-cluster-budgets"

var clusterBudgetKind = Kind{
	Kind: api.ClusterKind, Policy: ClusterBudgetPolicy, QuotaPrefix: "llmbudget-cluster-", Read: source.ReadCluster,
}

// ClusterBudget is the ClusterLLMCostBudget CompositeController's hooks.
type ClusterBudget struct{}

var _ metacontroller.CompositeHook = ClusterBudget{}

// Customize relates the selected Namespaces (their labels decide membership) and, in them, the ConfigMaps
// labelled as the budget's spend source, or the TaskRecords its selector matches; a spec without a usable selector
// or source relates nothing.
func (ClusterBudget) Customize(req metacontroller.CustomizeRequest) (metacontroller.CustomizeResponse, error) {
	p, err := DecodeParent(req.Parent)
	if err != nil {
		return metacontroller.CustomizeResponse{}, err
	}
	resp := metacontroller.CustomizeResponse{RelatedResources: []metacontroller.RelatedResourceRule{}}
	b, err := p.Budget(api.ClusterKind)
	if err != nil {
		return resp, nil // sync reports the broken spec
	}
	sel, cs := b.Spec.NamespaceSelector.Meta(), b.Spec.CostSource
	if !source.Usable(sel) {
		return resp, nil
	}
	namespaces := metacontroller.RelatedResourceRule{APIVersion: "v1", Resource: "namespaces", LabelSelector: sel}
	if cs.Format == api.TaskRecords {
		if recs := cs.Selector.Meta(); source.Usable(recs) {
			resp.RelatedResources = append(resp.RelatedResources, namespaces, source.RecordsRule("", sel, recs))
		}
		return resp, nil
	}
	if cs.SpendSource == "" {
		return resp, nil
	}
	source := &metav1.LabelSelector{MatchLabels: map[string]string{api.LabelSpendSource: b.Spec.CostSource.SpendSource}}
	resp.RelatedResources = append(resp.RelatedResources, namespaces,
		metacontroller.RelatedResourceRule{
			APIVersion: "v1", Resource: "configmaps", NamespaceSelector: sel, LabelSelector: source,
		},
	)
	return resp, nil
}

// Sync answers the sync and finalize hooks: Apply evaluates the summed spend and closes every selected namespace
// while blocking; Cleanup lifts the quotas in every namespace and lets the budget go once none is observed.
func (ClusterBudget) Sync(req metacontroller.CompositeRequest, now time.Time) (
	metacontroller.CompositeResponse, metacontroller.Summary, error,
) {
	return clusterBudgetKind.Sync(req, now)
}
