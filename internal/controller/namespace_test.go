package controller

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

func teamBudget(ns, name, enforcement string) metacontroller.Raw {
	return metacontroller.Raw(fmt.Sprintf(`{"metadata":{"name":%q,"namespace":%q},"status":{"enforcement":%s}}`,
		name, ns, enforcement))
}

func clusterBudget(name, enforcement string) metacontroller.Raw {
	return metacontroller.Raw(fmt.Sprintf(`{"metadata":{"name":%q},"status":{"enforcement":%s}}`, name, enforcement))
}

func namespaceRequest(labels string, team, cluster map[string]metacontroller.Raw) metacontroller.DecoratorRequest {
	return metacontroller.DecoratorRequest{
		Object:  json.RawMessage(`{"metadata":{"name":"team-ml","labels":` + labels + `}}`),
		Related: metacontroller.ObjectMap{budgetGroup: team, clusterBudgetGroup: cluster},
	}
}

const (
	blocks = `{"blocking":true,"scope":"Namespace",` +
		`"message":"LLMCostBudget team-ml/chatbot is OverBudget (612.00 of 500.00 USD)"}`
	warns = `{"blocking":true,"scope":"Namespace","mode":"Warn",` +
		`"message":"LLMCostBudget team-ml/chatbot is OverBudget"}`
	idle      = `{"blocking":false,"reason":"the budget is UnderBudget: new workloads are admitted"}`
	closesIt  = `{"blocking":true,"namespaces":["team-ml","other"],"message":"ClusterLLMCostBudget ml is OverBudget"}`
	closesNot = `{"blocking":true,"namespaces":["other"],"message":"ClusterLLMCostBudget ml is OverBudget"}`
)

func TestSyncLabelsTheNamespaceWhileABudgetBlocksIt(t *testing.T) {
	cases := []struct {
		name    string
		team    map[string]metacontroller.Raw
		cluster map[string]metacontroller.Raw
		want    []string
	}{
		{"a blocking team budget", map[string]metacontroller.Raw{
			"team-ml/chatbot": teamBudget("team-ml", "chatbot", blocks)}, nil, []string{"LLMCostBudget team-ml/chatbot"}},
		{"a cluster budget that closes the namespace", nil,
			map[string]metacontroller.Raw{"ml": clusterBudget("ml", closesIt)}, []string{"ClusterLLMCostBudget ml"}},
		{"a cluster budget that closes other namespaces only", nil,
			map[string]metacontroller.Raw{"ml": clusterBudget("ml", closesNot)}, nil},
		{"a warn-mode budget, which refuses nothing", map[string]metacontroller.Raw{
			"team-ml/chatbot": teamBudget("team-ml", "chatbot", warns)}, nil, nil},
		{"a budget that does not block", map[string]metacontroller.Raw{
			"team-ml/chatbot": teamBudget("team-ml", "chatbot", idle)}, nil, nil},
		{"a budget of another namespace", map[string]metacontroller.Raw{
			"other/chatbot": teamBudget("other", "chatbot", blocks)}, nil, nil},
		{"a budget this version cannot read", map[string]metacontroller.Raw{
			"team-ml/chatbot": metacontroller.Raw(`{"status":{"enforcement":{"blocking":"yes"}}}`)}, nil, nil},
		{"no budgets at all", nil, nil, nil},
		{"a team budget listed under two keys, named once", map[string]metacontroller.Raw{
			"team-ml/chatbot": teamBudget("team-ml", "chatbot", blocks),
			"chatbot":         teamBudget("team-ml", "chatbot", blocks),
		}, nil, []string{"LLMCostBudget team-ml/chatbot"}},
		{"a cluster budget listed under two keys, named once", nil, map[string]metacontroller.Raw{
			"ml": clusterBudget("ml", closesIt), "/ml": clusterBudget("ml", closesIt),
		}, []string{"ClusterLLMCostBudget ml"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, sum, err := Namespace{}.Sync(namespaceRequest(`{"team":"ml"}`, tc.team, tc.cluster), time.Time{})
			require.NoError(t, err)
			assert.Equal(t, strings.Join(tc.want, ", "), logged(sum, "budget"))
			require.Len(t, resp.Labels, 2, "only its own labels")
			require.Len(t, resp.Annotations, 1, "only its own annotation")
			if tc.want == nil {
				assert.Nil(t, resp.Labels[LabelBlocked], "the label is removed")
				assert.Nil(t, resp.Annotations[AnnotationBlockedBy])
				return
			}
			require.NotNil(t, resp.Labels[LabelBlocked])
			assert.Equal(t, "true", *resp.Labels[LabelBlocked])
			assert.Equal(t, len(tc.want), strings.Count(*resp.Annotations[AnnotationBlockedBy], "is OverBudget"),
				"each budget is named once")
		})
	}
}

func TestTheGateSkipsANamespaceOnlyWhileNoneOfItsBudgetsBlocks(t *testing.T) {
	cases := []struct {
		name string
		team map[string]metacontroller.Raw
		want string // LabelBudgetsBlocking's value
	}{
		{"budgets whose label is yet to be removed, which no longer block", map[string]metacontroller.Raw{
			"team-ml/a": teamBudget("team-ml", "a", idle), "team-ml/b": teamBudget("team-ml", "b", idle)}, "false"},
		{"a budget without a status yet",
			map[string]metacontroller.Raw{"team-ml/a": metacontroller.Raw(`{"metadata":{"namespace":"team-ml"}}`)}, "false"},
		{"one blocking budget among idle ones", map[string]metacontroller.Raw{
			"team-ml/a": teamBudget("team-ml", "a", idle), "team-ml/b": teamBudget("team-ml", "b", blocks)}, "true"},
		{"a warn-mode budget, which the warn policy reads", map[string]metacontroller.Raw{
			"team-ml/a": teamBudget("team-ml", "a", warns)}, "true"},
		{"a budget whose status this version cannot read", map[string]metacontroller.Raw{
			"team-ml/a": teamBudget("team-ml", "a", `{"blocking":"yes"}`)}, "true"},
		{"a budget it cannot read at all", map[string]metacontroller.Raw{
			"team-ml/a": teamBudget("team-ml", "a", idle), "team-ml/b": metacontroller.Raw(`[]`)}, "true"},
		{"a blocking budget of another namespace only", map[string]metacontroller.Raw{
			"other/a": teamBudget("other", "a", blocks)}, "false"},
		{"no budgets", nil, "false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, _, err := Namespace{}.Sync(namespaceRequest(`{}`, tc.team, nil), time.Time{})
			require.NoError(t, err)
			got := resp.Labels[LabelBudgetsBlocking]
			require.NotNil(t, got, "always set")
			assert.Equal(t, tc.want, *got)
		})
	}
}

func TestTheAnnotationStaysSmallWhateverTheBudgetsSay(t *testing.T) {
	cluster := map[string]metacontroller.Raw{}
	for i := range 100 {
		msg, err := json.Marshal(strings.Repeat("é", 10000))
		require.NoError(t, err)
		cluster[fmt.Sprint("b", i)] = clusterBudget(fmt.Sprintf("b%03d", i),
			`{"blocking":true,"namespaces":["team-ml"],"message":`+string(msg)+`}`)
	}
	resp, sum, err := Namespace{}.Sync(namespaceRequest(`{}`, nil, cluster), time.Time{})
	require.NoError(t, err)
	assert.Equal(t, "ClusterLLMCostBudget b000, ClusterLLMCostBudget b001, ClusterLLMCostBudget b002, and 97 more",
		logged(sum, "budget"), "a log line names three")
	got := *resp.Annotations[AnnotationBlockedBy]
	assert.Less(t, len(got), (maxListed+1)*(maxReason+2))
	assert.True(t, strings.HasSuffix(got, "; and 92 more"), got)
}

func TestASettledNamespaceIsNotLookedAtAgainAndAnUnsettledOneIs(t *testing.T) {
	team := map[string]metacontroller.Raw{"team-ml/chatbot": teamBudget("team-ml", "chatbot", blocks)}
	resp, _, err := Namespace{}.Sync(namespaceRequest(`{}`, team, nil), time.Time{})
	require.NoError(t, err)
	assert.Equal(t, settleRetry.Seconds(), resp.ResyncAfterSeconds, "the label is still to be set")
	resp, _, err = Namespace{}.Sync(namespaceRequest(`{}`, nil, nil), time.Time{})
	require.NoError(t, err)
	assert.Equal(t, settleRetry.Seconds(), resp.ResyncAfterSeconds, "budgets-blocking is still to be set")
	resp, _, err = Namespace{}.Sync(namespaceRequest(`{"llmbudget.dev/budgets-blocking":"false"}`, nil, nil), time.Time{})
	require.NoError(t, err)
	assert.Zero(t, resp.ResyncAfterSeconds, "nothing to set or remove")
}

func TestCustomizeRelatesTheNamespacesBudgetsAndEveryClusterBudgetLabelledBlocking(t *testing.T) {
	req := metacontroller.CustomizeRequest{Parent: json.RawMessage(`{"metadata":{"name":"team-ml"}}`)}
	resp, err := Namespace{}.Customize(req)
	require.NoError(t, err)
	labelled := &metav1.LabelSelector{MatchLabels: map[string]string{"llmbudget.dev/blocking": "true"}}
	assert.Equal(t, []metacontroller.RelatedResourceRule{
		{APIVersion: "llmbudget.dev/v1alpha1", Resource: "llmcostbudgets", Namespace: "team-ml", LabelSelector: labelled},
		{APIVersion: "llmbudget.dev/v1alpha1", Resource: "clusterllmcostbudgets", LabelSelector: labelled},
	}, resp.RelatedResources)
}

func TestARequestWithoutANamespaceIsRefused(t *testing.T) {
	for _, body := range []string{``, `null`, `{"metadata":{}}`, `{"metadata":{"name":7}}`} {
		_, _, err := Namespace{}.Sync(metacontroller.DecoratorRequest{Object: json.RawMessage(body)}, time.Time{})
		var re *metacontroller.RequestError
		assert.ErrorAs(t, err, &re, "%q", body)
		_, err = Namespace{}.Customize(metacontroller.CustomizeRequest{Parent: json.RawMessage(body)})
		assert.ErrorAs(t, err, &re, "%q", body)
	}
}

func FuzzNamespacePosture(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"team-ml","labels":{"llmbudget.dev/blocked":"true"}}}`),
		[]byte(`{"metadata":{"name":"ml"},"status":{"enforcement":{"blocking":true,"namespaces":["team-ml"]}}}`))
	f.Add([]byte(`{"metadata":{"name":"team-ml"}}`),
		[]byte(`{"metadata":{"name":"b","namespace":"team-ml"},"status":{"enforcement":{"blocking":true}}}`))
	f.Fuzz(func(t *testing.T, object, budget []byte) {
		req := metacontroller.DecoratorRequest{Object: object, Related: metacontroller.ObjectMap{
			clusterBudgetGroup: {"ml": budget}, budgetGroup: {"team-ml/b": budget},
		}}
		resp, _, err := Namespace{}.Sync(req, time.Time{})
		if err != nil {
			return
		}
		if len(resp.Labels) != 2 || len(resp.Annotations) != 1 {
			t.Fatalf("touched keys not its own: %v %v", resp.Labels, resp.Annotations)
		}
		var b struct {
			Metadata struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"metadata"`
			Status json.RawMessage `json:"status"`
		}
		var ns namespace
		require.NoError(t, decode.Lenient(object, &ns, "object"), "Sync read it")
		ours := decode.Lenient(budget, &b, "budget") != nil ||
			b.Metadata.Namespace == ns.Metadata.Name && api.StatusMayRefuse(ref(api.Kind, metacontroller.ObjectMeta{
				Namespace: b.Metadata.Namespace, Name: b.Metadata.Name}), b.Status)
		if open := resp.Labels[LabelBudgetsBlocking]; open == nil || *open == "false" && ours {
			t.Fatalf("a budget the gate decorator labels blocking, yet the namespace is skipped: %s", budget)
		}
	})
}

// logged is the value of a hook call's log attribute.
func logged(sum metacontroller.Summary, key string) string {
	for _, a := range sum.Attrs {
		if a.Key == key {
			return a.Value.String()
		}
	}
	return ""
}
