package controller

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/spend"
)

var now = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

const parentJSON = `{"metadata": {"name": "chatbot", "namespace": "team-ml", "uid": "u-1", "generation": 2},
	"spec": {"limitUSD": "500", "costSource": {"configMapName": "llm-spend", "key": "total-usd"},
	"enforcement": {"action": "BlockNewWorkloads", "resources": ["jobs.batch"], "gate": "Quota"}}}`

// labelled is the label that makes a ConfigMap a spend source, in the JSON of its metadata.
const labelled = `"labels": {"llmbudget.dev/spend-source": "chatbot"}`

// related holds the spend ConfigMap, written as raw JSON so that a case can carry what only a crafted request can.
func related(configMap string) metacontroller.ObjectMap {
	om := metacontroller.ObjectMap{metacontroller.ConfigMapGroup: {}}
	if configMap != "" {
		om[metacontroller.ConfigMapGroup]["team-ml/llm-spend"] = metacontroller.Raw(configMap)
	}
	return om
}

func TestSpendIsReadFromTheNamedConfigMap(t *testing.T) {
	cases := map[string]struct {
		configMap string
		reason    string // empty: read
		message   string
		spent     string
	}{
		"a readable value": {
			configMap: `{"metadata": {"name": "llm-spend", ` + labelled + `}, "data": {"total-usd": "120.5"}}`,
			message:   `spend read from key "total-usd" of ConfigMap "llm-spend"`, spent: "120.50",
		},
		"no ConfigMap": {
			reason: api.ReasonCostSourceMissing, message: `ConfigMap "llm-spend" not found in namespace "team-ml"`,
		},
		"no such key": {
			configMap: `{"metadata": {` + labelled + `}, "data": {"other": "1"}}`,
			reason:    api.ReasonCostKeyMissing, message: `ConfigMap "llm-spend": key "total-usd" is missing`,
		},
		"a value that is not a string": {
			configMap: `{"metadata": {` + labelled + `}, "data": {"total-usd": 120.5}}`,
			reason:    api.ReasonInvalidCostData,
			message:   `ConfigMap "llm-spend": key "total-usd": the value is 120.5, not a string`,
		},
		"a key written twice": {
			configMap: `{"metadata": {` + labelled + `}, "data": {"total-usd": "900", "total-usd": "1"}}`,
			reason:    api.ReasonInvalidCostData, message: `ConfigMap "llm-spend": duplicate field "data.total-usd"`,
		},
		"a ConfigMap no spend writer made or labelled": {
			configMap: `{"metadata": {"name": "llm-spend", "labels": {"app": "x"}}, "data": {"total-usd": "0"}}`,
			reason:    api.ReasonSpendUntrusted,
			message: "ConfigMap team-ml/llm-spend carries no label llmbudget.dev/spend-source, so no spend writer " +
				"made or labelled it: it is not read (a cluster administrator deletes it for the writer to create, " +
				"or labels it)",
		},
		"a label that is not a string": {
			configMap: `{"metadata": {"labels": {"team": 7}}, "data": {"total-usd": "1"}}`,
			reason:    api.ReasonInvalidCostData,
			message:   `ConfigMap "llm-spend": label "team": the value is 7, not a string`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := DecodeParent(json.RawMessage(parentJSON))
			require.NoError(t, err)
			in := budgetKind.Input(p, related(tc.configMap), now)
			require.NoError(t, in.Invalid)
			assert.Equal(t, tc.reason, in.Spend.Reason)
			assert.Equal(t, tc.message, in.Spend.Message)
			if tc.reason == "" {
				assert.Equal(t, tc.spent, in.Spend.Usage.CostUSD.String())
			}
		})
	}
}

func TestInputReadsStraightDown(t *testing.T) {
	cases := map[string]struct {
		raw     string
		invalid string // empty: valid
	}{
		"a valid spec gets its period and spend": {raw: parentJSON},
		"a spec that does not decode is invalid": {
			raw:     `{"metadata": {"name": "chatbot"}, "spec": {"limitUSD": 500}}`,
			invalid: `spec.limitUSD: Invalid value: "number": must be of type string`,
		},
		"a spec that does not validate is invalid": {
			raw: `{"metadata": {"name": "chatbot"},
				"spec": {"limitUSD": "0", "costSource": {"configMapName": "s", "key": "k"}}}`,
			invalid: "spec.limitUSD",
		},
		"no spec is invalid": {raw: `{"metadata": {"name": "chatbot"}}`, invalid: "spec is missing"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := DecodeParent(json.RawMessage(tc.raw))
			require.NoError(t, err)
			in := budgetKind.Input(p, related(`{"metadata": {`+labelled+`}, "data": {"total-usd": "1"}}`), now)
			assert.Equal(t, "llmbudget-chatbot", in.Subject.Quota)
			if tc.invalid == "" {
				require.NoError(t, in.Invalid)
				assert.Equal(t, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), in.Window.Start)
				assert.Empty(t, in.Spend.Reason)
				return
			}
			require.Error(t, in.Invalid)
			assert.Contains(t, in.Invalid.Error(), tc.invalid)
			assert.Zero(t, in.Window, "an invalid spec has no period")
		})
	}
}

func TestTheDeploymentsNamesAreTheBudgets(t *testing.T) {
	p, err := DecodeParent(json.RawMessage(parentJSON))
	require.NoError(t, err)
	s := budgetKind.Input(p, related(""), now).Subject
	assert.Equal(t, "llmbudget-chatbot", s.Quota)
	assert.Equal(t, "llmbudget-budgets", s.Policy)
	assert.Equal(t, "LLMCostBudget team-ml/chatbot", s.Qualified)
}

func TestSync(t *testing.T) {
	quota := metacontroller.ObjectMap{
		metacontroller.ResourceQuotaGroup: {"team-ml/llmbudget-chatbot": metacontroller.Raw(`{}`)},
	}
	cases := map[string]struct {
		finalizing bool
		children   metacontroller.ObjectMap
		spend      string
		quotas     []string // the namespaces answered with a quota
		finalized  bool
		resync     float64
	}{
		"over budget, the quota closes the budget's namespace": {
			// Its first sync finds the crossings, dated before their window, and announces them late: it looks again
			// once no child has shown their Events for evaluate.LateGrace.
			spend: "600", quotas: []string{"team-ml"}, resync: evaluate.LateGrace.Seconds(),
		},
		"under budget, no quota": {spend: "10", resync: 15 * 60},
		"finalizing while the quota is observed waits": {
			finalizing: true, children: quota, spend: "600", resync: 5,
		},
		"finalizing once the quota is gone lets the budget go": {
			finalizing: true, spend: "600", finalized: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := metacontroller.CompositeRequest{
				Parent: json.RawMessage(parentJSON), Finalizing: tc.finalizing, Children: tc.children,
				Related: related(`{"metadata": {` + labelled + `}, "data": {"total-usd": "` + tc.spend + `"}}`),
			}
			resp, sum, err := Budget{}.Sync(req, now)
			require.NoError(t, err)
			var quotas []string
			for _, k := range resp.Children {
				if q, ok := k.(ResourceQuota); ok {
					quotas = append(quotas, q.Metadata.Namespace)
				}
			}
			assert.Equal(t, tc.quotas, quotas)
			assert.Equal(t, tc.finalized, resp.Finalized)
			assert.Equal(t, tc.resync, resp.ResyncAfterSeconds)
			assert.Equal(t, "budget=team-ml/chatbot", sum.Attrs[0].String())
			if tc.finalizing {
				assert.Empty(t, resp.Children, "cleanup desires nothing")
				assert.Empty(t, sum.State, "cleanup evaluates nothing")
			} else {
				assert.Equal(t, api.ReasonEvaluated, sum.Reason)
			}
		})
	}
}

func TestARequestWithoutAUsableParentIsRefused(t *testing.T) {
	for name, raw := range map[string]string{
		"no parent": ``, "null": `null`, "no name": `{"metadata": {}}`, "not an object": `[]`,
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := Budget{}.Sync(metacontroller.CompositeRequest{Parent: json.RawMessage(raw)}, now)
			_, isRequestError := errors.AsType[*metacontroller.RequestError](err)
			assert.True(t, isRequestError, "%v", err)
		})
	}
}

func TestCustomizeRelatesTheSpendConfigMap(t *testing.T) {
	resp, err := Budget{}.Customize(metacontroller.CustomizeRequest{Parent: json.RawMessage(parentJSON)})
	require.NoError(t, err)
	assert.Equal(t, []metacontroller.RelatedResourceRule{
		{APIVersion: "v1", Resource: "configmaps", Namespace: "team-ml", Names: []string{"llm-spend"}},
	}, resp.RelatedResources)

	unnamed := metacontroller.CustomizeRequest{Parent: json.RawMessage(`{"metadata": {"name": "b"}}`)}
	broken, err := Budget{}.Customize(unnamed)
	require.NoError(t, err)
	assert.Equal(t, []metacontroller.RelatedResourceRule{}, broken.RelatedResources, "a broken spec relates nothing")
}

func TestTheConfigMapsStampIsReadWithItsSpend(t *testing.T) {
	cases := map[string]struct {
		configMap string
		want      spend.Stamp
	}{
		"a stamp": {
			configMap: `{"metadata": {"annotations": {"llmbudget.dev/spend-as-of": "2026-11-20T11:55:00Z"}, ` + labelled + `},` +
				`"data": {"total-usd": "1"}}`,
			want: spend.Stamp{Source: "ConfigMap team-ml/llm-spend", AsOf: now.Add(-5 * time.Minute)},
		},
		"no stamp": {
			configMap: `{"metadata": {` + labelled + `}, "data": {"total-usd": "1"}}`,
			want: spend.Stamp{Source: "ConfigMap team-ml/llm-spend",
				Problem: "has no llmbudget.dev/spend-as-of annotation"},
		},
		"unreadable spend, whose stamp is not looked at": {
			configMap: `{"metadata": {"annotations": {"llmbudget.dev/spend-as-of": "2026-11-20T11:55:00Z"}, ` + labelled + `},` +
				`"data": {"total-usd": "x"}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := DecodeParent(json.RawMessage(parentJSON))
			require.NoError(t, err)
			in := budgetKind.Input(p, related(tc.configMap), now)
			require.NoError(t, in.Invalid)
			assert.Equal(t, tc.want.Source, in.Spend.Stamp.Source)
			assert.True(t, tc.want.AsOf.Equal(in.Spend.Stamp.AsOf), "%v", in.Spend.Stamp.AsOf)
			assert.Equal(t, tc.want.Problem, in.Spend.Stamp.Problem)
		})
	}
}
