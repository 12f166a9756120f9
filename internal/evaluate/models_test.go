package evaluate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

func withModels(limits ...api.ModelLimit) func(*api.LLMCostBudget) {
	return func(b *api.LLMCostBudget) {
		b.Spec.ModelLimits = limits
		b.Spec.Enforcement = api.Enforcement{Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"}}
	}
}

const breakdown = `{"costUSD": "150", "models": {` +
	`"gpt-4o": {"costUSD": "120", "inputTokens": 9000, "outputTokens": 1000}, "claude-3-5-haiku": {"costUSD": "30"}}}`

func TestPerModelLimits(t *testing.T) {
	cases := map[string]struct {
		limits    []api.ModelLimit
		state     api.State
		models    []api.ModelStatus
		announced []string
	}{
		"one model over its limit while the total is under makes the budget OverBudget": {
			limits: []api.ModelLimit{{Model: "gpt-4o", LimitUSD: ptr("100")}},
			state:  api.OverBudget,
			models: []api.ModelStatus{{
				Model: "gpt-4o", State: api.OverBudget, LimitUSD: "100.00", ObservedSpendUSD: "120.00", PercentUsed: 120,
			}},
			announced: []string{"BlockingNewWorkloads", "OverBudget", "BudgetWarning"},
		},
		"a model at its warning threshold makes the budget warn": {
			limits: []api.ModelLimit{{Model: "claude-3-5-haiku", LimitUSD: ptr("37.5")}},
			state:  api.Warning,
			models: []api.ModelStatus{{
				Model: "claude-3-5-haiku", State: api.Warning, LimitUSD: "37.50", ObservedSpendUSD: "30.00", PercentUsed: 80,
			}},
			announced: []string{"BudgetWarning"},
		},
		"a model absent from the data has spent nothing": {
			limits: []api.ModelLimit{{Model: "o1-preview", LimitUSD: ptr("10")}},
			state:  api.UnderBudget,
			models: []api.ModelStatus{{
				Model: "o1-preview", State: api.UnderBudget, LimitUSD: "10.00", ObservedSpendUSD: "0.00", PercentUsed: 0,
			}},
		},
		"a model token limit counts that model's tokens only": {
			limits: []api.ModelLimit{{Model: "gpt-4o", TokenLimits: &api.TokenLimits{Total: ptr[int64](10000)}}},
			state:  api.OverBudget,
			models: []api.ModelStatus{{
				Model: "gpt-4o", State: api.OverBudget, ObservedSpendUSD: "120.00", PercentUsed: 100,
				Tokens: &api.TokenUsage{Input: 9000, Output: 1000, Total: 10000},
			}},
			announced: []string{"BlockingNewWorkloads", "OverBudget", "BudgetWarning"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := eval(budget(withModels(tc.limits...)), total(breakdown), now)
			assert.Equal(t, tc.state, r.Status.State)
			require.NotNil(t, r.Status.PercentUsed)
			assert.Equal(t, int64(30), *r.Status.PercentUsed, "the budget's own percent is unchanged")
			require.Len(t, r.Status.Models, len(tc.models))
			for i, want := range tc.models {
				got := r.Status.Models[i]
				got.Thresholds = nil
				assert.Equal(t, want, got)
			}
			var reasons []string
			for _, a := range r.Announcements {
				reasons = append(reasons, a.Reason)
				assert.Contains(t, a.Message, "model "+tc.limits[0].Model)
			}
			assert.Equal(t, tc.announced, reasons)
			assert.Equal(t, tc.state == api.OverBudget, r.Status.Enforcement.Blocking, "enforcement follows the model")
		})
	}
}

func TestModelCrossingsAreRecordedOncePerPeriod(t *testing.T) {
	b := budget(withModels(api.ModelLimit{Model: "gpt-4o", LimitUSD: ptr("100")}))
	first := eval(b, total(breakdown), now)
	require.Len(t, first.Status.Models, 1)
	require.Len(t, first.Status.Models[0].Thresholds, 2)
	b.Status = &first.Status
	later := eval(b, total(breakdown), now.Add(3*3600e9))
	assert.Equal(t, first.Status.Models[0].Thresholds, later.Status.Models[0].Thresholds)
	assert.Empty(t, later.Announcements)
}

func TestModelNamesMustBeUsable(t *testing.T) {
	bad := budget(withModels(api.ModelLimit{Model: "gpt 4o", LimitUSD: ptr("1")}))
	r := eval(bad, total("1"), now)
	c := condition(t, r.Status, api.ConditionBudgetEvaluated)
	assert.Equal(t, api.ReasonInvalidSpec, c.Reason)
	assert.Contains(t, c.Message, `spec.modelLimits[0].model: Invalid value: "gpt 4o": must be a model name`)

	dup := budget(withModels(api.ModelLimit{Model: "m", LimitUSD: ptr("1")},
		api.ModelLimit{Model: "m", LimitUSD: ptr("2")}))
	r = eval(dup, total("1"), now)
	assert.Contains(t, condition(t, r.Status, api.ConditionBudgetEvaluated).Message,
		`spec.modelLimits[1]: Duplicate value: {"model":"m"}`)

	none := budget(withModels(api.ModelLimit{Model: "m"}))
	r = eval(none, total("1"), now)
	assert.Contains(t, condition(t, r.Status, api.ConditionBudgetEvaluated).Message,
		"spec.modelLimits[0]: Required value: each modelLimits entry needs limitUSD or a tokenLimits field")

	data := budget(withModels(api.ModelLimit{Model: "m", LimitUSD: ptr("1")}))
	r = eval(data, total(`{"costUSD": "1", "models": {"bad name": {"costUSD": "1"}}}`), now)
	c = condition(t, r.Status, api.ConditionBudgetEvaluated)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, api.ReasonInvalidCostData, c.Reason)
	assert.Contains(t, c.Message, `key "total-usd": models: "bad name" is not a valid model name`)
}
