package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

// recordsSpec is a department budget of the TaskRecords labelled kelos.dev/agent=yes.
var recordsSpec = map[string]any{"costSource": map[string]any{"format": "TaskRecords",
	"selector": map[string]any{"matchLabels": map[string]string{"kelos.dev/agent": "yes"}}}}

// withRecord adds a TaskRecord to a built request: raw JSON, so that a case can carry a record that does not read.
func withRecord(req metacontroller.CompositeRequest, ns, name, labels, completed, cost string,
) metacontroller.CompositeRequest {
	if req.Related[source.TaskRecordGroup] == nil {
		req.Related[source.TaskRecordGroup] = map[string]metacontroller.Raw{}
	}
	req.Related[source.TaskRecordGroup][metacontroller.Key(ns, name)] = metacontroller.Raw(`{"metadata": {"name": "` +
		name + `", "namespace": "` + ns + `", "labels": ` + labels + `}, "spec": {"completionTime": "` + completed +
		`", "usage": {"costUSD": "` + cost + `"}}}`)
	return req
}

func TestCustomizeRelatesTheRecordsOfTheSelectedNamespaces(t *testing.T) {
	req := clusterRequest{spec: recordsSpec}.build(t)
	resp, err := ClusterBudget{}.Customize(metacontroller.CustomizeRequest{Parent: req.Parent})
	require.NoError(t, err)
	require.Len(t, resp.RelatedResources, 2)
	assert.Equal(t, "namespaces", resp.RelatedResources[0].Resource)
	rule := resp.RelatedResources[1]
	assert.Equal(t, "kelos.dev/v1alpha2", rule.APIVersion)
	assert.Equal(t, "taskrecords", rule.Resource)
	assert.Equal(t, map[string]string{"department": "ml"}, rule.NamespaceSelector.MatchLabels)
	assert.Equal(t, map[string]string{"kelos.dev/agent": "yes"}, rule.LabelSelector.MatchLabels)
}

func TestTheRecordsOfTheSelectedNamespacesAreSummed(t *testing.T) {
	const agent = `{"kelos.dev/agent": "yes"}`
	cases := map[string]struct {
		policy  api.FailurePolicy
		add     func(metacontroller.CompositeRequest) metacontroller.CompositeRequest
		reason  string
		spent   string
		message string
	}{
		"records of the period in each namespace, and none elsewhere": {
			add: func(r metacontroller.CompositeRequest) metacontroller.CompositeRequest {
				r = withRecord(r, "ml-a", "r1", agent, "2026-12-05T10:00:00Z", "2.5")
				r = withRecord(r, "ml-b", "r2", agent, "2026-12-06T10:00:00Z", "1500m")
				r = withRecord(r, "ml-b", "r3", agent, "2026-11-30T23:59:59Z", "100")   // last period
				return withRecord(r, "web", "r4", agent, "2026-12-06T10:00:00Z", "100") // not selected
			},
			spent: "4.00",
			message: "spend summed over 2 namespaces from 2 of the TaskRecords labelled kelos.dev/agent=yes, " +
				"those completed in the period; 1 completed outside it",
		},
		"a record that does not read makes its namespace unreadable, and the sum unknown when Closed": {
			policy: api.FailClosed,
			add: func(r metacontroller.CompositeRequest) metacontroller.CompositeRequest {
				r = withRecord(r, "ml-a", "r1", agent, "2026-12-05T10:00:00Z", "2.5")
				return withRecord(r, "ml-b", "bad", agent, "2026-12-06T10:00:00Z", "-1")
			},
			reason:  api.ReasonInvalidCostData,
			message: `TaskRecord ml-b/bad: spec.usage.costUSD: "-1" is negative (1 of 2 namespaces unreadable)`,
		},
		"a record that does not read is skipped with its namespace, and said, when Open": {
			policy: api.FailOpen,
			add: func(r metacontroller.CompositeRequest) metacontroller.CompositeRequest {
				r = withRecord(r, "ml-a", "r1", agent, "2026-12-05T10:00:00Z", "2.5")
				return withRecord(r, "ml-b", "bad", agent, "2026-12-06T10:00:00Z", "-1")
			},
			spent: "2.50",
			message: "spend summed over 2 namespaces from 1 of the TaskRecords labelled kelos.dev/agent=yes, " +
				"those completed in the period; 1 unreadable namespaces skipped (failurePolicy Open), the first: " +
				`TaskRecord ml-b/bad: spec.usage.costUSD: "-1" is negative`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := map[string]any{"costSource": recordsSpec["costSource"], "enforcement": map[string]any{
				"action": "None", "failurePolicy": string(tc.policy)}}
			if tc.policy == "" {
				delete(spec, "enforcement")
			}
			req := clusterRequest{spec: spec, namespaces: ml("ml-a", "ml-b")}.build(t)
			req.Related[metacontroller.NamespaceGroup]["web"] = metacontroller.Raw(`{"metadata": {"name": "web"}}`)
			resp, _, err := ClusterBudget{}.Sync(tc.add(req), clusterNow)
			require.NoError(t, err)
			st, ok := resp.Status.(api.Status)
			require.True(t, ok)
			c := meta.FindStatusCondition(st.Conditions, api.ConditionBudgetEvaluated)
			require.NotNil(t, c)
			want := tc.reason
			if want == "" {
				want = api.ReasonEvaluated
			}
			assert.Equal(t, want, c.Reason)
			assert.Equal(t, tc.message, c.Message)
			if tc.reason == "" {
				assert.Equal(t, tc.spent, st.ObservedSpendUSD)
			}
		})
	}
}
