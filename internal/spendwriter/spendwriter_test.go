package spendwriter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/promspend"
	"github.com/llmbudget/llmbudget/internal/spendwriter"
)

// now is 20 November 2026, 12:00 UTC: 13:00 in Berlin, 07:00 in New York.
var now = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// protected labels a price table as a spend source, which the spend-source policy keeps to the spend writers.
var protected = map[string]string{api.LabelSpendSource: "prices"}

var budgetResource = schema.GroupVersionResource{Group: api.Group, Version: api.Version, Resource: api.Resource}

// budget is an LLMCostBudget named ns/name with costSource (YAML flow mapping).
func budget(t *testing.T, ns, name, uid, costSource string) *unstructured.Unstructured {
	t.Helper()
	doc := "apiVersion: llmbudget.dev/v1alpha1\nkind: LLMCostBudget\n" +
		"metadata: {name: " + name + ", namespace: " + ns + ", uid: " + uid + "}\n" +
		"spec:\n  limitUSD: \"100\"\n  period: {type: Monthly, timeZone: Europe/Berlin}\n  costSource: " + costSource + "\n"
	js, err := yaml.YAMLToJSON([]byte(doc))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(js))
	return u
}

const (
	litellmTotal = `{configMapName: llm-spend, key: total, prometheus: {source: litellm, selector: {team: a}}}`
	vllmLedger   = `{configMapName: llm-spend, format: DailyLedger, keyPrefix: spend-,
    prometheus: {source: vllm, selector: {namespace: ml}, prices: {configMapName: prices}}}`
)

// prometheus answers each query with the vector of the first rule whose text its PromQL contains, a query that
// contains none with no series, and one that contains "refused" with Prometheus' error.
type prometheus []rule

type rule struct {
	text   string
	answer model.Vector
}

func (p prometheus) Query(_ context.Context, promql string, _ time.Time) (model.Vector, []string, error) {
	if strings.Contains(promql, "refused") {
		return nil, nil, errors.New(`bad_data: parse error: unexpected "refused"`)
	}
	for _, r := range p {
		if strings.Contains(promql, r.text) {
			return r.answer, nil, nil
		}
	}
	return nil, nil, nil
}

func models(label string, values map[string]float64) model.Vector {
	var v model.Vector
	for name, x := range values {
		v = append(v, &model.Sample{Metric: model.Metric{model.LabelName(label): model.LabelValue(name)},
			Value: model.SampleValue(x)})
	}
	return v
}

var litellm = prometheus{
	{"litellm_spend_metric_total", models("model", map[string]float64{"gpt-4o": 3.5})},
	{"litellm_input_tokens_metric_total", models("model", map[string]float64{"gpt-4o": 2300})},
	{"litellm_output_tokens_metric_total", models("model", map[string]float64{"gpt-4o": 480})},
}

func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	return loc
}

type run struct {
	kube *fake.Clientset
	dyn  *dynamicfake.FakeDynamicClient
	log  *bytes.Buffer
	w    spendwriter.Writer
}

func newRun(t *testing.T, prom promspend.Querier, budgets []*unstructured.Unstructured, objs ...runtime.Object) run {
	t.Helper()
	var items []runtime.Object
	for _, b := range budgets {
		items = append(items, b)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{budgetResource: "LLMCostBudgetList"}, items...)
	kube := fake.NewClientset(objs...)
	var log bytes.Buffer
	return run{kube: kube, dyn: dyn, log: &log, w: spendwriter.Writer{
		Kube: kube, Dynamic: dyn, Prometheus: prom, Log: slog.New(slog.NewJSONHandler(&log, nil)),
	}}
}

func (r run) configMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := r.kube.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return cm
}

// lines are the run's log lines, decoded.
func (r run) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(r.log.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		out = append(out, m)
	}
	return out
}

// applyAs writes data into ns/name as another field manager.
func applyAs(t *testing.T, r run, manager, ns, name string, data map[string]string) {
	t.Helper()
	_, err := r.kube.CoreV1().ConfigMaps(ns).Apply(context.Background(), corev1ac.ConfigMap(name, ns).WithData(data),
		metav1.ApplyOptions{FieldManager: manager})
	require.NoError(t, err)
}

func TestATotalBudgetsConfigMapIsCreatedWithItsFiguresLabelAndAnnotations(t *testing.T) {
	r := newRun(t, litellm, []*unstructured.Unstructured{budget(t, "team-a", "chatbot", "uid-1", litellmTotal)})
	res, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	assert.Equal(t, spendwriter.Result{Written: []string{"team-a/chatbot"}}, res)
	cm := r.configMap(t, "team-a", "llm-spend")
	assert.Equal(t, map[string]string{
		"total": `{"costUSD":"3.50","inputTokens":2300,"outputTokens":480,` +
			`"models":{"gpt-4o":{"costUSD":"3.50","inputTokens":2300,"outputTokens":480}}}`,
	}, cm.Data)
	assert.Equal(t, map[string]string{api.LabelSpendSource: "llm-spend"}, cm.Labels)
	assert.Equal(t, map[string]string{
		api.AnnotationPeriodStart: "2026-11-01T00:00:00+01:00",
		api.AnnotationSpendAsOf:   "2026-11-20T12:00:00Z",
	}, cm.Annotations)

	lines := r.lines(t)
	require.Len(t, lines, 1)
	assert.Equal(t, "spend written", lines[0]["msg"])
	assert.Equal(t, "team-a/chatbot", lines[0]["budget"])
	assert.Equal(t, map[string]any{"total": map[string]any{"costUSD": "3.50", "inputTokens": 2300.0,
		"outputTokens": 480.0}}, lines[0]["written"])
}

func TestTheWriterKeepsForeignKeysAndTheFinishedDaysItOwnsThatPrometheusNoLongerHolds(t *testing.T) {
	prices := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "prices", Namespace: "team-ml", Labels: protected},
		Data:       map[string]string{"prices.yaml": "default: {input: \"1\", output: \"2\"}\n"},
	}
	every := prometheus{
		{"vllm:prompt_tokens_total", models("model_name", map[string]float64{"llama": 1_000_000})},
		{"vllm:generation_tokens_total", models("model_name", map[string]float64{"llama": 500_000})},
	}
	r := newRun(t, every, []*unstructured.Unstructured{budget(t, "team-ml", "serving", "uid-2", vllmLedger)}, prices)
	applyAs(t, r, "someone-else", "team-ml", "llm-spend", map[string]string{"notes": "written by hand"})

	_, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	first := r.configMap(t, "team-ml", "llm-spend")
	require.Len(t, first.Data, 22, "31 October to 20 November, and the foreign key")
	const day = `{"costUSD":"2.00","inputTokens":1000000,"outputTokens":500000,` +
		`"models":{"llama":{"costUSD":"2.00","inputTokens":1000000,"outputTokens":500000}}}`
	require.Equal(t, day, first.Data["spend-2026-11-01"])

	// A day later Prometheus has nothing before 2 November any more: the plan leaves 1 November out.
	endOfFirst := time.Date(2026, 11, 2, 0, 0, 0, 0, berlin(t))
	r.w.Prometheus = append(prometheus{{fmt.Sprintf("@ %d.000", endOfFirst.Unix()), nil}}, every...)
	_, err = r.w.Run(context.Background(), "", now.Add(24*time.Hour))
	require.NoError(t, err)
	cm := r.configMap(t, "team-ml", "llm-spend")
	assert.Equal(t, "written by hand", cm.Data["notes"], "a key of another manager")
	assert.Equal(t, day, cm.Data["spend-2026-11-01"], "a finished day the plan leaves out keeps its value")
	assert.Equal(t, day, cm.Data["spend-2026-11-21"], "the new day")
	assert.NotContains(t, cm.Annotations, api.AnnotationPeriodStart, "DailyLedger has no period-start")
	lines := r.lines(t)
	assert.Equal(t, []any{"spend-2026-11-01"}, lines[len(lines)-1]["kept"])
}

func TestOneBudgetsFailureLeavesItsConfigMapPostsAnEventAndStopsNoOther(t *testing.T) {
	badPrices := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "prices", Namespace: "team-b", Labels: protected},
		Data:       map[string]string{"prices.yaml": "models: {llama: {input: ten}}\n"},
	}
	budgets := []*unstructured.Unstructured{
		budget(t, "team-a", "chatbot", "uid-ok", litellmTotal),
		budget(t, "team-a", "nobody", "uid-empty",
			`{configMapName: nobody-spend, key: total, prometheus: {source: litellm, selector: {team: nobody}}}`),
		budget(t, "team-a", "refused", "uid-refused",
			`{configMapName: refused-spend, key: total, prometheus: {series: {cost: 'refused_total'}}}`),
		budget(t, "team-b", "serving", "uid-prices", vllmLedger),
		budget(t, "team-c", "fought", "uid-conflict", litellmTotal),
		budget(t, "team-c", "elsewhere", "uid-none", `{configMapName: x, key: total}`),
	}
	answers := prometheus{
		{`team="a"`, litellm[0].answer},
		{"vllm:", models("model_name", map[string]float64{"llama": 1})},
	}
	r := newRun(t, answers, budgets, badPrices)
	applyAs(t, r, "kubectl-patch", "team-c", "llm-spend", map[string]string{"total": "1.00"})
	applyAs(t, r, "someone-else", "team-a", "nobody-spend", map[string]string{"total": "9.00"})

	res, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	assert.Equal(t, []string{"team-a/chatbot"}, res.Written)
	assert.Equal(t, []string{"team-a/nobody", "team-a/refused", "team-b/serving", "team-c/fought"}, res.Failed,
		"team-c/elsewhere has no Prometheus source: not the writer's")

	assert.Equal(t, map[string]string{"total": "9.00"}, r.configMap(t, "team-a", "nobody-spend").Data)
	assert.Empty(t, r.configMap(t, "team-a", "nobody-spend").Annotations)
	assert.Equal(t, map[string]string{"total": "1.00"}, r.configMap(t, "team-c", "llm-spend").Data)
	for _, ns := range []string{"team-a", "team-b"} {
		_, err := r.kube.CoreV1().ConfigMaps(ns).Get(context.Background(), map[string]string{
			"team-a": "refused-spend", "team-b": "llm-spend"}[ns], metav1.GetOptions{})
		assert.True(t, err != nil, "no ConfigMap created for a failed budget in %s", ns)
	}

	reasons := map[string]string{}
	for _, l := range r.lines(t) {
		if l["msg"] == "spend not written" {
			reasons[l["budget"].(string)] = l["reason"].(string)
			assert.NotContains(t, l, "eventError")
		}
	}
	assert.Contains(t, reasons["team-a/nobody"], `key "total", cost: no series matched`)
	assert.Contains(t, reasons["team-a/refused"], `parse error: unexpected "refused"`)
	assert.Contains(t, reasons["team-b/serving"], "price table (ConfigMap team-b/prices, key prices.yaml): "+
		"price table: line 1: ")
	assert.Contains(t, reasons["team-c/fought"], `conflict with "kubectl-patch"`)
	assert.Contains(t, reasons["team-c/fought"], "--force-conflicts")

	for budget, uid := range map[string]string{"team-a/nobody": "uid-empty", "team-a/refused": "uid-refused",
		"team-b/serving": "uid-prices", "team-c/fought": "uid-conflict"} {
		ns, name, _ := strings.Cut(budget, "/")
		events, err := r.kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		var found []corev1.Event
		for _, e := range events.Items {
			if e.InvolvedObject.Name == name {
				found = append(found, e)
			}
		}
		require.Len(t, found, 1, budget)
		e := found[0]
		assert.Equal(t, corev1.ObjectReference{APIVersion: "llmbudget.dev/v1alpha1", Kind: "LLMCostBudget",
			Namespace: ns, Name: name, UID: types.UID(uid)}, e.InvolvedObject, budget)
		assert.Equal(t, "Warning", e.Type)
		assert.Equal(t, "SpendWriteFailed", e.Reason)
		assert.Equal(t, "llmbudget-spend", e.Source.Component)
		assert.Contains(t, e.Message, reasons[budget])
		assert.Equal(t, int32(1), e.Count)
	}
}

func TestARepeatedFailureCountsOneEventOnceMore(t *testing.T) {
	r := newRun(t, prometheus{}, []*unstructured.Unstructured{budget(t, "team-a", "chatbot", "uid-1", litellmTotal)})
	for i := range 3 {
		res, err := r.w.Run(context.Background(), "", now.Add(time.Duration(i)*5*time.Minute))
		require.NoError(t, err)
		require.Equal(t, []string{"team-a/chatbot"}, res.Failed)
	}
	events, err := r.kube.CoreV1().Events("team-a").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, events.Items, 1)
	e := events.Items[0]
	assert.Equal(t, int32(3), e.Count)
	assert.Equal(t, now, e.FirstTimestamp.UTC())
	assert.Equal(t, now.Add(10*time.Minute), e.LastTimestamp.UTC())
}

func TestForceTakesOverTheKeysAnotherManagerOwns(t *testing.T) {
	r := newRun(t, litellm, []*unstructured.Unstructured{budget(t, "team-a", "chatbot", "uid-1", litellmTotal)})
	applyAs(t, r, "kubectl-patch", "team-a", "llm-spend", map[string]string{"total": "1.00", "notes": "mine"})
	res, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	require.Equal(t, []string{"team-a/chatbot"}, res.Failed)

	r.w.Force = true
	res, err = r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	assert.Equal(t, []string{"team-a/chatbot"}, res.Written)
	cm := r.configMap(t, "team-a", "llm-spend")
	assert.True(t, strings.HasPrefix(cm.Data["total"], `{"costUSD":"3.50"`), cm.Data["total"])
	assert.Equal(t, "mine", cm.Data["notes"], "only the keys the writer writes are taken")
}

func TestASpendSourceLabelAlreadyThereKeepsItsValueAndANamespaceNarrowsTheRun(t *testing.T) {
	labelled := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "llm-spend", Namespace: "team-a",
		Labels: map[string]string{api.LabelSpendSource: "ml-department"}}}
	r := newRun(t, litellm, []*unstructured.Unstructured{
		budget(t, "team-a", "chatbot", "uid-1", litellmTotal),
		budget(t, "team-b", "chatbot", "uid-2", litellmTotal),
	}, labelled)
	res, err := r.w.Run(context.Background(), "team-a", now)
	require.NoError(t, err)
	assert.Equal(t, spendwriter.Result{Written: []string{"team-a/chatbot"}}, res)
	assert.Equal(t, "ml-department", r.configMap(t, "team-a", "llm-spend").Labels[api.LabelSpendSource])
}

// A price table the budgeted could edit would let them lower the prices and lift the block: the writer reads only
// one the spend-source policy protects, and says what to do with any other.
func TestTheWriterRefusesAPriceTableThatIsNoSpendSource(t *testing.T) {
	open := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "prices", Namespace: "team-ml"},
		Data:       map[string]string{"prices.yaml": "default: {input: \"0\", output: \"0\"}\n"},
	}
	every := prometheus{
		{"vllm:prompt_tokens_total", models("model_name", map[string]float64{"llama": 1_000_000})},
		{"vllm:generation_tokens_total", models("model_name", map[string]float64{"llama": 500_000})},
	}
	r := newRun(t, every, []*unstructured.Unstructured{budget(t, "team-ml", "serving", "uid-2", vllmLedger)}, open)

	res, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	assert.Equal(t, []string{"team-ml/serving"}, res.Failed)
	_, err = r.kube.CoreV1().ConfigMaps("team-ml").Get(context.Background(), "llm-spend", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing written from an unprotected table")
	lines := r.lines(t)
	require.NotEmpty(t, lines)
	assert.Contains(t, lines[0]["reason"], "price table (ConfigMap team-ml/prices, key prices.yaml) carries no "+
		"label llmbudget.dev/spend-source")
}

// recording is a Querier that keeps every PromQL it is asked.
type recording struct {
	prometheus
	mu      sync.Mutex
	queries []string
}

func (r *recording) Query(ctx context.Context, promql string, at time.Time) (model.Vector, []string, error) {
	r.mu.Lock()
	r.queries = append(r.queries, promql)
	r.mu.Unlock()
	return r.prometheus.Query(ctx, promql, at)
}

func (r *recording) ranges() []string {
	var out []string
	for _, q := range r.queries {
		if strings.Contains(q, "litellm_spend_metric_total") {
			out = append(out, q[strings.LastIndex(q, "[")+1:strings.LastIndex(q, ":")])
		}
	}
	return out
}

func TestALaterRunAsksOnlyForWhatCameAfterTheCheckpointTheLastOneKept(t *testing.T) {
	prom := &recording{prometheus: litellm}
	chatbot := budget(t, "team-a", "chatbot", "uid-1", litellmTotal)
	gone := budget(t, "team-a", "gone", "uid-2", strings.Replace(litellmTotal, "llm-spend", "gone-spend", 1))
	r := newRun(t, prom, []*unstructured.Unstructured{chatbot, gone})
	r.w.Checkpoints, r.w.Settle = "llmbudget-system", 10*time.Minute

	_, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	assert.Equal(t, []string{"19d12h49m59s999ms", "19d12h49m59s999ms", "9m59s999ms", "9m59s999ms"},
		sorted(prom.ranges()), "each budget's whole period, up to the mark and after it")
	assert.JSONEq(t, `{"costUSD":"7.00","inputTokens":4600,"outputTokens":960,`+
		`"models":{"gpt-4o":{"costUSD":"7.00","inputTokens":4600,"outputTokens":960}}}`,
		r.configMap(t, "team-a", "llm-spend").Data["total"], "each part answered 3.5")
	cps := r.configMap(t, "llmbudget-system", spendwriter.CheckpointPrefix+"team-a")
	require.Contains(t, cps.Data, "chatbot")
	var cp promspend.Checkpoint
	require.NoError(t, json.Unmarshal([]byte(cps.Data["chatbot"]), &cp))
	assert.Equal(t, time.Date(2026, 11, 20, 11, 50, 0, 0, time.UTC), cp.At.UTC())
	assert.Equal(t, map[string]float64{"gpt-4o": 3.5}, cp.Growth[promspend.Cost])

	// Five minutes on, and one budget deleted: only the 5 minutes since the checkpoint are settled.
	require.NoError(t, r.dyn.Resource(budgetResource).Namespace("team-a").Delete(context.Background(), "gone",
		metav1.DeleteOptions{}))
	prom.queries = nil
	r.log.Reset()
	_, err = r.w.Run(context.Background(), "", now.Add(5*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{"4m59s999ms", "9m59s999ms"}, sorted(prom.ranges()))
	assert.JSONEq(t, `{"costUSD":"10.50","inputTokens":6900,"outputTokens":1440,`+
		`"models":{"gpt-4o":{"costUSD":"10.50","inputTokens":6900,"outputTokens":1440}}}`,
		r.configMap(t, "team-a", "llm-spend").Data["total"], "the checkpoint's 3.5, and 3.5 for each part")
	assert.Equal(t, "2026-11-20T11:50:00Z", r.lines(t)[0]["resumedFrom"])
	cps = r.configMap(t, "llmbudget-system", spendwriter.CheckpointPrefix+"team-a")
	assert.Equal(t, []string{"chatbot"}, sorted(slices.Collect(maps.Keys(cps.Data))), "a deleted budget's is dropped")
}

func TestACheckpointThatCannotBeReadCostsOnlyTheWholePeriod(t *testing.T) {
	prom := &recording{prometheus: litellm}
	r := newRun(t, prom, []*unstructured.Unstructured{budget(t, "team-a", "chatbot", "uid-1", litellmTotal)},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: spendwriter.CheckpointPrefix + "team-a",
			Namespace: "llmbudget-system"}, Data: map[string]string{"chatbot": `{"periodStart": 7}`}})
	r.w.Checkpoints, r.w.Settle = "llmbudget-system", 10*time.Minute
	res, err := r.w.Run(context.Background(), "", now)
	require.NoError(t, err)
	assert.Equal(t, []string{"team-a/chatbot"}, res.Written)
	assert.Equal(t, []string{"19d12h49m59s999ms", "9m59s999ms"}, sorted(prom.ranges()))
	assert.Equal(t, "", r.line(t, "spend written")["resumedFrom"])
}

// line is the run's first log line with message msg.
func (r run) line(t *testing.T, msg string) map[string]any {
	t.Helper()
	for _, l := range r.lines(t) {
		if l["msg"] == msg {
			return l
		}
	}
	require.Failf(t, "no log line", "%q in %s", msg, r.log)
	return nil
}

// A checkpoint is the writer's own record, but one whose growth no counter makes is refused, whoever planted it:
// the figures are those of the whole period asked again, never lowered by it.
func TestACheckpointWithGrowthNoCounterMakesIsRefusedAndTheWholePeriodAsked(t *testing.T) {
	cases := []struct {
		name, growth, reason string
	}{
		{"a negative cost", `{"cost":{"gpt-4o":-5},"input":{"gpt-4o":0},"output":{"gpt-4o":0}}`,
			`growth["cost"]["gpt-4o"]: -5 is not a non-negative finite number`},
		{"a negative token count", `{"cost":{"gpt-4o":0},"input":{"gpt-4o":-4000},"output":{"gpt-4o":0}}`,
			`growth["input"]["gpt-4o"]: -4000 is not a non-negative finite number`},
		{"a fractional token count", `{"cost":{"gpt-4o":0},"input":{"gpt-4o":0},"output":{"gpt-4o":0.5}}`,
			`growth["output"]["gpt-4o"]: 0.5 is not a whole number of tokens from 0 to 2^53`},
		{"a token count past 2^53", `{"cost":{"gpt-4o":0},"input":{"gpt-4o":1e300},"output":{"gpt-4o":0}}`,
			`growth["input"]["gpt-4o"]: 1e+300 is not a whole number of tokens from 0 to 2^53`},
		{"a measure no source counts", `{"cost":{"gpt-4o":0},"refunds":{"gpt-4o":-5}}`,
			`growth["refunds"]: not a measure (cost, input or output)`},
	}
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "a"})
	require.NoError(t, err)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Of this period, source and step, at a whole step before the mark: all but its growth would be resumed.
			planted := fmt.Sprintf(`{"periodStart":"2026-11-01T00:00:00+01:00","at":"2026-11-20T11:00:00Z",`+
				`"step":"15s","source":%q,"growth":%s}`, src.Fingerprint(), tc.growth)
			prom := &recording{prometheus: litellm}
			r := newRun(t, prom, []*unstructured.Unstructured{budget(t, "team-a", "chatbot", "uid-1", litellmTotal)},
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: spendwriter.CheckpointPrefix + "team-a",
					Namespace: "llmbudget-system"}, Data: map[string]string{"chatbot": planted}})
			r.w.Checkpoints, r.w.Settle = "llmbudget-system", 10*time.Minute
			res, err := r.w.Run(context.Background(), "", now)
			require.NoError(t, err)
			assert.Equal(t, []string{"team-a/chatbot"}, res.Written)
			assert.JSONEq(t, `{"costUSD":"7.00","inputTokens":4600,"outputTokens":960,`+
				`"models":{"gpt-4o":{"costUSD":"7.00","inputTokens":4600,"outputTokens":960}}}`,
				r.configMap(t, "team-a", "llm-spend").Data["total"], "3.5 for each part of the whole period")
			assert.Equal(t, []string{"19d12h49m59s999ms", "9m59s999ms"}, sorted(prom.ranges()))
			assert.Equal(t, "", r.line(t, "spend written")["resumedFrom"])
			refused := r.line(t, "checkpoint refused: its budget is asked for its whole period")
			assert.Equal(t, "team-a/chatbot", refused["budget"])
			assert.Equal(t, tc.reason, refused["reason"])
		})
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// hanging answers as litellm does, but holds a query of team b until its context ends.
type hanging struct{ prometheus }

func (h hanging) Query(ctx context.Context, promql string, at time.Time) (model.Vector, []string, error) {
	if strings.Contains(promql, `team="b"`) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	return h.prometheus.Query(ctx, promql, at)
}

func TestABudgetCutShortByTheDeadlineKeepsNoCheckpointAndTheOthersTheirs(t *testing.T) {
	b := budget(t, "team-b", "other", "uid-2", strings.Replace(litellmTotal, "team: a", "team: b", 1))
	r := newRun(t, hanging{litellm}, []*unstructured.Unstructured{
		budget(t, "team-a", "chatbot", "uid-1", litellmTotal), b})
	r.w.Checkpoints, r.w.Settle, r.w.Concurrency = "llmbudget-system", 10*time.Minute, 1
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res, err := r.w.Run(ctx, "", now)
	require.NoError(t, err)
	assert.Equal(t, []string{"team-b/other"}, res.Failed)
	assert.Contains(t, r.configMap(t, "llmbudget-system", spendwriter.CheckpointPrefix+"team-a").Data, "chatbot")
	_, err = r.kube.CoreV1().ConfigMaps("llmbudget-system").Get(context.Background(),
		spendwriter.CheckpointPrefix+"team-b", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing to keep of a budget not written: %v", err)
}
