package spendwriter_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/llmbudget/llmbudget/internal/promspend"
	"github.com/llmbudget/llmbudget/internal/spendwriter"
)

// calls are the kube actions of verb on ConfigMap name since the clientset's actions were last cleared.
func (r run) calls(verb, name string) int {
	n := 0
	for _, a := range r.kube.Actions() {
		if a.GetVerb() != verb || a.GetResource().Resource != "configmaps" {
			continue
		}
		if named, ok := a.(interface{ GetName() string }); ok && named.GetName() == name {
			n++
		}
	}
	return n
}

// loop is a Loop over r's writer, its clock at now.
func (r run) loop(clk *clocktesting.FakeClock) spendwriter.Loop {
	return spendwriter.Loop{Writer: r.w, Interval: 15 * time.Second, Clock: clk}
}

// rising is a LiteLLM whose spend counter grows by the cost a test sets.
type rising struct {
	mu   sync.Mutex
	cost float64
}

func (p *rising) set(cost float64) {
	p.mu.Lock()
	p.cost = cost
	p.mu.Unlock()
}

func (p *rising) Query(ctx context.Context, promql string, at time.Time) (model.Vector, []string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return prometheus{{"litellm_spend_metric_total", models("model", map[string]float64{"gpt-4o": p.cost})},
		{"tokens_metric_total", models("model", map[string]float64{"gpt-4o": 100})}}.Query(ctx, promql, at)
}

func TestARunOfTheSameTermGoesOnFromTheCheckpointsInMemoryWithoutReadingOrStoringThemAgain(t *testing.T) {
	prom := &recording{prometheus: litellm}
	r := newRun(t, prom, []*unstructured.Unstructured{budget(t, "team-a", "chatbot", "uid-1", litellmTotal)})
	r.w.Checkpoints, r.w.Settle = "llmbudget-system", 10*time.Minute
	clk := clocktesting.NewFakeClock(now)
	l, kept := r.loop(clk), spendwriter.NewKept()
	checkpoints := spendwriter.CheckpointPrefix + "team-a"

	_, err := l.Cycle(context.Background(), kept)
	require.NoError(t, err)
	assert.Equal(t, 1, r.calls("get", checkpoints), "the first run of a term reads the stored checkpoints")
	assert.Equal(t, 1, r.calls("patch", checkpoints), "and stores those it made")

	r.kube.ClearActions()
	prom.queries = nil
	clk.Step(2 * time.Minute)
	_, err = l.Cycle(context.Background(), kept)
	require.NoError(t, err)
	assert.Equal(t, []string{"1m59s999ms", "9m59s999ms"}, sorted(prom.ranges()),
		"only the two minutes since the checkpoint kept in memory are settled")
	assert.Zero(t, r.calls("get", checkpoints), "the checkpoints are not read again")
	assert.Zero(t, r.calls("patch", checkpoints), "nor stored again within CheckpointsEvery")

	r.kube.ClearActions()
	clk.Step(spendwriter.CheckpointsEvery)
	_, err = l.Cycle(context.Background(), kept)
	require.NoError(t, err)
	assert.Equal(t, 1, r.calls("patch", checkpoints), "CheckpointsEvery after they were stored, they are again")
}

func TestANewTermGoesOnFromTheStoredCheckpointsNotFromAnEarlierTermsMemory(t *testing.T) {
	prom := &recording{prometheus: litellm}
	r := newRun(t, prom, []*unstructured.Unstructured{budget(t, "team-a", "chatbot", "uid-1", litellmTotal)})
	r.w.Checkpoints, r.w.Settle = "llmbudget-system", 10*time.Minute
	clk := clocktesting.NewFakeClock(now)
	l, earlier := r.loop(clk), spendwriter.NewKept()
	_, err := l.Cycle(context.Background(), earlier)
	require.NoError(t, err)

	// Another leader stored a later checkpoint meanwhile.
	cp := storedCheckpoint(t, r)
	cp.At, cp.Growth = time.Date(2026, 11, 20, 11, 55, 0, 0, time.UTC),
		map[promspend.Measure]map[string]float64{promspend.Cost: {"gpt-4o": 50}}
	later, err := json.Marshal(cp)
	require.NoError(t, err)
	_, err = r.kube.CoreV1().ConfigMaps("llmbudget-system").Update(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: spendwriter.CheckpointPrefix + "team-a", Namespace: "llmbudget-system"},
		Data:       map[string]string{"chatbot": string(later)}}, metav1.UpdateOptions{})
	require.NoError(t, err)

	clk.Step(7 * time.Minute)
	r.log.Reset()
	_, err = l.Cycle(context.Background(), spendwriter.NewKept())
	require.NoError(t, err)
	assert.Equal(t, "2026-11-20T11:55:00Z", r.line(t, "spend written")["resumedFrom"])
	assert.Contains(t, r.configMap(t, "team-a", "llm-spend").Data["total"], `"costUSD":"57.00"`,
		"the stored 50, and 3.5 for each part after it")
}

// storedCheckpoint is the checkpoint stored for team-a/chatbot.
func storedCheckpoint(t *testing.T, r run) promspend.Checkpoint {
	t.Helper()
	var cp promspend.Checkpoint
	cps := r.configMap(t, "llmbudget-system", spendwriter.CheckpointPrefix+"team-a")
	require.NoError(t, json.Unmarshal([]byte(cps.Data["chatbot"]), &cp))
	return cp
}

func TestABudgetWhoseFiguresDidNotChangeIsNotWrittenAgainUntilAThirdOfItsMaxAge(t *testing.T) {
	prom := &rising{cost: 3.5}
	r := newRun(t, prom, []*unstructured.Unstructured{budget(t, "team-a", "chatbot", "uid-1", litellmTotal)})
	clk := clocktesting.NewFakeClock(now)
	l, kept := r.loop(clk), spendwriter.NewKept()
	res, err := l.Cycle(context.Background(), kept)
	require.NoError(t, err)
	assert.Equal(t, []string{"team-a/chatbot"}, res.Written)

	for _, step := range []time.Duration{15 * time.Second, 4*time.Minute + 44*time.Second} {
		r.kube.ClearActions()
		clk.Step(step)
		res, err = l.Cycle(context.Background(), kept)
		require.NoError(t, err)
		assert.Equal(t, []string{"team-a/chatbot"}, res.Unchanged, "%s on", step)
		assert.Empty(t, res.Written)
		assert.Empty(t, r.kube.Actions(), "its ConfigMap is neither read nor written")
	}
	assert.Equal(t, "2026-11-20T12:00:00Z", r.configMap(t, "team-a", "llm-spend").Annotations["llmbudget.dev/spend-as-of"])

	clk.Step(time.Second)
	res, err = l.Cycle(context.Background(), kept)
	require.NoError(t, err)
	assert.Equal(t, []string{"team-a/chatbot"}, res.Written, "5 minutes on, a third of the default maxAge of 15m")
	assert.Equal(t, "2026-11-20T12:05:00Z", r.configMap(t, "team-a", "llm-spend").Annotations["llmbudget.dev/spend-as-of"])

	prom.set(4)
	clk.Step(15 * time.Second)
	res, err = l.Cycle(context.Background(), kept)
	require.NoError(t, err)
	assert.Equal(t, []string{"team-a/chatbot"}, res.Written, "a figure that changed is written at once")
	assert.Contains(t, r.configMap(t, "team-a", "llm-spend").Data["total"], `"costUSD":"4.00"`)
}

func TestANewTermComparesWithWhatIsStoredAndWritesNothingTheConfigMapHolds(t *testing.T) {
	prom := &rising{cost: 3.5}
	r := newRun(t, prom, []*unstructured.Unstructured{budget(t, "team-a", "chatbot", "uid-1", litellmTotal)})
	clk := clocktesting.NewFakeClock(now)
	l := r.loop(clk)
	_, err := l.Cycle(context.Background(), spendwriter.NewKept())
	require.NoError(t, err)

	r.kube.ClearActions()
	clk.Step(30 * time.Second)
	res, err := l.Cycle(context.Background(), spendwriter.NewKept())
	require.NoError(t, err)
	assert.Equal(t, []string{"team-a/chatbot"}, res.Unchanged)
	assert.Equal(t, 1, r.calls("get", "llm-spend"), "read once")
	assert.Zero(t, r.calls("patch", "llm-spend"), "not written")

	// A single run, without Kept, writes as it always did.
	res, err = r.w.Run(context.Background(), "", clk.Now())
	require.NoError(t, err)
	assert.Equal(t, []string{"team-a/chatbot"}, res.Written)
}

func TestTheLoopRunsEveryIntervalUntilItsTermEndsAndRecordsItsMetrics(t *testing.T) {
	prom := &rising{cost: 3.5}
	r := newRun(t, prom, []*unstructured.Unstructured{budget(t, "team-a", "chatbot", "uid-1", litellmTotal),
		budget(t, "team-b", "broken", "uid-2", strings.Replace(litellmTotal, "litellm", "nosuch", 1))})
	clk := clocktesting.NewFakeClock(now)
	m := spendwriter.NewMetrics("test")
	m.SetLeader(true)
	l := r.loop(clk)
	l.Metrics = m
	runs := make(chan spendwriter.Result)
	l.AfterRun = func(res spendwriter.Result, err error) {
		assert.NoError(t, err)
		runs <- res
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()

	res := <-runs
	assert.Equal(t, []string{"team-a/chatbot"}, res.Written)
	assert.Equal(t, []string{"team-b/broken"}, res.Failed)
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	clk.Step(15 * time.Second)
	res = <-runs
	assert.Equal(t, []string{"team-a/chatbot"}, res.Unchanged, "the next run, an interval later")
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	cancel()
	require.NoError(t, <-done)

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, line := range []string{
		"llmbudget_spend_leader 1",
		"llmbudget_spend_budgets_written_total 1",
		"llmbudget_spend_budgets_failed_total 2",
		`llmbudget_spend_runs_total{result="ok"} 2`,
		"llmbudget_spend_run_duration_seconds_count 2",
		`llmbudget_spend_figure_age_seconds{name="chatbot",namespace="team-a"} 0`,
	} {
		assert.Contains(t, body, line+"\n")
	}
	assert.NotContains(t, body, `name="broken"`, "a budget never written this term has no age to tell")
}
