package workload_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/hookwire"
	"github.com/llmbudget/llmbudget/internal/workload"
)

const deployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ns","uid":"u","labels":{"llmbudget.dev/budget":"b"}},"spec":{"replicas":1}}`

func related(status string) hookwire.ObjectMap {
	if status == "" {
		return hookwire.ObjectMap{hookwire.BudgetGroup: {}}
	}
	return hookwire.ObjectMap{hookwire.BudgetGroup: {"ns/b": json.RawMessage(`{"metadata":{"name":"b","namespace":"ns"},"status":` + status + `}`)}}
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

func TestSyncReflectsTheBudget(t *testing.T) {
	over := `{"state":"OverBudget","limitUSD":"500.00","observedSpendUSD":"612.00","percentUsed":122,"period":{"start":"2026-11-01T00:00:00Z","end":"2026-12-01T00:00:00Z"},"thresholds":[{"percent":100,"basis":"Actual","crossedAt":"2026-11-29T07:00:00Z"}]}`
	cases := map[string]struct {
		related     hookwire.ObjectMap
		state       string
		reason      string
		spend       string
		attachments int
	}{
		"a missing budget is reported as not found": {related(""), "Unknown", "BudgetNotFound", "<null>", 0},
		"a budget without status is not evaluated":  {related(`{}`), "Unknown", "BudgetNotEvaluated", "<null>", 0},
		"an over budget announces BudgetExceeded":   {related(over), "OverBudget", "<null>", "612.00", 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := time.Date(2026, 11, 29, 7, 10, 0, 0, time.UTC)
			resp, _, err := workload.Sync(hookwire.DecoratorRequest{Object: json.RawMessage(deployment), Related: tc.related}, now)
			require.NoError(t, err)
			assert.Equal(t, tc.state, str(resp.Labels[workload.LabelState]))
			assert.Equal(t, tc.reason, str(resp.Annotations[workload.AnnotationReason]))
			assert.Equal(t, tc.spend, str(resp.Annotations[workload.AnnotationSpend]))
			assert.Len(t, resp.Attachments, tc.attachments)
			assert.Nil(t, resp.Status, "never the workload's status")
			assert.Len(t, resp.Labels, 1, "only llmbudget.dev/state")
			assert.Len(t, resp.Annotations, 5)
		})
	}
}

func TestTheExceededEventIsDroppedAfterItsWindow(t *testing.T) {
	over := `{"state":"OverBudget","thresholds":[{"percent":100,"basis":"Actual","crossedAt":"2026-11-29T07:00:00Z"}]}`
	req := hookwire.DecoratorRequest{Object: json.RawMessage(deployment), Related: related(over)}
	soon, _, err := workload.Sync(req, time.Date(2026, 11, 29, 7, 54, 0, 0, time.UTC))
	require.NoError(t, err)
	assert.Len(t, soon.Attachments, 1)
	assert.Equal(t, 60.0, soon.ResyncAfterSeconds, "look again when it must go")
	late, _, err := workload.Sync(req, time.Date(2026, 11, 29, 7, 55, 0, 0, time.UTC))
	require.NoError(t, err)
	assert.Empty(t, late.Attachments)
}

func TestCleanupRemovesEveryKeyAndFinishesOnceTheyAreGone(t *testing.T) {
	decorated := `{"metadata":{"name":"web","namespace":"ns","labels":{"llmbudget.dev/state":"OverBudget"}}}`
	resp, sum, err := workload.Sync(hookwire.DecoratorRequest{Object: json.RawMessage(decorated), Finalizing: true}, time.Now())
	require.NoError(t, err)
	assert.False(t, resp.Finalized)
	assert.False(t, sum.Finalized)
	for k, v := range resp.Labels {
		assert.Nil(t, v, k)
	}
	for k, v := range resp.Annotations {
		assert.Nil(t, v, k)
	}
	clean := `{"metadata":{"name":"web","namespace":"ns","labels":{"app":"web"},"annotations":{"other":"kept"}}}`
	resp, _, err = workload.Sync(hookwire.DecoratorRequest{Object: json.RawMessage(clean), Finalizing: true}, time.Now())
	require.NoError(t, err)
	assert.True(t, resp.Finalized)
	assert.NotContains(t, resp.Annotations, "other", "keys of others are never touched")
}

func TestCustomizeRelatesTheLabelledBudgetOnly(t *testing.T) {
	resp, err := workload.Customize(hookwire.CustomizeRequest{Parent: json.RawMessage(deployment)})
	require.NoError(t, err)
	require.Len(t, resp.RelatedResources, 1)
	assert.Equal(t, []string{"b"}, resp.RelatedResources[0].Names)
	assert.Equal(t, "ns", resp.RelatedResources[0].Namespace)

	resp, err = workload.Customize(hookwire.CustomizeRequest{Parent: json.RawMessage(`{"metadata":{"name":"web","namespace":"ns"}}`)})
	require.NoError(t, err)
	assert.Empty(t, resp.RelatedResources)
	assert.NotNil(t, resp.RelatedResources, "an empty list, not null")
}

func TestAModelDrivenOverBudgetIsAnnouncedFromItsCondition(t *testing.T) {
	over := `{"state":"OverBudget","thresholds":[{"percent":80,"basis":"Actual"}],"conditions":[{"type":"OverBudget","status":"True","reason":"OverBudget","message":"model gpt-4o spend reached its limit","lastTransitionTime":"2026-11-29T07:00:00Z"}]}`
	resp, _, err := workload.Sync(hookwire.DecoratorRequest{Object: json.RawMessage(deployment), Related: related(over)}, time.Date(2026, 11, 29, 7, 10, 0, 0, time.UTC))
	require.NoError(t, err)
	require.Len(t, resp.Attachments, 1)
	b, err := json.Marshal(resp.Attachments[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), `"name":"web.budgetexceeded.1795935600"`)
}
