//go:build integration

package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	metrics "go.opentelemetry.io/proto/otlp/metrics/v1"
	resource "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// llmbudget spend --all, the cluster's spend writer, against a real Prometheus and the real
// API server: the exporter of spend_test.go (LiteLLM, vLLM and the legacy OpenTelemetry
// histogram, scraped), and an OpenTelemetry SDK pushing both generations of GenAI metrics at
// once over OTLP, as an SDK in its migration ("dup") mode does.

// chatBot is what the pushing SDK has counted in each phase of the exporter (its phases move
// together; -1 while the exporter is down, when nothing is pushed): input and output tokens of
// gpt-4o-mini. Phase 2 is a restart, from zero. The true growth: input 200 + 300 + 50 + 70 =
// 620, output 20 + 25 + 5 + 10 = 60.
var chatBot = [][2]float64{{200, 20}, {500, 45}, {50, 5}, {-1, -1}, {120, 15}}

// otlpRequest is one export of chat-bot's SDK in phase i: the counters
// gen_ai.client.inference.usage.{input,output}_tokens and the histogram
// gen_ai.client.token.usage, each with its generation's attributes (gen_ai.provider.name
// replaced gen_ai.system), so that the two generations' label sets differ as they do.
func otlpRequest(phase int, start, now time.Time) *colmetrics.ExportMetricsServiceRequest {
	str := func(k, v string) *common.KeyValue {
		return &common.KeyValue{Key: k, Value: &common.AnyValue{Value: &common.AnyValue_StringValue{StringValue: v}}}
	}
	startNs, nowNs := uint64(start.UnixNano()), uint64(now.UnixNano())
	counter := func(name string, v float64) *metrics.Metric {
		return &metrics.Metric{Name: name, Unit: "{token}", Data: &metrics.Metric_Sum{Sum: &metrics.Sum{
			AggregationTemporality: metrics.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
			IsMonotonic:            true,
			DataPoints: []*metrics.NumberDataPoint{{
				Attributes: []*common.KeyValue{
					str("gen_ai.request.model", "gpt-4o-mini"), str("gen_ai.provider.name", "openai"),
				},
				StartTimeUnixNano: startNs, TimeUnixNano: nowNs,
				Value: &metrics.NumberDataPoint_AsDouble{AsDouble: v},
			}},
		}}}
	}
	point := func(tokenType string, sum float64) *metrics.HistogramDataPoint {
		count := uint64(phase + 1)
		return &metrics.HistogramDataPoint{
			Attributes: []*common.KeyValue{str("gen_ai.request.model", "gpt-4o-mini"), str("gen_ai.system", "openai"),
				str("gen_ai.token.type", tokenType)},
			StartTimeUnixNano: startNs, TimeUnixNano: nowNs,
			Count: count, Sum: &sum, BucketCounts: []uint64{count},
		}
	}
	in, out := chatBot[phase][0], chatBot[phase][1]
	return &colmetrics.ExportMetricsServiceRequest{ResourceMetrics: []*metrics.ResourceMetrics{{
		Resource: &resource.Resource{Attributes: []*common.KeyValue{str("service.name", "chat-bot"),
			str("service.instance.id", "chat-bot-0")}},
		ScopeMetrics: []*metrics.ScopeMetrics{{Metrics: []*metrics.Metric{
			counter("gen_ai.client.inference.usage.input_tokens", in),
			counter("gen_ai.client.inference.usage.output_tokens", out),
			{Name: "gen_ai.client.token.usage", Unit: "{token}", Data: &metrics.Metric_Histogram{Histogram: &metrics.Histogram{
				AggregationTemporality: metrics.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
				DataPoints:             []*metrics.HistogramDataPoint{point("input", in), point("output", out)},
			}}},
		}}},
	}}}
}

// pushOTLP pushes chat-bot's counters of the exporter's current phase to prom every 300ms
// until ctx ends, restarting (a new start time) when a phase counts less than the one before.
func pushOTLP(ctx context.Context, t *testing.T, prom string, exp *exporter) {
	start, last := time.Now(), -1
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(300 * time.Millisecond):
		}
		phase := exp.current()
		if chatBot[phase][0] < 0 {
			continue
		}
		if last >= 0 && chatBot[phase][0] < chatBot[last][0] {
			start = time.Now()
		}
		last = phase
		body, err := proto.Marshal(otlpRequest(phase, start, time.Now()))
		if err != nil {
			t.Errorf("marshal OTLP: %v", err)
			return
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, prom+"/api/v1/otlp/v1/metrics", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue // Prometheus not up yet, or the test is ending
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("OTLP push: %s: %s", resp.Status, answer)
			return
		}
	}
}

// promQuery is Prometheus' answer to an instant query, as text.
func promQuery(prom, q string) string {
	resp, err := http.Get(prom + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// spendValue is a ConfigMap value the writer wrote.
type spendValue struct {
	CostUSD      string `json:"costUSD"`
	InputTokens  int64  `json:"inputTokens"`
	OutputTokens int64  `json:"outputTokens"`
	Models       map[string]struct {
		InputTokens  int64 `json:"inputTokens"`
		OutputTokens int64 `json:"outputTokens"`
	} `json:"models"`
}

type configMap struct {
	Metadata struct {
		ResourceVersion string            `json:"resourceVersion"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
}

func getConfigMap(t *testing.T, ns, name string) configMap {
	t.Helper()
	var cm configMap
	require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "-n", ns, "get", "configmap", name, "-o", "json")), &cm))
	return cm
}

// spendAll runs llmbudget spend --all at now with the cluster's admin kubeconfig and returns
// its exit code and its log lines.
func spendAll(t *testing.T, llmbudget, prom string, now time.Time, extra ...string) (int, []map[string]any) {
	t.Helper()
	run := exec.Command(llmbudget, append([]string{"spend", "--all", "--prometheus", prom, "--kubeconfig",
		kube.Kubeconfig, "--now", now.Format(time.RFC3339)}, extra...)...)
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	err := run.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	assert.Empty(t, stdout.String())
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), "every line on stderr is JSON: %q", l)
		lines = append(lines, m)
	}
	return code, lines
}

func TestSpendAllWritesEachBudgetsTrueGrowthInItsOwnPeriodAndZone(t *testing.T) {
	installBudgetCRD(t)
	llmbudget := buildLLMBudget(t)
	dataStart := time.Now()
	exp := &exporter{}
	target := httptest.NewServer(exp)
	defer target.Close()
	prom := startPrometheus(t, strings.TrimPrefix(target.URL, "http://"), "--web.enable-otlp-receiver")
	ctx, stop := context.WithCancel(context.Background())
	pushed := make(chan struct{})
	go func() { defer close(pushed); pushOTLP(ctx, t, prom, exp) }()
	defer func() { stop(); <-pushed }()

	cluster.WaitFor(t, 2*time.Minute, "the exporter to go through every phase", func() (bool, string) {
		return exp.done(), ""
	})
	cluster.WaitFor(t, 30*time.Second, "Prometheus to store the last phase, scraped and pushed", func() (bool, string) {
		scraped := promQuery(prom, `litellm_spend_metric_total{model="claude-3-5-haiku"} == 0.05`)
		pushed := promQuery(prom, `gen_ai_client_inference_usage_input_tokens_total{job="chat-bot"} == 120`)
		return strings.Contains(scraped, `"0.05"`) && strings.Contains(pushed, `"120"`), scraped + pushed
	})

	t.Run("Prometheus stores the OTLP GenAI metrics under the names the preset reads", func(t *testing.T) {
		series := promQuery(prom, `group by (__name__) ({job="chat-bot"})`)
		for _, name := range []string{"gen_ai_client_inference_usage_input_tokens_total",
			"gen_ai_client_inference_usage_output_tokens_total", "gen_ai_client_token_usage_sum"} {
			assert.Contains(t, series, `"__name__":"`+name+`"`)
		}
	})

	now := time.Now().UTC().Truncate(time.Second)
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	newYork, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	// A Monthly period that starts on the day of the month it is in Berlin (at most the 28th),
	// so that each query spans days, not a month, of one-second steps.
	startDay := min(now.In(berlin).Day(), 28)
	periodStart := time.Date(now.In(berlin).Year(), now.In(berlin).Month(), startDay, 0, 0, 0, 0, berlin)
	today := time.Date(now.In(newYork).Year(), now.In(newYork).Month(), now.In(newYork).Day(), 0, 0, 0, 0, newYork)
	if !periodStart.Before(dataStart.Add(-time.Minute)) || !today.Before(dataStart.Add(-time.Minute)) {
		t.Skipf("the test's counters began within a minute of midnight in Berlin or New York (%s): "+
			"they would fall in two periods or ledger days", dataStart.UTC().Format(time.RFC3339))
	}
	yesterday := today.AddDate(0, 0, -1).Format(time.DateOnly)

	berlinNS, newYorkNS := kube.Namespace(t, "spend-berlin"), kube.Namespace(t, "spend-newyork")
	// The writer reads only a price table the spend-source policy protects.
	kube.ApplyYAML(t, berlinNS, "apiVersion: v1\nkind: ConfigMap\n"+
		"metadata: {name: llm-prices, labels: {llmbudget.dev/spend-source: llm-prices}}\ndata:\n  prices.yaml: |\n"+
		"    models:\n      llama-3.1-8b: {input: \"0.20\", output: \"0.600000001\"}\n"+
		"    default: {input: \"0.15\", output: \"0.60\"}\n")
	budgetYAML := func(ns, name, period, costSource string) string {
		return fmt.Sprintf(`apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata: {name: %s, namespace: %s}
spec:
  limitUSD: "10"
  period: %s
  costSource: %s
`, name, ns, period, costSource)
	}
	monthly := fmt.Sprintf("{type: Monthly, timeZone: Europe/Berlin, startDay: %d}", startDay)
	daily := "{type: Daily, timeZone: America/New_York}"
	prices := "prices: {namespace: " + berlinNS + ", configMapName: llm-prices}"
	for _, b := range []string{
		budgetYAML(berlinNS, "litellm", monthly, `{configMapName: litellm-spend, key: total,
    prometheus: {source: litellm, selector: {team: team-a}, step: 1s}}`),
		budgetYAML(berlinNS, "otel-legacy", monthly, `{configMapName: support-bot-spend, key: total,
    prometheus: {source: otel-genai, selector: {service: support-bot}, step: 1s,
      prices: {configMapName: llm-prices}}}`),
		budgetYAML(berlinNS, "nobody", monthly, `{configMapName: nobody-spend, key: total,
    prometheus: {source: litellm, selector: {team: nobody}, step: 1s}}`),
		budgetYAML(newYorkNS, "vllm", daily, `{configMapName: vllm-spend, format: DailyLedger, keyPrefix: spend-,
    prometheus: {source: vllm, selector: {namespace: team-ml}, step: 1s, `+prices+`}}`),
		budgetYAML(newYorkNS, "otel-new", daily, `{configMapName: chat-bot-spend, format: DailyLedger, keyPrefix: spend-,
    prometheus: {source: otel-genai, selector: {service: chat-bot}, step: 1s, `+prices+`}}`),
	} {
		kube.ApplyYAML(t, "", b)
	}
	// What others wrote before: the failing budget's last figures, a key of someone else's,
	// and a finished ledger day the writer wrote while Prometheus still held it.
	kube.ApplyYAML(t, berlinNS, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nobody-spend}\n"+
		"data: {total: \"5.00\"}\n", "--field-manager=earlier-pipeline")
	kube.ApplyYAML(t, newYorkNS, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vllm-spend}\n"+
		"data: {notes: \"kept by the platform team\"}\n", "--field-manager=platform-team")
	const lastWritten = `{"costUSD":"0.42","inputTokens":1,"outputTokens":1}`
	kube.ApplyYAML(t, newYorkNS, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vllm-spend}\n"+
		"data: {spend-"+yesterday+": '"+lastWritten+"'}\n", "--field-manager=llmbudget-spend")
	nobodyBefore := getConfigMap(t, berlinNS, "nobody-spend")

	code, lines := spendAll(t, llmbudget, prom, now)
	assert.Equal(t, 1, code, "one budget failed: %v", lines)

	byBudget := map[string]map[string]any{}
	for _, l := range lines {
		if b, ok := l["budget"].(string); ok && l["msg"] != "warning from Prometheus" {
			byBudget[b] = l
		}
	}
	for _, b := range []string{"litellm", "otel-legacy"} {
		assert.Equal(t, "spend written", byBudget[berlinNS+"/"+b]["msg"], b)
	}
	for _, b := range []string{"vllm", "otel-new"} {
		assert.Equal(t, "spend written", byBudget[newYorkNS+"/"+b]["msg"], b)
	}
	failed := byBudget[berlinNS+"/nobody"]
	require.NotNil(t, failed, "the log names the failed budget: %v", lines)
	assert.Equal(t, "spend not written", failed["msg"])
	assert.Contains(t, failed["reason"], "no series matched")

	todayKey := "spend-" + today.Format(time.DateOnly)
	tests := map[string]struct {
		ns, configMap, key string
		want               spendValue
		model              string
	}{
		// The counters of spend_test.go, across the reset and the exporter's downtime.
		"LiteLLM, Monthly in Berlin": {berlinNS, "litellm-spend", "total",
			spendValue{CostUSD: "3.85", InputTokens: 3400, OutputTokens: 740}, ""},
		"OpenTelemetry's legacy histogram, Monthly in Berlin": {berlinNS, "support-bot-spend", "total",
			spendValue{CostUSD: "0.0001935", InputTokens: 850, OutputTokens: 110}, ""},
		"vLLM, a DailyLedger in New York": {newYorkNS, "vllm-spend", todayKey,
			spendValue{CostUSD: "0.00324", InputTokens: 10500, OutputTokens: 1900}, ""},
		// Both generations pushed at once count once: 620 and 60 tokens at the default prices.
		"OpenTelemetry's counters beside the histogram, a DailyLedger in New York": {newYorkNS, "chat-bot-spend",
			todayKey, spendValue{CostUSD: "0.000129", InputTokens: 620, OutputTokens: 60}, "gpt-4o-mini"},
	}
	versions := map[string]string{}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cm := getConfigMap(t, tc.ns, tc.configMap)
			versions[tc.ns+"/"+tc.configMap] = cm.Metadata.ResourceVersion
			var got spendValue
			require.NoError(t, json.Unmarshal([]byte(cm.Data[tc.key]), &got), "%v", cm.Data)
			assert.Equal(t, tc.want.CostUSD, got.CostUSD)
			assert.Equal(t, tc.want.InputTokens, got.InputTokens)
			assert.Equal(t, tc.want.OutputTokens, got.OutputTokens)
			if tc.model != "" {
				require.Len(t, got.Models, 1)
				assert.Equal(t, tc.want.InputTokens, got.Models[tc.model].InputTokens)
			}
			assert.Equal(t, tc.configMap, cm.Metadata.Labels["llmbudget.dev/spend-source"])
			assert.Equal(t, now.Format(time.RFC3339), cm.Metadata.Annotations["llmbudget.dev/spend-as-of"])
			if tc.key == "total" {
				assert.Equal(t, periodStart.Format(time.RFC3339), cm.Metadata.Annotations["llmbudget.dev/period-start"])
			} else {
				assert.NotContains(t, cm.Metadata.Annotations, "llmbudget.dev/period-start")
				assert.NotContains(t, cm.Data, "spend-"+today.AddDate(0, 0, 1).Format(time.DateOnly))
			}
		})
	}

	// What the writer stamps is what the hooks age: the budget and its ConfigMap as the API server holds them,
	// evaluated a minute after the run, are fresh; past the default maxAge of a Prometheus source, stale.
	t.Run("the written spend is fresh for the budget, and stale past its maxAge", func(t *testing.T) {
		stored := filepath.Join(t.TempDir(), "stored.yaml")
		require.NoError(t, os.WriteFile(stored, []byte(kube.Kubectl(t, "-n", berlinNS, "get",
			"llmcostbudget/litellm", "configmap/litellm-spend", "-o", "yaml")), 0o600))
		for _, tc := range []struct {
			after          time.Duration
			status, reason string
		}{{time.Minute, "False", "SpendFresh"}, {16 * time.Minute, "True", "SpendStale"}} {
			at := now.Add(tc.after)
			if at.In(berlin).Month() != now.In(berlin).Month() {
				t.Skipf("%s is in the next Monthly period of the budget", at)
			}
			out, err := exec.Command(llmbudget, "eval", "-f", stored, "--now="+at.Format(time.RFC3339)).CombinedOutput()
			require.NoError(t, err, "llmbudget eval: %s", out)
			var got evalStatus
			require.NoError(t, yaml.Unmarshal(out, &got), "%s", out)
			assert.Equal(t, "3.85", got.Status.ObservedSpendUSD, "%s", out)
			found := false
			for _, c := range got.Status.Conditions {
				if c.Type == "SpendStale" {
					found = true
					assert.Equal(t, tc.status, c.Status, "%s after the run: %s", tc.after, c.Message)
					assert.Equal(t, tc.reason, c.Reason)
				}
			}
			assert.True(t, found, "a SpendStale condition: %s", out)
		}
	})

	t.Run("keys the writer does not own, and a day Prometheus no longer holds, survive", func(t *testing.T) {
		cm := getConfigMap(t, newYorkNS, "vllm-spend")
		assert.Equal(t, "kept by the platform team", cm.Data["notes"])
		assert.Equal(t, lastWritten, cm.Data["spend-"+yesterday])
		assert.Equal(t, []any{"spend-" + yesterday}, byBudget[newYorkNS+"/vllm"]["kept"])
	})

	t.Run("the failed budget's ConfigMap is as it was, and describe shows why", func(t *testing.T) {
		assert.Equal(t, nobodyBefore, getConfigMap(t, berlinNS, "nobody-spend"))
		var events struct {
			Items []struct {
				Type, Reason, Message string
				InvolvedObject        struct{ Kind, Name, UID string } `json:"involvedObject"`
			} `json:"items"`
		}
		require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "-n", berlinNS, "get", "events",
			"--field-selector=reason=SpendWriteFailed", "-o", "json")), &events))
		require.Len(t, events.Items, 1)
		ev := events.Items[0]
		uid := kube.Kubectl(t, "-n", berlinNS, "get", "llmb", "nobody", "-o", "jsonpath={.metadata.uid}")
		assert.Equal(t, "LLMCostBudget", ev.InvolvedObject.Kind)
		assert.Equal(t, "nobody", ev.InvolvedObject.Name)
		assert.Equal(t, uid, ev.InvolvedObject.UID)
		assert.Equal(t, "Warning", ev.Type)
		assert.Contains(t, ev.Message, "spend not written into ConfigMap nobody-spend: ")
		assert.Contains(t, ev.Message, "no series matched")
		describe := kube.Kubectl(t, "-n", berlinNS, "describe", "llmb", "nobody")
		assert.Contains(t, describe, "SpendWriteFailed")
	})

	t.Run("a second run at the same instant with the same counters changes nothing", func(t *testing.T) {
		// The same --now: a later run moves llmbudget.dev/spend-as-of, and that is a change.
		code, lines := spendAll(t, llmbudget, prom, now)
		assert.Equal(t, 1, code, "%v", lines)
		for id, version := range versions {
			ns, name, _ := strings.Cut(id, "/")
			assert.Equal(t, version, getConfigMap(t, ns, name).Metadata.ResourceVersion, id)
		}
		assert.Equal(t, nobodyBefore, getConfigMap(t, berlinNS, "nobody-spend"))
		count := kube.Kubectl(t, "-n", berlinNS, "get", "events", "--field-selector=reason=SpendWriteFailed",
			"-o", "jsonpath={.items[*].count}")
		assert.Equal(t, "2", count, "the failure is counted on the one Event")
		changed := slices.ContainsFunc(lines, func(l map[string]any) bool { return l["changed"] == true })
		assert.False(t, changed, "%v", lines)
	})

	// The same instant, in two runs that split each Total budget's period differently: the first keeps its growth
	// up to 30 s before now, the second goes on from there, settling up to 10 s before now. Each writes exactly
	// what one query over the whole period wrote, wherever the counters' reset and downtime fall.
	t.Run("a run that goes on from the last run's checkpoint writes the same figures", func(t *testing.T) {
		checkpoints := kube.Namespace(t, "spend-checkpoints")
		resumed := map[string]any{}
		for _, settle := range []string{"30s", "10s"} {
			code, lines := spendAll(t, llmbudget, prom, now, "--checkpoints-namespace", checkpoints,
				"--settle", settle)
			require.Equal(t, 1, code, "%v", lines)
			for _, b := range []string{"litellm", "otel-legacy"} {
				i := slices.IndexFunc(lines, func(l map[string]any) bool { return l["budget"] == berlinNS+"/"+b })
				require.GreaterOrEqual(t, i, 0, "%v", lines)
				assert.Equal(t, false, lines[i]["changed"], "%s, settle %s: the figures of one query", b, settle)
				resumed[b+" "+settle] = lines[i]["resumedFrom"]
			}
			cps := getConfigMap(t, checkpoints, "llmbudget-spend-checkpoints."+berlinNS)
			assert.ElementsMatch(t, []string{"litellm", "otel-legacy"}, slices.Collect(maps.Keys(cps.Data)),
				"the Total budgets written: not the ledgers, not the failed one")
		}
		mark := now.Add(-30 * time.Second).UTC().Format(time.RFC3339)
		assert.Equal(t, map[string]any{"litellm 30s": "", "otel-legacy 30s": "", "litellm 10s": mark,
			"otel-legacy 10s": mark}, resumed)
		for id, version := range versions {
			ns, name, _ := strings.Cut(id, "/")
			assert.Equal(t, version, getConfigMap(t, ns, name).Metadata.ResourceVersion, id)
		}
	})
}
