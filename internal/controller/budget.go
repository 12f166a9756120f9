// The LLMCostBudget CompositeController: a team's budget in its namespace, read from the spend ConfigMap it names
// or from its namespace's TaskRecords. Its sync is the shared flow of sync.go, for this kind; what is its own is
// which related objects it watches.

package controller

import (
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

// BudgetPolicy is the ValidatingAdmissionPolicy that deploy/ installs as the Policy gate of LLMCostBudgets.
const BudgetPolicy = "llmbudget-budgets"

var budgetKind = Kind{Kind: api.Kind, Policy: BudgetPolicy, QuotaPrefix: "llmbudget-", Read: source.ReadTeam}

// Budget is the LLMCostBudget CompositeController's hooks.
type Budget struct{}

var _ metacontroller.CompositeHook = Budget{}

// Customize names the spend ConfigMap, or the TaskRecords the spec selects, as related, so that Metacontroller
// watches them and passes them to sync; a spec that does not decode relates nothing (sync reports it).
func (Budget) Customize(req metacontroller.CustomizeRequest) (metacontroller.CustomizeResponse, error) {
	p, err := DecodeParent(req.Parent)
	if err != nil {
		return metacontroller.CustomizeResponse{}, err
	}
	resp := metacontroller.CustomizeResponse{RelatedResources: []metacontroller.RelatedResourceRule{}}
	b, err := p.Budget(api.Kind)
	switch cs := b.Spec.CostSource; {
	case err != nil:
		// sync reports the broken spec
	case cs.Format == api.TaskRecords && cs.Selector != nil:
		if source.Usable(cs.Selector.Meta()) {
			resp.RelatedResources = append(resp.RelatedResources,
				source.RecordsRule(b.Metadata.Namespace, nil, cs.Selector.Meta()))
		}
	case cs.ConfigMapName != "":
		resp.RelatedResources = append(resp.RelatedResources, metacontroller.RelatedResourceRule{
			APIVersion: "v1", Resource: "configmaps",
			Namespace: b.Metadata.Namespace, Names: []string{b.Spec.CostSource.ConfigMapName},
		})
	}
	return resp, nil
}

// Sync answers the sync and finalize hooks: Apply evaluates the budget, Cleanup lifts enforcement and lets the
// budget go once no quota remains.
func (Budget) Sync(req metacontroller.CompositeRequest, now time.Time) (
	metacontroller.CompositeResponse, metacontroller.Summary, error,
) {
	return budgetKind.Sync(req, now)
}
