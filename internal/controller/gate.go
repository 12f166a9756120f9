// The hook of the DecoratorController over the budgets themselves (LLMCostBudget and
// ClusterLLMCostBudget): it labels a budget LabelBlocking while its status says it refuses, or would refuse, some
// caller (api.EnforcementStatus.MayRefuse), and removes the label when it no longer does. The admission policies'
// bindings select their parameters by that label, so that a write is checked against the budgets that block and no
// others: its cost does not grow with the budgets that do not block, however many share its namespace.
//
// It guarantees that it only ever sets or removes LabelBlocking, never another label, annotation or the spec, and
// that it never holds up a budget's deletion (no finalize hook). A budget's labels are written by those who may
// write budgets, which no role of a budgeted namespace may, so the namespace's own users cannot remove it. It errs
// towards the policy: a status it cannot read labels the budget, which the policy then reads on its own.

package controller

import (
	"encoding/json"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

// LabelBlocking is "true" on a budget while its status says it refuses, or in Warn mode would refuse, some new
// workload (api.StatusMayRefuse); absent otherwise.
const LabelBlocking = api.LabelBlocking

// Gate is the budget DecoratorController's hooks. It has no finalize hook, so no finalize route.
type Gate struct{}

var _ metacontroller.DecoratorHook = Gate{}

type gatedBudget struct {
	Kind     string                    `json:"kind"`
	Metadata metacontroller.ObjectMeta `json:"metadata"`
	Status   json.RawMessage           `json:"status"`
}

// Customize relates nothing: the budget's own status is all Sync reads.
func (Gate) Customize(req metacontroller.CustomizeRequest) (metacontroller.CustomizeResponse, error) {
	if _, err := decodeGatedBudget(req.Parent, "parent"); err != nil {
		return metacontroller.CustomizeResponse{}, err
	}
	return metacontroller.CustomizeResponse{RelatedResources: []metacontroller.RelatedResourceRule{}}, nil
}

// Sync answers the label while the budget blocks, its removal while it does not.
func (Gate) Sync(req metacontroller.DecoratorRequest, _ time.Time) (
	metacontroller.DecoratorResponse, metacontroller.Summary, error,
) {
	b, err := decodeGatedBudget(req.Object, "object")
	if err != nil {
		return metacontroller.DecoratorResponse{}, metacontroller.Summary{}, err
	}
	resp := metacontroller.DecoratorResponse{
		Labels:      map[string]*string{LabelBlocking: nil},
		Annotations: map[string]*string{},
		Attachments: []any{},
	}
	state := "NotBlocking"
	if api.StatusMayRefuse(api.BudgetRef{Kind: b.Kind, Namespace: b.Metadata.Namespace, Name: b.Metadata.Name}, b.Status) {
		resp.Labels[LabelBlocking], state = new("true"), "Blocking"
	}
	if !resp.CarriedBy(b.Metadata.Labels, b.Metadata.Annotations) {
		resp.ResyncAfterSeconds = settleRetry.Seconds()
	}
	who := metacontroller.Qualified(b.Metadata.Namespace, b.Metadata.Name)
	return resp, metacontroller.Summary{State: state,
		Attrs: metacontroller.Attrs("budget", who, "state", state, "workload", b.Kind+" "+who)}, nil
}

func decodeGatedBudget(raw json.RawMessage, field string) (gatedBudget, error) {
	return metacontroller.DecodeObject(raw, field, func(b gatedBudget) string { return b.Metadata.Name })
}
