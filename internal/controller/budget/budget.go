// Package budget holds the LLMCostBudget CompositeController: a team's budget in its namespace, read from the spend
// ConfigMap it names or from its namespace's TaskRecords. Its sync is package parent's, for this kind; what is its
// own is which related objects it watches.
package budget

import (
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/controller/parent"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

// PolicyName is the ValidatingAdmissionPolicy that deploy/ installs as the Policy gate of LLMCostBudgets.
const PolicyName = "llmbudget-budgets"

var kind = parent.Kind{Kind: api.Kind, Policy: PolicyName, QuotaPrefix: "llmbudget-", Read: source.ReadTeam}

// Controller is the LLMCostBudget CompositeController's hooks.
type Controller struct{}

var _ metacontroller.CompositeHook = Controller{}

// Customize names the spend ConfigMap, or the TaskRecords the spec selects, as related, so that Metacontroller
// watches them and passes them to sync; a spec that does not decode relates nothing (sync reports it).
func (Controller) Customize(req metacontroller.CustomizeRequest) (metacontroller.CustomizeResponse, error) {
	p, err := parent.Decode(req.Parent)
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
func (Controller) Sync(req metacontroller.CompositeRequest, now time.Time) (
	metacontroller.CompositeResponse, metacontroller.Summary, error,
) {
	return kind.Sync(req, now)
}
