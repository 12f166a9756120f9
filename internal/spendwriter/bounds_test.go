package spendwriter_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/llmbudget/llmbudget/internal/promspend"
	"github.com/llmbudget/llmbudget/internal/spendwriter"
)

// hungPrometheus answers every query with one model's series, except those of team "hung": it holds them until
// the writer gives up.
func hungPrometheus(t *testing.T) promspend.Querier {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ParseForm() == nil && strings.Contains(r.Form.Get("query"), `team="hung"`) {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[` +
			`{"metric":{"model":"gpt-4o"},"value":[1795176000,"1"]}]}}`))
	}))
	t.Cleanup(srv.Close)
	c, err := promspend.NewClient(srv.URL, promspend.DefaultLimits)
	require.NoError(t, err)
	return c
}

// twenty are 20 budgets of team-00 to team-19, team-07's Prometheus series being those of team "hung".
func twenty(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var budgets []*unstructured.Unstructured
	for i := range 20 {
		team := fmt.Sprintf("t%d", i)
		if i == 7 {
			team = "hung"
		}
		budgets = append(budgets, budget(t, fmt.Sprintf("team-%02d", i), "chatbot", fmt.Sprintf("uid-%02d", i),
			`{configMapName: llm-spend, key: total, prometheus: {source: litellm, selector: {team: `+team+`}}}`))
	}
	return budgets
}

// A Prometheus that never answers one budget's queries holds one worker, for at most the budget's timeout or
// until the run's deadline: the other budgets are written, and the hung one gets its Event.
func TestOneHungPrometheusDoesNotStopTheOtherBudgetsAndGetsItsEvent(t *testing.T) {
	tests := map[string]struct {
		timeout, deadline time.Duration
		wantReason        string
	}{
		"the budget's timeout ends it": {time.Second, time.Minute, "context deadline exceeded"},
		"the run's deadline ends it": {time.Hour, 5 * time.Second,
			"(the run's deadline, --deadline, passed)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRun(t, hungPrometheus(t), twenty(t))
			r.w.Timeout, r.w.Concurrency, r.w.RequestTimeout = tc.timeout, 8, 20*time.Second
			ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
			defer cancel()

			res, err := r.w.Run(ctx, "", now)
			require.NoError(t, err)
			assert.Equal(t, []string{"team-07/chatbot"}, res.Failed)
			assert.Len(t, res.Written, 19)
			assert.NotContains(t, res.Written, "team-07/chatbot")
			for i := range 20 {
				_, err := r.kube.CoreV1().ConfigMaps(fmt.Sprintf("team-%02d", i)).Get(context.Background(),
					"llm-spend", metav1.GetOptions{})
				assert.Equal(t, i != 7, err == nil, "team-%02d's ConfigMap", i)
			}
			events, err := r.kube.CoreV1().Events("team-07").List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, events.Items, 1)
			assert.Equal(t, "SpendWriteFailed", events.Items[0].Reason)
			assert.Contains(t, events.Items[0].Message, tc.wantReason)
		})
	}
}

// Budgets the run never reached before its deadline are failed, each with its Event and log line.
func TestBudgetsNotReachedBeforeTheDeadlineFailWithTheirEventAndLogLine(t *testing.T) {
	r := newRun(t, hungPrometheus(t), twenty(t)[7:10]) // team-07 hangs the one worker
	r.w.Timeout, r.w.Concurrency = time.Hour, 1
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	res, err := r.w.Run(ctx, "", now)
	require.NoError(t, err)
	assert.Equal(t, spendwriter.Result{Failed: []string{"team-07/chatbot", "team-08/chatbot", "team-09/chatbot"}},
		res)
	reasons := map[string]any{}
	for _, l := range r.lines(t) {
		if l["msg"] == "spend not written" {
			assert.NotContains(t, l, "eventError")
			reasons[l["budget"].(string)] = l["reason"]
		}
	}
	for _, ns := range []string{"team-08", "team-09"} {
		assert.Contains(t, reasons[ns+"/chatbot"], "not reached before the run's deadline (--deadline")
		events, err := r.kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, events.Items, 1, ns)
		assert.Contains(t, events.Items[0].Message, "not reached before the run's deadline")
	}
}

// pages is an API server serving the budgets' list through serve, which sees each page's options (client-go's
// fake drops Limit and Continue).
type pages struct {
	dynamic.Interface
	serve func(opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
}

func (p pages) Resource(r schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return pagedResource{p.Interface.Resource(r), p.serve}
}

type pagedResource struct {
	dynamic.NamespaceableResourceInterface
	serve func(opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
}

func (r pagedResource) Namespace(string) dynamic.ResourceInterface { return r }

func (r pagedResource) List(_ context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return r.serve(opts)
}

// The budgets are listed in pages of PageSize, following the continue token to the last page.
func TestTheBudgetsAreListedInPagesFollowingTheContinueToken(t *testing.T) {
	all := twenty(t)[:6]
	r := newRun(t, litellm, nil)
	var asked []metav1.ListOptions
	r.w.Dynamic = pages{Interface: r.dyn, serve: func(opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
		asked = append(asked, opts)
		page, ok := map[string]int{"": 0, "page-2": 1, "page-3": 2}[opts.Continue]
		if !ok || len(asked) > 3 {
			return nil, fmt.Errorf("continue %q: no such page", opts.Continue)
		}
		list := &unstructured.UnstructuredList{Object: map[string]any{
			"apiVersion": "llmbudget.dev/v1alpha1", "kind": "LLMCostBudgetList"}}
		for _, b := range all[2*page : 2*page+2] {
			list.Items = append(list.Items, *b)
		}
		if page < 2 {
			list.SetContinue(fmt.Sprintf("page-%d", page+2))
		}
		return list, nil
	}}
	r.w.RequestTimeout = 20 * time.Second

	res, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	assert.Len(t, res.Written, 6)
	require.Len(t, asked, 3)
	for i, opts := range asked {
		assert.Equal(t, int64(spendwriter.PageSize), opts.Limit, "page %d", i+1)
		assert.Equal(t, []string{"", "page-2", "page-3"}[i], opts.Continue, "page %d", i+1)
	}
}

// manyModels answers every query with n models of long names: one series each.
type manyModels int

func (n manyModels) Query(context.Context, string, time.Time) (model.Vector, []string, error) {
	v := make(model.Vector, n)
	for i := range v {
		name := fmt.Sprintf("%0200d", i)
		v[i] = &model.Sample{Metric: model.Metric{"model": model.LabelValue(name)}, Value: 1}
	}
	return v, nil, nil
}

// A ConfigMap the API server would refuse is not applied: the budget fails naming the cap, the others go on.
func TestTheWriterRefusesAConfigMapOverOneMiB(t *testing.T) {
	r := newRun(t, manyModels(5000), twenty(t)[:2])
	res, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	assert.Equal(t, []string{"team-00/chatbot", "team-01/chatbot"}, res.Failed)
	lines := r.lines(t)
	require.NotEmpty(t, lines)
	assert.Contains(t, lines[0]["reason"], "budget team-00/chatbot: ConfigMap team-00/llm-spend encodes to ")
	assert.Contains(t, lines[0]["reason"], "bytes, more than the 1 MiB the API server stores "+
		"(promspend.MaxConfigMapBytes)")
	_, err = r.kube.CoreV1().ConfigMaps("team-00").Get(context.Background(), "llm-spend", metav1.GetOptions{})
	assert.Error(t, err, "nothing applied")
}

// One budget's answers together are capped: past the allowance the budget fails, naming the cap and itself.
func TestTheWriterFailsABudgetWhoseAnswersPassTheAllowance(t *testing.T) {
	r := newRun(t, manyModels(10), twenty(t)[:1])
	r.w.Allowance = promspend.Allowance{Series: 25, Body: 1 << 20}
	res, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	assert.Equal(t, []string{"team-00/chatbot"}, res.Failed)
	lines := r.lines(t)
	require.NotEmpty(t, lines)
	assert.Contains(t, lines[0]["reason"], "budget team-00/chatbot: answers past the cap of one budget's answers: "+
		"25 series and 1 MiB in all")
}

// bigPrometheus answers every query with n series of one model, about 1 KB each, over HTTP: a Client reads it,
// counting its bytes against the run's memory.
func bigPrometheus(t *testing.T, n int) *promspend.Client {
	t.Helper()
	series := make([]string, n)
	for i := range series {
		series[i] = fmt.Sprintf(`{"metric":{"model":"gpt-4o","pod":"%01000d"},"value":[1795176000,"0.001"]}`, i)
	}
	body := `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(series, ",") + `]}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	c, err := promspend.NewClient(srv.URL, promspend.DefaultLimits)
	require.NoError(t, err)
	return c
}

// The budgets computed at once share one memory for their answers: those that find it taken wait for it and are
// written, and a budget whose answers alone pass it fails with its Event, naming it.
func TestTheBudgetsComputedAtOnceShareTheRunsMemoryForTheirAnswers(t *testing.T) {
	var budgets []*unstructured.Unstructured
	for i := range 8 {
		budgets = append(budgets, budget(t, "team-a", fmt.Sprintf("b%d", i), fmt.Sprintf("uid-%d", i),
			strings.Replace(litellmTotal, "llm-spend", fmt.Sprintf("spend-%d", i), 1)))
	}
	// Each budget asks 3 queries of about 300 KB: 900 KB of answers, 7 MB for the 8 at once.
	prom := bigPrometheus(t, 300)
	tests := map[string]struct {
		memory  int64
		written int
	}{
		"3 MiB: the budgets wait for it, and all are written": {3 << 20, 8},
		"512 KiB: every budget passes it alone, and fails":    {512 << 10, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRun(t, prom, budgets)
			r.w.Concurrency, r.w.Memory = 8, tc.memory
			res, err := r.w.Run(context.Background(), "", now)
			require.NoError(t, err)
			assert.Len(t, res.Written, tc.written)
			assert.Len(t, res.Failed, 8-tc.written)
			events, err := r.kube.CoreV1().Events("team-a").List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, events.Items, 8-tc.written, "every budget not written gets its Event")
			for _, ev := range events.Items {
				assert.Equal(t, spendwriter.ReasonSpendWriteFailed, ev.Reason)
				assert.Contains(t, ev.Message, "answers past the memory a run gives the answers of the budgets "+
					"computed at once: past its 524288 bytes of the run's 524288 bytes")
			}
		})
	}
}

func TestTheRunsMemoryIsAnEighthOfTheLimitAndHoldsOneBudgetsAllowance(t *testing.T) {
	tests := map[string]struct{ limit, want int64 }{
		"the CronJob's 256Mi":       {256 << 20, spendwriter.DefaultMemory},
		"1Gi":                       {1 << 30, 128 << 20},
		"64Mi: one budget's 16 MiB": {64 << 20, promspend.DefaultAllowance.Body},
		"no limit":                  {math.MaxInt64, spendwriter.DefaultMemory},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, spendwriter.MemoryFor(tc.limit))
		})
	}
}
