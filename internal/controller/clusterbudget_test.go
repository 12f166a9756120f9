package controller

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

var clusterNow = time.Date(2026, 12, 10, 12, 0, 0, 0, time.UTC)

const periodStart = "2026-12-01T00:00:00Z"

// request builds a sync request for a department budget over the namespaces
// labelled department=ml; spec overrides merge into the default spec.
type clusterRequest struct {
	spec       map[string]any
	namespaces map[string]map[string]string // name -> labels
	configMaps []configMap
	quotasIn   []string
	finalizing bool
	status     *api.Status // the previous sync's
}

type configMap struct {
	namespace, name, source string
	annotations             map[string]string
	data                    map[string]string
}

func ledger(ns, usd string) configMap {
	return configMap{namespace: ns, name: "llm-spend", source: "llm-spend", data: map[string]string{"2026-12-05": usd}}
}

func total(ns, usd, start string) configMap {
	cm := configMap{namespace: ns, name: "llm-spend", source: "llm-spend", data: map[string]string{"spend-usd": usd}}
	if start != "" {
		cm.annotations = map[string]string{api.AnnotationPeriodStart: start}
	}
	return cm
}

func ml(names ...string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, n := range names {
		out[n] = map[string]string{"department": "ml"}
	}
	return out
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func (r clusterRequest) build(t testing.TB) metacontroller.CompositeRequest {
	t.Helper()
	spec := map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]string{"department": "ml"}},
		"limitUSD":          "1000",
		"costSource":        map[string]any{"spendSource": "llm-spend", "format": "DailyLedger"},
		"enforcement": map[string]any{
			"action": "BlockNewWorkloads", "resources": []string{"jobs.batch"}, "gate": "Both",
		},
	}
	for k, v := range r.spec {
		spec[k] = v
	}
	parent := map[string]any{
		"apiVersion": api.APIVersion, "kind": api.ClusterKind,
		"metadata": map[string]any{
			"name": "ml-department", "uid": "u-1", "generation": 1, "creationTimestamp": "2026-12-10T11:59:00Z",
		},
		"spec": spec,
	}
	if r.status != nil {
		parent["status"] = r.status
	}
	req := metacontroller.CompositeRequest{
		Parent:     mustJSON(t, parent),
		Related:    metacontroller.ObjectMap{metacontroller.NamespaceGroup: {}, metacontroller.ConfigMapGroup: {}},
		Children:   metacontroller.ObjectMap{metacontroller.ResourceQuotaGroup: {}},
		Finalizing: r.finalizing,
	}
	for name, labels := range r.namespaces {
		md := map[string]any{"name": name, "labels": labels}
		req.Related[metacontroller.NamespaceGroup][name] = mustJSON(t, map[string]any{"metadata": md})
	}
	for _, cm := range r.configMaps {
		md := map[string]any{
			"name": cm.name, "namespace": cm.namespace, "annotations": cm.annotations,
			"labels": map[string]string{api.LabelSpendSource: cm.source},
		}
		obj := mustJSON(t, map[string]any{"metadata": md, "data": cm.data})
		req.Related[metacontroller.ConfigMapGroup][metacontroller.Key(cm.namespace, cm.name)] = obj
	}
	for _, ns := range r.quotasIn {
		const name = "llmbudget-cluster-ml-department"
		md := map[string]any{"name": name, "namespace": ns}
		quota := mustJSON(t, map[string]any{"metadata": md})
		req.Children[metacontroller.ResourceQuotaGroup][metacontroller.Key(ns, name)] = quota
	}
	return req
}

func sync(t testing.TB, r clusterRequest) (api.Status, []any, metacontroller.CompositeResponse) {
	t.Helper()
	resp, _, err := ClusterBudget{}.Sync(r.build(t), clusterNow)
	require.NoError(t, err)
	st, ok := resp.Status.(api.Status)
	if !ok {
		return api.Status{}, resp.Children, resp
	}
	return st, resp.Children, resp
}

func reason(st api.Status) string {
	c := meta.FindStatusCondition(st.Conditions, api.ConditionBudgetEvaluated)
	if c == nil {
		return ""
	}
	return c.Reason
}

func quotaNamespaces(kids []any) []string {
	var out []string
	for _, k := range kids {
		if q, ok := k.(ResourceQuota); ok {
			out = append(out, q.Metadata.Namespace)
		}
	}
	return out
}

func TestSpendOfTheSelectedNamespacesIsSummed(t *testing.T) {
	cases := []struct {
		name       string
		req        clusterRequest
		state      api.State
		reason     string
		spent      string
		quotas     []string
		namespaces []string // status.namespaces, in order
	}{
		{
			name:  "ledgers of every selected namespace add up and the biggest spender comes first",
			req:   clusterRequest{namespaces: ml("a", "b"), configMaps: []configMap{ledger("a", "100.25"), ledger("b", "300")}},
			state: api.UnderBudget, reason: api.ReasonEvaluated, spent: "400.25", namespaces: []string{"b", "a"},
		},
		{
			name: "a namespace that left the selector is neither summed nor closed",
			req: clusterRequest{
				namespaces: map[string]map[string]string{"a": {"department": "ml"}, "gone": {"department": "search"}},
				configMaps: []configMap{ledger("a", "1200"), ledger("gone", "5000")},
				quotasIn:   []string{"a", "gone"},
			},
			state: api.OverBudget, reason: api.ReasonEvaluated, spent: "1200.00", quotas: []string{"a"},
			namespaces: []string{"a"},
		},
		{
			name: "a ConfigMap labelled for another source is not read",
			req: clusterRequest{namespaces: ml("a"), configMaps: []configMap{
				ledger("a", "10"),
				{namespace: "a", name: "other", source: "other", data: map[string]string{"2026-12-05": "900"}},
			}},
			state: api.UnderBudget, reason: api.ReasonEvaluated, spent: "10.00", namespaces: []string{"a"},
		},
		{
			name: "Total sources that declare the budget's period are summed",
			req: clusterRequest{
				spec:       map[string]any{"costSource": map[string]any{"spendSource": "llm-spend", "key": "spend-usd"}},
				namespaces: ml("a", "b"),
				configMaps: []configMap{total("a", "1", periodStart), total("b", "2", "2026-12-01T01:00:00+01:00")},
			},
			state: api.UnderBudget, reason: api.ReasonEvaluated, spent: "3.00", namespaces: []string{"b", "a"},
		},
		{
			name: "mixed periods are refused even under failurePolicy Open",
			req: clusterRequest{
				spec:       map[string]any{"costSource": map[string]any{"spendSource": "llm-spend", "key": "spend-usd"}},
				namespaces: ml("a", "b"),
				configMaps: []configMap{total("a", "1", periodStart), total("b", "2", "2026-11-01T00:00:00Z")},
			},
			state: api.Unknown, reason: api.ReasonPeriodMismatch, namespaces: []string{"b", "a"},
		},
		{
			name: "a Total source that does not declare its period is refused",
			req: clusterRequest{
				spec:       map[string]any{"costSource": map[string]any{"spendSource": "llm-spend", "key": "spend-usd"}},
				namespaces: ml("a"), configMaps: []configMap{total("a", "1", "")},
			},
			state: api.Unknown, reason: api.ReasonPeriodMismatch, namespaces: []string{"a"},
		},
		{
			name:  "under Open an unreadable namespace is reported and skipped",
			req:   clusterRequest{namespaces: ml("a", "b"), configMaps: []configMap{ledger("a", "100"), ledger("b", "12,5")}},
			state: api.UnderBudget, reason: api.ReasonEvaluated, spent: "100.00", namespaces: []string{"b", "a"},
		},
		{
			name: "under Closed an unreadable namespace makes the sum Unknown and closes every namespace",
			req: clusterRequest{
				spec: map[string]any{"enforcement": map[string]any{
					"action": "BlockNewWorkloads", "resources": []string{"jobs.batch"}, "gate": "Quota",
					"failurePolicy": "Closed",
				}},
				namespaces: ml("a", "b"), configMaps: []configMap{ledger("a", "100")},
			},
			state: api.Unknown, reason: api.ReasonCostSourceMissing, quotas: []string{"a", "b"}, namespaces: []string{"b", "a"},
		},
		{
			name:  "no namespace readable under Open is Unknown, not zero",
			req:   clusterRequest{namespaces: ml("a")},
			state: api.Unknown, reason: api.ReasonCostSourceMissing, namespaces: []string{"a"},
		},
		{
			name:  "a selector that matches no namespace spends nothing",
			req:   clusterRequest{namespaces: map[string]map[string]string{"x": {"department": "search"}}},
			state: api.UnderBudget, reason: api.ReasonEvaluated, spent: "0.00",
		},
		{
			name: "an invalid selector is InvalidSpec and selects nothing",
			req: clusterRequest{spec: map[string]any{"namespaceSelector": map[string]any{"matchExpressions": []any{
				map[string]any{"key": "department", "operator": "In"},
			}}}, namespaces: ml("a")},
			state: api.Unknown, reason: api.ReasonInvalidSpec,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, kids, _ := sync(t, tc.req)
			assert.Equal(t, tc.state, st.State)
			assert.Equal(t, tc.reason, reason(st))
			assert.Equal(t, tc.spent, st.ObservedSpendUSD)
			assert.Equal(t, tc.quotas, quotaNamespaces(kids))
			var listed []string
			for _, n := range st.Namespaces {
				listed = append(listed, n.Namespace)
			}
			assert.Equal(t, tc.namespaces, listed)
		})
	}
}

func TestAnUnreadableNamespaceIsNamedInTheBreakdownAndTheCondition(t *testing.T) {
	st, _, _ := sync(t, clusterRequest{
		namespaces: ml("a", "b"), configMaps: []configMap{ledger("a", "100"), ledger("b", "12,5")},
	})
	require.Len(t, st.Namespaces, 2)
	assert.Equal(t, api.ReasonInvalidCostData, st.Namespaces[0].Reading)
	assert.Contains(t, st.Namespaces[0].Message, "ConfigMap b/llm-spend")
	assert.Equal(t, api.ReadingOK, st.Namespaces[1].Reading)
	assert.Equal(t, int64(100), *st.Namespaces[1].SharePercent)
	c := meta.FindStatusCondition(st.Conditions, api.ConditionBudgetEvaluated)
	require.NotNil(t, c)
	assert.Contains(t, c.Message, "1 unreadable namespaces skipped")
}

func TestFiveHundredNamespacesListTheTopFiftyAndSumThemAll(t *testing.T) {
	r := clusterRequest{namespaces: map[string]map[string]string{}, spec: map[string]any{"limitUSD": "200000"}}
	for i := 1; i <= 500; i++ {
		ns := fmt.Sprintf("team-%03d", i)
		r.namespaces[ns] = map[string]string{"department": "ml"}
		r.configMaps = append(r.configMaps, ledger(ns, fmt.Sprintf("%d.01", i)))
	}
	st, _, _ := sync(t, r)
	require.Equal(t, api.UnderBudget, st.State)
	// 1.01 + 2.01 + ... + 500.01 = 125250 + 5.00
	assert.Equal(t, "125255.00", st.ObservedSpendUSD)
	require.NotNil(t, st.NamespaceCount)
	assert.Equal(t, int32(500), *st.NamespaceCount)
	require.Len(t, st.Namespaces, api.MaxNamespaces)
	assert.Equal(t, int32(450), st.NamespacesOmitted)
	assert.Equal(t, "team-500", st.Namespaces[0].Namespace)
	assert.Equal(t, "team-451", st.Namespaces[49].Namespace)
	assert.Equal(t, "500.01", st.Namespaces[0].ObservedSpendUSD)
}

func TestFiveHundredBlockedNamespacesEachGetTheirQuota(t *testing.T) {
	r := clusterRequest{namespaces: map[string]map[string]string{}}
	for i := 1; i <= 500; i++ {
		ns := fmt.Sprintf("team-%03d", i)
		r.namespaces[ns] = map[string]string{"department": "ml"}
		r.configMaps = append(r.configMaps, ledger(ns, "3"))
	}
	st, kids, _ := sync(t, r)
	require.Equal(t, api.OverBudget, st.State)
	assert.Len(t, st.Enforcement.Namespaces, 500)
	assert.Len(t, quotaNamespaces(kids), 500)
}

func TestABudgetOverTooManyNamespacesNamesTheBoundAndClosesNoneAnew(t *testing.T) {
	const overAll = "spec.namespaceSelector: Too many: 20001: must have at most 20000 items " +
		"(MaxSelectedNamespaces): narrow the selector or split the budget"
	const overQuotas = `spec.enforcement.gate: Invalid value: "Both": a ResourceQuota in each of 8001 namespaces is ` +
		"more than 8000 (MaxQuotaNamespaces): use gate Policy, narrow the selector or split the budget"
	cases := map[string]struct {
		gate       string
		namespaces int
		refused    string // the message naming the bound; empty when every namespace is closed
	}{
		"gate Policy at the bound closes every namespace": {"Policy", api.MaxSelectedNamespaces, ""},
		"gate Policy one past it closes none":             {"Policy", api.MaxSelectedNamespaces + 1, overAll},
		"gate Both at its quota bound closes every one":   {"Both", api.MaxQuotaNamespaces, ""},
		"gate Both one past it closes none":               {"Both", api.MaxQuotaNamespaces + 1, overQuotas},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := clusterRequest{namespaces: map[string]map[string]string{}, spec: map[string]any{"enforcement": map[string]any{
				"action": "BlockNewWorkloads", "resources": []string{"jobs.batch"}, "gate": tc.gate,
			}}}
			for i := range tc.namespaces {
				r.namespaces[fmt.Sprintf("team-%05d", i)] = map[string]string{"department": "ml"}
			}
			r.configMaps = []configMap{ledger("team-00000", "2000")}
			st, kids, _ := sync(t, r)
			if tc.refused != "" {
				require.Equal(t, api.Unknown, st.State)
				assert.False(t, st.Enforcement.Blocking)
				assert.Empty(t, quotaNamespaces(kids))
				assert.Equal(t, tc.refused, st.Conditions[0].Message)
				return
			}
			require.Equal(t, api.OverBudget, st.State)
			assert.Len(t, st.Enforcement.Namespaces, tc.namespaces)
			if tc.gate == "Both" {
				assert.Len(t, quotaNamespaces(kids), tc.namespaces)
			}
		})
	}
}

func TestABlockingBudgetPushedPastTheBoundKeepsItsBlockAndSaysWhy(t *testing.T) {
	cases := map[string]struct {
		gate    string
		past    int
		message string // what BudgetEvaluated says
	}{
		"one namespace past MaxSelectedNamespaces": {"Policy", api.MaxSelectedNamespaces + 1,
			"spec.namespaceSelector: Too many: 20001: must have at most 20000 items (MaxSelectedNamespaces)"},
		"one quota past MaxQuotaNamespaces": {"Both", api.MaxQuotaNamespaces + 1,
			"a ResourceQuota in each of 8001 namespaces is more than 8000 (MaxQuotaNamespaces)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := map[string]any{"enforcement": map[string]any{
				"action": "BlockNewWorkloads", "resources": []string{"jobs.batch"}, "gate": tc.gate,
			}}
			blocking := clusterRequest{spec: spec, namespaces: ml("team-00000", "team-00001"),
				configMaps: []configMap{ledger("team-00000", "2000")}}
			before, _, _ := sync(t, blocking)
			require.True(t, before.Enforcement.Blocking)

			grown := clusterRequest{spec: spec, namespaces: map[string]map[string]string{}, status: &before,
				configMaps: blocking.configMaps, quotasIn: []string{"team-00000", "team-00001"}}
			for i := range tc.past {
				grown.namespaces[fmt.Sprintf("team-%05d", i)] = map[string]string{"department": "ml"}
			}
			st, kids, _ := sync(t, grown)

			assert.Equal(t, api.Unknown, st.State)
			evaluated := meta.FindStatusCondition(st.Conditions, api.ConditionBudgetEvaluated)
			require.NotNil(t, evaluated)
			assert.Equal(t, api.ReasonTooManyNamespaces, evaluated.Reason)
			assert.Contains(t, evaluated.Message, tc.message)
			require.True(t, st.Enforcement.Blocking, "a namespace too many must not lift the block")
			assert.Equal(t, []string{"team-00000", "team-00001"}, st.Enforcement.Namespaces,
				"the block holds where it was")
			require.NotNil(t, st.Enforcement.BlockedOn)
			assert.Equal(t, before.Enforcement.BlockedOn.Reading, st.Enforcement.BlockedOn.Reading)
			assert.True(t, before.Enforcement.BlockedOn.ReadAt.Equal(&st.Enforcement.BlockedOn.ReadAt))
			assert.Contains(t, st.Enforcement.Reason, "keeps blocking")
			assert.Contains(t, st.Enforcement.Reason, api.ReasonTooManyNamespaces)
			if tc.gate == "Both" {
				assert.Equal(t, []string{"team-00000", "team-00001"}, quotaNamespaces(kids))
			}
		})
	}
}

func TestEventsOfTheClusterBudgetGoToDefault(t *testing.T) {
	_, kids, _ := sync(t, clusterRequest{namespaces: ml("a"), configMaps: []configMap{ledger("a", "2000")}})
	var events int
	for _, k := range kids {
		if e, ok := k.(Event); ok {
			events++
			assert.Equal(t, "default", e.Metadata.Namespace)
			assert.Equal(t, api.ClusterKind, e.InvolvedObject.Kind)
			assert.Empty(t, e.InvolvedObject.Namespace)
			assert.Equal(t, "ml-department", e.Metadata.Labels[api.LabelClusterBudget])
		}
	}
	assert.Positive(t, events)
}

func TestFinalizeWaitsForTheQuotasOfEveryNamespace(t *testing.T) {
	cases := []struct {
		name      string
		quotasIn  []string
		finalized bool
	}{
		{"quotas left in two namespaces keep the budget", []string{"a", "b"}, false},
		{"no quota left lets it go", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, kids, resp := sync(t, clusterRequest{namespaces: ml("a", "b"), quotasIn: tc.quotasIn, finalizing: true})
			assert.Empty(t, kids)
			assert.Equal(t, tc.finalized, resp.Finalized)
		})
	}
}

func TestCustomizeRelatesNamespacesAndTheirSpendSources(t *testing.T) {
	req := clusterRequest{spec: map[string]any{"namespaceSelector": map[string]any{"matchExpressions": []any{
		map[string]any{"key": "department", "operator": "In", "values": []string{"ml", "search"}},
	}}}}
	resp, err := ClusterBudget{}.Customize(metacontroller.CustomizeRequest{Parent: req.build(t).Parent})
	require.NoError(t, err)
	require.Len(t, resp.RelatedResources, 2)
	ns, cms := resp.RelatedResources[0], resp.RelatedResources[1]
	assert.Equal(t, "namespaces", ns.Resource)
	assert.Equal(t, "department", ns.LabelSelector.MatchExpressions[0].Key)
	assert.Equal(t, "configmaps", cms.Resource)
	assert.Equal(t, ns.LabelSelector, cms.NamespaceSelector)
	assert.Equal(t, map[string]string{api.LabelSpendSource: "llm-spend"}, cms.LabelSelector.MatchLabels)
}

func TestARequestWithoutParentIsRefused(t *testing.T) {
	_, _, err := ClusterBudget{}.Sync(metacontroller.CompositeRequest{}, clusterNow)
	require.ErrorAs(t, err, new(*metacontroller.RequestError))
	_, err = ClusterBudget{}.Customize(metacontroller.CustomizeRequest{Parent: json.RawMessage(`{"metadata":{}}`)})
	require.ErrorAs(t, err, new(*metacontroller.RequestError))
}

// TestNoRelatedObjectIsSkippedSilently reads related objects written as raw JSON, which can carry what only a
// crafted request can: values that are not strings and members written twice.
func TestNoRelatedObjectIsSkippedSilently(t *testing.T) {
	const (
		nsA  = `{"metadata": {"name": "a", "labels": {"department": "ml"}}}`
		cmA  = `{"metadata": {"name": "llm-spend", "namespace": "a", "labels": {"llmbudget.dev/spend-source": "llm-spend"}},`
		read = `{"namespace": "a", "reading": "Read", "observedSpendUSD": "10.00", "sharePercent": 100}`
	)
	cases := map[string]struct {
		namespaces, configMaps map[string]string
		reason                 string // the sum's; empty when read
		message                string // the sum's
		namespace              string // status.namespaces[0], as JSON
	}{
		"a readable ledger is summed": {
			namespaces: map[string]string{"a": nsA},
			configMaps: map[string]string{"a/llm-spend": cmA + `"data": {"2026-12-05": "10"}}`},
			namespace:  read,
		},
		"a ConfigMap listed under two keys counts once": {
			namespaces: map[string]string{"a": nsA},
			configMaps: map[string]string{
				"a/llm-spend": cmA + `"data": {"2026-12-05": "10"}}`, "a/copy": cmA + `"data": {"2026-12-05": "10"}}`,
			},
			namespace: read,
		},
		"a data value that is not a string names namespace, ConfigMap and key": {
			namespaces: map[string]string{"a": nsA},
			configMaps: map[string]string{"a/llm-spend": cmA + `"data": {"2026-12-05": 10}}`},
			reason:     api.ReasonInvalidCostData,
			message:    `ConfigMap a/llm-spend: key "2026-12-05": the value is 10, not a string (1 of 1 namespaces unreadable)`,
			namespace: `{"namespace": "a", "reading": "InvalidCostData",
				"message": "ConfigMap a/llm-spend: key \"2026-12-05\": the value is 10, not a string"}`,
		},
		"a key written twice is refused, not read last-wins": {
			namespaces: map[string]string{"a": nsA},
			configMaps: map[string]string{"a/llm-spend": cmA + `"data": {"2026-12-05": "900", "2026-12-05": "0"}}`},
			reason:     api.ReasonInvalidCostData,
			message:    `ConfigMap a/llm-spend: duplicate field "data.2026-12-05" (1 of 1 namespaces unreadable)`,
			namespace: `{"namespace": "a", "reading": "InvalidCostData",
				"message": "ConfigMap a/llm-spend: duplicate field \"data.2026-12-05\""}`,
		},
		"a ConfigMap whose labels do not decode is named by its key": {
			namespaces: map[string]string{"a": nsA},
			configMaps: map[string]string{"a/llm-spend": `{"metadata": {"labels": {"llmbudget.dev/spend-source": 1}}}`},
			reason:     api.ReasonInvalidCostData,
			message: `ConfigMap a/llm-spend: label "llmbudget.dev/spend-source": the value is 1, not a string ` +
				`(1 of 1 namespaces unreadable)`,
			namespace: `{"namespace": "a", "reading": "InvalidCostData",
				"message": "ConfigMap a/llm-spend: label \"llmbudget.dev/spend-source\": the value is 1, not a string"}`,
		},
		"a Namespace whose labels do not decode is named": {
			namespaces: map[string]string{"a": `{"metadata": {"name": "a", "labels": {"department": ["ml"]}}}`},
			reason:     api.ReasonInvalidCostData,
			message:    `namespace a: label "department": the value is not a string (1 of 1 namespaces unreadable)`,
			namespace: `{"namespace": "a", "reading": "InvalidCostData",
				"message": "namespace a: label \"department\": the value is not a string"}`,
		},
	}
	spec := api.Spec{
		NamespaceSelector: &api.LabelSelector{MatchLabels: map[string]api.LabelValue{"department": "ml"}},
		CostSource:        api.CostSource{SpendSource: "llm-spend", Format: api.DailyLedger},
	}
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	w := period.Window{Start: start, End: start.AddDate(0, 1, 0)}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			related := metacontroller.ObjectMap{metacontroller.NamespaceGroup: {}, metacontroller.ConfigMapGroup: {}}
			for k, v := range tc.namespaces {
				related[metacontroller.NamespaceGroup][k] = metacontroller.Raw(v)
			}
			for k, v := range tc.configMaps {
				related[metacontroller.ConfigMapGroup][k] = metacontroller.Raw(v)
			}
			sp := source.ReadCluster(api.LLMCostBudget{Kind: api.ClusterKind, Spec: spec}, related, w)
			ns := sp.Namespaces
			assert.Equal(t, tc.reason, sp.Reason)
			if tc.reason != "" {
				assert.Equal(t, tc.message, sp.Message)
			}
			require.NotEmpty(t, ns.Breakdown)
			assert.JSONEq(t, tc.namespace, string(mustJSON(t, ns.Breakdown[0])))
		})
	}
}

// Nothing a namespace controls can make its department's budget unstorable: 50 namespaces, each with 256 KiB of
// annotations on its spend ConfigMap, echoed in messages, must leave a status far below what etcd stores.
func TestAStatusStaysSmallWhateverTheNamespacesWrite(t *testing.T) {
	huge := strings.Repeat("2026-12-01T00:00:00Z", 256*1024/20)
	cases := map[string]func(ns string) configMap{
		"a period-start annotation of 256 KiB": func(ns string) configMap {
			return total(ns, "1", huge)
		},
		"a ledger key of 256 KiB": func(ns string) configMap {
			cm := ledger(ns, "1")
			cm.data[strings.Repeat("k", 256*1024)] = "1"
			cm.annotations = map[string]string{"note": huge}
			return cm
		},
	}
	for name, cm := range cases {
		t.Run(name, func(t *testing.T) {
			r := clusterRequest{namespaces: map[string]map[string]string{}}
			if name == "a period-start annotation of 256 KiB" {
				r.spec = map[string]any{"costSource": map[string]any{"spendSource": "llm-spend", "key": "spend-usd"}}
			}
			for i := range 50 {
				ns := fmt.Sprintf("team-%02d", i)
				r.namespaces[ns] = map[string]string{"department": "ml"}
				r.configMaps = append(r.configMaps, cm(ns))
			}
			st, kids, _ := sync(t, r)
			require.Equal(t, api.Unknown, st.State)
			encoded := mustJSON(t, st)
			assert.Less(t, len(encoded), 256*1024, "the encoded status")
			for _, k := range kids {
				assert.Less(t, len(mustJSON(t, k)), 16*1024, "each child")
			}
			for _, ns := range st.Namespaces {
				assert.Less(t, len(ns.Message), 600, ns.Namespace)
				assert.Contains(t, ns.Message, "ConfigMap "+ns.Namespace+"/llm-spend")
			}
			for _, c := range st.Conditions {
				assert.Less(t, len(c.Message), 2048, c.Type)
				assert.True(t, utf8.ValidString(c.Message), c.Type)
			}
		})
	}
}

func TestAnUnreadableNamespaceNeverLiftsTheBlockInTheSamePeriod(t *testing.T) {
	over := clusterRequest{namespaces: ml("a", "b"), configMaps: []configMap{ledger("a", "900"), ledger("b", "300")}}
	st, _, _ := sync(t, over)
	require.True(t, st.Enforcement.Blocking, "1200 of 1000 USD")
	cases := map[string]struct {
		configMaps []configMap
		blocks     bool
	}{
		"a namespace's ConfigMap goes": {configMaps: []configMap{ledger("b", "300")}, blocks: true},
		"a namespace's data is garbled": {
			configMaps: []configMap{ledger("a", "garbage"), ledger("b", "300")}, blocks: true,
		},
		"readable spend under the limit lifts it": {configMaps: []configMap{ledger("a", "100"), ledger("b", "300")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			later := clusterRequest{
				namespaces: ml("a", "b"), configMaps: tc.configMaps, status: &st, quotasIn: []string{"a", "b"},
			}
			got, kids, _ := sync(t, later)
			assert.Equal(t, tc.blocks, got.Enforcement.Blocking)
			if tc.blocks {
				assert.Equal(t, []string{"a", "b"}, quotaNamespaces(kids), "every selected namespace stays closed")
				assert.Contains(t, got.Enforcement.Reason, "cannot be read in full now (1 unreadable namespaces")
				require.NotNil(t, got.Enforcement.BlockedOn)
				assert.Equal(t, st.Enforcement.BlockedOn.Reading, got.Enforcement.BlockedOn.Reading)
				assert.True(t, st.Enforcement.BlockedOn.ReadAt.Equal(&got.Enforcement.BlockedOn.ReadAt))
			}
		})
	}
}

func TestTheSumIsAsOldAsItsOldestSource(t *testing.T) {
	stamped := func(cm configMap, asOf string) configMap {
		cm.annotations = map[string]string{api.AnnotationSpendAsOf: asOf}
		return cm
	}
	second := func(cm configMap) configMap { cm.name = "llm-spend-gpu"; return cm }
	cases := []struct {
		name       string
		policy     api.FailurePolicy
		configMaps []configMap
		status     metav1.ConditionStatus
		message    string
		state      api.State
	}{
		{
			name: "every source within maxAge", policy: api.FailClosed,
			configMaps: []configMap{stamped(ledger("ml-a", "10"), "2026-12-10T11:50:00Z"),
				stamped(ledger("ml-b", "20"), "2026-12-10T11:40:00Z"),
				stamped(second(ledger("ml-b", "5")), "2026-12-10T11:45:00Z")},
			status: metav1.ConditionFalse, state: api.UnderBudget,
			message: "ConfigMap ml-b/llm-spend (the oldest of 3 spend sources) holds spend as of 2026-12-10T11:40:00Z, " +
				"within maxAge 1h until 2026-12-10T12:40:00Z",
		},
		{
			name: "one source past maxAge, under Open", policy: api.FailOpen,
			configMaps: []configMap{stamped(ledger("ml-a", "10"), "2026-12-10T11:50:00Z"),
				stamped(ledger("ml-b", "20"), "2026-12-10T10:30:00Z")},
			status: metav1.ConditionTrue, state: api.UnderBudget,
			message: "ConfigMap ml-b/llm-spend (the oldest of 2 spend sources) holds spend as of 2026-12-10T10:30:00Z, " +
				"which reached maxAge 1h at 2026-12-10T11:30:00Z",
		},
		{
			name: "one source past maxAge, under Closed", policy: api.FailClosed,
			configMaps: []configMap{stamped(ledger("ml-a", "10"), "2026-12-10T11:50:00Z"),
				stamped(ledger("ml-b", "20"), "2026-12-10T10:30:00Z")},
			status: metav1.ConditionTrue, state: api.Unknown,
			message: "ConfigMap ml-b/llm-spend (the oldest of 2 spend sources) holds spend as of 2026-12-10T10:30:00Z, " +
				"which reached maxAge 1h at 2026-12-10T11:30:00Z",
		},
		{
			name: "a source without a stamp is older than any", policy: api.FailOpen,
			configMaps: []configMap{stamped(ledger("ml-a", "10"), "2026-12-10T10:00:00Z"), ledger("ml-b", "20")},
			status:     metav1.ConditionTrue, state: api.UnderBudget,
			message: "ConfigMap ml-b/llm-spend (the oldest of 2 spend sources) has no llmbudget.dev/spend-as-of " +
				"annotation, so the age of its spend is unknown: stale under maxAge 1h",
		},
		{
			name: "an unreadable namespace skipped under Open does not age the sum", policy: api.FailOpen,
			configMaps: []configMap{stamped(ledger("ml-a", "10"), "2026-12-10T11:50:00Z"),
				stamped(ledger("ml-b", "x"), "2026-12-01T00:00:00Z")},
			status: metav1.ConditionFalse, state: api.UnderBudget,
			message: "ConfigMap ml-a/llm-spend holds spend as of 2026-12-10T11:50:00Z, within maxAge 1h until " +
				"2026-12-10T12:50:00Z",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, _, _ := sync(t, clusterRequest{
				spec: map[string]any{
					"costSource": map[string]any{"spendSource": "llm-spend", "format": "DailyLedger", "maxAge": "1h"},
					"enforcement": map[string]any{"action": "BlockNewWorkloads", "resources": []string{"jobs.batch"},
						"failurePolicy": string(tc.policy)},
				},
				namespaces: ml("ml-a", "ml-b"), configMaps: tc.configMaps,
			})
			c := meta.FindStatusCondition(st.Conditions, api.ConditionSpendStale)
			require.NotNil(t, c, "%+v", st.Conditions)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.message, c.Message)
			assert.Equal(t, tc.state, st.State)
		})
	}
}
