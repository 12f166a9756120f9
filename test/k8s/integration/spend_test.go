//go:build integration

package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// llmbudget spend against a real Prometheus (built by build-prometheus.sh) scraping an
// exporter whose LiteLLM-, vLLM- and OpenTelemetry-shaped counters take known values, with
// a counter reset, a series that disappears and comes back, and failed scrapes. The
// ConfigMap it prints goes to the real API server, and llmbudget eval must read exactly
// the known growth from it.

// phases are what the exporter serves, each for at least scrapesPerPhase scrapes; the
// last one stays. nil is a phase of failed scrapes (HTTP 503), which leaves staleness
// markers. Team team-b, namespace other and service other-bot must never count.
var phases = []map[string]float64{
	{
		litellm("spend", "team-a", "gpt-4o", "k1"):                   1.25,
		litellm("spend", "team-a", "claude-3-5-haiku", "k1"):         0.1,
		litellm("spend", "team-b", "gpt-4o", "k2"):                   100,
		litellm("input_tokens", "team-a", "gpt-4o", "k1"):            1000,
		litellm("input_tokens", "team-a", "claude-3-5-haiku", "k1"):  400,
		litellm("input_tokens", "team-b", "gpt-4o", "k2"):            99999,
		litellm("output_tokens", "team-a", "gpt-4o", "k1"):           200,
		litellm("output_tokens", "team-a", "claude-3-5-haiku", "k1"): 100,
		litellm("output_tokens", "team-b", "gpt-4o", "k2"):           9999,
		vllm("prompt_tokens", "team-ml", "llama-3.1-8b"):             5000,
		vllm("generation_tokens", "team-ml", "llama-3.1-8b"):         1000,
		vllm("prompt_tokens", "other", "llama-3.1-8b"):               777,
		vllm("generation_tokens", "other", "llama-3.1-8b"):           777,
		otelTokens("support-bot", "gpt-4o-mini", "input"):            300,
		otelTokens("support-bot", "gpt-4o-mini", "output"):           50,
		otelTokens("other-bot", "gpt-4o-mini", "input"):              5555,
	},
	{
		litellm("spend", "team-a", "gpt-4o", "k1"):                   2.5,
		litellm("spend", "team-a", "claude-3-5-haiku", "k1"):         0.1 + 0.2, // 0.30000000000000004
		litellm("spend", "team-b", "gpt-4o", "k2"):                   200,
		litellm("input_tokens", "team-a", "gpt-4o", "k1"):            2000,
		litellm("input_tokens", "team-a", "claude-3-5-haiku", "k1"):  800,
		litellm("input_tokens", "team-b", "gpt-4o", "k2"):            199999,
		litellm("output_tokens", "team-a", "gpt-4o", "k1"):           450,
		litellm("output_tokens", "team-a", "claude-3-5-haiku", "k1"): 180,
		litellm("output_tokens", "team-b", "gpt-4o", "k2"):           19999,
		vllm("prompt_tokens", "team-ml", "llama-3.1-8b"):             8000,
		vllm("generation_tokens", "team-ml", "llama-3.1-8b"):         1500,
		vllm("prompt_tokens", "other", "llama-3.1-8b"):               1777,
		vllm("generation_tokens", "other", "llama-3.1-8b"):           1777,
		otelTokens("support-bot", "gpt-4o-mini", "input"):            600,
		otelTokens("support-bot", "gpt-4o-mini", "output"):           80,
		otelTokens("other-bot", "gpt-4o-mini", "input"):              6555,
	},
	// Every process restarted: counters start again from zero, and the proxy has not
	// served claude-3-5-haiku since.
	{
		litellm("spend", "team-a", "gpt-4o", "k1"):           0.75,
		litellm("spend", "team-b", "gpt-4o", "k2"):           5,
		litellm("input_tokens", "team-a", "gpt-4o", "k1"):    300,
		litellm("input_tokens", "team-b", "gpt-4o", "k2"):    5,
		litellm("output_tokens", "team-a", "gpt-4o", "k1"):   60,
		litellm("output_tokens", "team-b", "gpt-4o", "k2"):   5,
		vllm("prompt_tokens", "team-ml", "llama-3.1-8b"):     1000,
		vllm("generation_tokens", "team-ml", "llama-3.1-8b"): 100,
		vllm("prompt_tokens", "other", "llama-3.1-8b"):       5,
		vllm("generation_tokens", "other", "llama-3.1-8b"):   5,
		otelTokens("support-bot", "gpt-4o-mini", "input"):    100,
		otelTokens("support-bot", "gpt-4o-mini", "output"):   10,
		otelTokens("other-bot", "gpt-4o-mini", "input"):      5,
	},
	nil, // the exporter is down for a while
	{
		litellm("spend", "team-a", "gpt-4o", "k1"):                   1.0,
		litellm("spend", "team-a", "claude-3-5-haiku", "k1"):         0.05,
		litellm("spend", "team-b", "gpt-4o", "k2"):                   6,
		litellm("input_tokens", "team-a", "gpt-4o", "k1"):            500,
		litellm("input_tokens", "team-a", "claude-3-5-haiku", "k1"):  100,
		litellm("input_tokens", "team-b", "gpt-4o", "k2"):            6,
		litellm("output_tokens", "team-a", "gpt-4o", "k1"):           90,
		litellm("output_tokens", "team-a", "claude-3-5-haiku", "k1"): 20,
		litellm("output_tokens", "team-b", "gpt-4o", "k2"):           6,
		vllm("prompt_tokens", "team-ml", "llama-3.1-8b"):             2500,
		vllm("generation_tokens", "team-ml", "llama-3.1-8b"):         400,
		vllm("prompt_tokens", "other", "llama-3.1-8b"):               6,
		vllm("generation_tokens", "other", "llama-3.1-8b"):           6,
		otelTokens("support-bot", "gpt-4o-mini", "input"):            250,
		otelTokens("support-bot", "gpt-4o-mini", "output"):           30,
		otelTokens("other-bot", "gpt-4o-mini", "input"):              6,
	},
}

// litellm names a series of LiteLLM's counter litellm_<counter>_metric_total.
func litellm(counter, team, model, apiKey string) string {
	return fmt.Sprintf(`litellm_%s_metric_total{team=%q,model=%q,hashed_api_key=%q}`, counter, team, model, apiKey)
}

// vllm names a series of vLLM's counter vllm:<counter>_total.
func vllm(counter, namespace, model string) string {
	return fmt.Sprintf(`vllm:%s_total{namespace=%q,model_name=%q}`, counter, namespace, model)
}

// otelTokens names a series of the sum of OpenTelemetry's gen_ai.client.token.usage histogram.
func otelTokens(job, model, tokenType string) string {
	return fmt.Sprintf(`gen_ai_client_token_usage_sum{job=%q,gen_ai_request_model=%q,gen_ai_token_type=%q}`,
		job, model, tokenType)
}

const scrapesPerPhase = 3

// exporter serves phases in turn, moving on after scrapesPerPhase scrapes of each.
type exporter struct {
	mu      sync.Mutex
	phase   int
	scrapes int
}

func (e *exporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	values := phases[e.phase]
	e.scrapes++
	if e.scrapes >= scrapesPerPhase && e.phase < len(phases)-1 {
		e.phase, e.scrapes = e.phase+1, 0
	}
	if values == nil {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	for _, name := range []string{
		"litellm_spend_metric_total", "litellm_input_tokens_metric_total", "litellm_output_tokens_metric_total",
		"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "gen_ai_client_token_usage_sum",
	} {
		fmt.Fprintf(w, "# TYPE %s untyped\n", name)
		for series, v := range values {
			if strings.HasPrefix(series, name+"{") {
				fmt.Fprintf(w, "%s %v\n", series, v)
			}
		}
	}
}

// current is the index of the phase the exporter serves now.
func (e *exporter) current() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.phase
}

// done reports whether the last phase has been scraped scrapesPerPhase times.
func (e *exporter) done() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.phase == len(phases)-1 && e.scrapes >= scrapesPerPhase
}

// startPrometheus runs the Prometheus that build-prometheus.sh built, scraping target
// every second, with extra flags, and returns its URL.
func startPrometheus(t *testing.T, target string, extra ...string) string {
	t.Helper()
	dir := os.Getenv("LLMBUDGET_PROMETHEUS_BIN")
	if dir == "" {
		home, err := os.UserHomeDir()
		require.NoError(t, err)
		dir = filepath.Join(home, ".cache", "llmbudget", "prometheus", "v0.316.0")
	}
	bin := filepath.Join(dir, "prometheus")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no Prometheus at %s: run test/k8s/build-prometheus.sh (%v)", bin, err)
	}
	work := t.TempDir()
	config := fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 500ms}
scrape_configs:
- job_name: exporter
  honor_labels: true
  static_configs: [{targets: [%q]}]
`, target)
	require.NoError(t, os.WriteFile(filepath.Join(work, "prometheus.yml"), []byte(config), 0o600))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"--config.file=" + filepath.Join(work, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(work, "data"), "--web.listen-address=" + addr}, extra...)...)
	logf, err := os.Create(filepath.Join(work, "prometheus.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(logf.Name())
			lines := strings.Split(string(log), "\n")
			t.Logf("prometheus log:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	base := "http://" + addr
	cluster.WaitFor(t, time.Minute, "Prometheus to be ready", func() (bool, string) {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return base
}

// recorder passes queries on to Prometheus and keeps each query with its answer, for
// the replay test of the spend command (hooks/llmbudget/testdata/spend).
type recorder struct {
	target string
	mu     sync.Mutex
	seen   []exchange
}

type exchange struct {
	Query  string          `json:"query"`
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, err := http.NewRequestWithContext(req.Context(), req.Method, r.target+req.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = req.Header.Clone()
	out.Header.Del("Accept-Encoding") // the transport then asks for gzip and unpacks it
	resp, err := http.DefaultClient.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	form, _ := url.ParseQuery(string(body))
	r.mu.Lock()
	r.seen = append(r.seen, exchange{Query: form.Get("query"), Status: resp.StatusCode, Body: answer})
	r.mu.Unlock()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

func (r *recorder) take() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := r.seen
	r.seen = nil
	return seen
}

// recording is one run of llmbudget spend and what Prometheus answered it.
type recording struct {
	Budget    string     `json:"budget"`
	Prices    string     `json:"prices,omitempty"`
	Args      []string   `json:"args"`
	Exchanges []exchange `json:"exchanges"`
	Stdout    string     `json:"stdout"`
	Error     string     `json:"error,omitempty"`
}

// buildLLMBudget builds the llmbudget command from the main module.
func buildLLMBudget(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "llmbudget")
	build := exec.Command("go", "build", "-o", bin, "./hooks/llmbudget")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build llmbudget: %s", out)
	return bin
}

// evalStatus is the part of llmbudget eval's output these tests check.
type evalStatus struct {
	Status struct {
		State            string `json:"state"`
		ObservedSpendUSD string `json:"observedSpendUSD"`
		Tokens           struct {
			Input  int64 `json:"input"`
			Output int64 `json:"output"`
		} `json:"tokens"`
		Conditions []struct {
			Type, Status, Reason, Message string
		} `json:"conditions"`
	} `json:"status"`
}

func TestSpendFromARealPrometheusIsExactlyWhatTheBudgetSees(t *testing.T) {
	installBudgetCRD(t)
	llmbudget := buildLLMBudget(t)
	exp := &exporter{}
	target := httptest.NewServer(exp)
	defer target.Close()
	prom := startPrometheus(t, strings.TrimPrefix(target.URL, "http://"))
	rec := &recorder{target: prom}
	proxy := httptest.NewServer(rec)
	defer proxy.Close()

	cluster.WaitFor(t, 2*time.Minute, "the exporter to go through every phase", func() (bool, string) {
		return exp.done(), ""
	})
	// The last scrape is stored once Prometheus answers with its value.
	cluster.WaitFor(t, 30*time.Second, "Prometheus to store the last phase", func() (bool, string) {
		query := `litellm_spend_metric_total{model="claude-3-5-haiku"} == 0.05`
		resp, err := http.Get(prom + "/api/v1/query?query=" + url.QueryEscape(query))
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), `"0.05"`), string(body)
	})
	now := time.Now().UTC().Truncate(time.Second)
	// A daily budget in a zone whose midnight is not within the last few minutes, so
	// the whole test's data is in one period.
	zone := "UTC"
	if now.Hour() == 0 && now.Minute() < 10 {
		zone = "Asia/Tokyo"
	}
	// For the record: what increase() makes of the same counters (they grew by 3.85 USD).
	since := now.Sub(now.Truncate(24 * time.Hour)).Milliseconds()
	increase := fmt.Sprintf(`sum(increase(litellm_spend_metric_total{team="team-a"}[%dms] @ %d))`, since, now.Unix())
	if resp, err := http.Get(prom + "/api/v1/query?query=" + url.QueryEscape(increase)); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("increase() over the same counters: %s", body)
	}
	ns := kube.Namespace(t, "spend")
	prices := "models:\n  llama-3.1-8b: {input: \"0.20\", output: \"0.600000001\"}\n" +
		"default: {input: \"0.15\", output: \"0.60\"}\n"

	tests := map[string]struct {
		format     string
		args       []string
		wantUSD    string
		wantInput  int64
		wantOutput int64
	}{
		// gpt-4o: 1.25, then 2.5, a reset to 0.75, down, 1.0: 2.5 + 0.75 + 0.25 = 3.5 USD;
		// claude: 0.1, then 0.30000000000000004, gone, back at 0.05: 0.3 + 0.05 = 0.35.
		"litellm": {"Total", []string{"--source=litellm", "--team=team-a"}, "3.85",
			1000 + 1000 + 300 + 200 + 400 + 400 + 100, 200 + 250 + 60 + 30 + 100 + 80 + 20},
		// 10,500 prompt tokens at 0.20/M and 1,900 generated at 0.600000001/M.
		"vllm": {"DailyLedger", []string{"--source=vllm", "--namespace=team-ml"}, "0.00324",
			5000 + 3000 + 1000 + 1500, 1000 + 500 + 100 + 300},
		// 300 + 300 + 100 + 150 input at 0.15/M, 50 + 30 + 10 + 20 output at 0.60/M (the default).
		"otel-genai": {"Total", []string{"--source=otel-genai", "--service=support-bot"}, "0.0001935", 850, 110},
	}
	// Where each format keeps its spend in the ConfigMap, as the budget's costSource says it.
	keyOf := map[string]string{"Total": "key: total", "DailyLedger": "keyPrefix: spend-"}
	var recordings = map[string]recording{}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cm := name + "-spend"
			budget := fmt.Sprintf(`apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata: {name: %s, namespace: %s}
spec:
  limitUSD: "10"
  tokenLimits: {total: 1000000}   # so that status shows the tokens
  period: {type: Daily, timeZone: %s}
  costSource: {configMapName: %s, format: %s, %s}
`, name, ns, zone, cm, tc.format, keyOf[tc.format])
			dir := t.TempDir()
			budgetFile, pricesFile := filepath.Join(dir, "budget.yaml"), filepath.Join(dir, "prices.yaml")
			require.NoError(t, os.WriteFile(budgetFile, []byte(budget), 0o600))
			require.NoError(t, os.WriteFile(pricesFile, []byte(prices), 0o600))
			kube.ApplyYAML(t, "", budget)
			kube.ApplyYAML(t, ns, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\n", cm))

			args := append([]string{"--step=500ms", "--now=" + now.Format(time.RFC3339)}, tc.args...)
			spend := []string{"spend", "-f", budgetFile, "--prometheus", proxy.URL, "--prices", pricesFile}
			run := exec.Command(llmbudget, append(spend, args...)...)
			var stdout, stderr bytes.Buffer
			run.Stdout, run.Stderr = &stdout, &stderr
			require.NoError(t, run.Run(), "llmbudget spend: %s", stderr.String())
			recordings[name] = recording{
				Budget: budget, Prices: prices, Args: args, Exchanges: rec.take(), Stdout: stdout.String(),
			}

			// What the CronJob does: a merge patch of the printed ConfigMap.
			patch := filepath.Join(dir, "configmap.yaml")
			require.NoError(t, os.WriteFile(patch, stdout.Bytes(), 0o600))
			kube.Kubectl(t, "--namespace="+ns, "patch", "configmap", cm, "--type=merge", "--patch-file="+patch)
			stored := filepath.Join(dir, "stored.yaml")
			configMap := kube.Kubectl(t, "--namespace="+ns, "get", "configmap", cm, "-o", "yaml")
			require.NoError(t, os.WriteFile(stored, []byte(configMap), 0o600))

			out, err := exec.Command(llmbudget, "eval", "-f", budgetFile, "-f", stored,
				"--now="+now.Format(time.RFC3339)).CombinedOutput()
			require.NoError(t, err, "llmbudget eval: %s", out)
			var got evalStatus
			require.NoError(t, yaml.Unmarshal(out, &got), "%s", out)
			assert.Equal(t, tc.wantUSD, got.Status.ObservedSpendUSD, "%s", out)
			assert.Equal(t, tc.wantInput, got.Status.Tokens.Input, "%s", out)
			assert.Equal(t, tc.wantOutput, got.Status.Tokens.Output, "%s", out)
		})
	}

	t.Run("a query that Prometheus refuses prints nothing and fails", func(t *testing.T) {
		dir := t.TempDir()
		budget := fmt.Sprintf(`apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata: {name: bad, namespace: %s}
spec:
  limitUSD: "10"
  period: {type: Daily, timeZone: %s}
  costSource: {configMapName: bad-spend, key: total}
`, ns, zone)
		budgetFile := filepath.Join(dir, "budget.yaml")
		require.NoError(t, os.WriteFile(budgetFile, []byte(budget), 0o600))
		for name, args := range map[string][]string{
			"refused": {"--source=litellm", `--match=team=~"(unclosed"`},
			"empty":   {"--source=litellm", "--team=nobody"},
		} {
			args = append([]string{"--step=500ms", "--now=" + now.Format(time.RFC3339)}, args...)
			run := exec.Command(llmbudget, append([]string{"spend", "-f", budgetFile, "--prometheus", proxy.URL}, args...)...)
			var stdout, stderr bytes.Buffer
			run.Stdout, run.Stderr = &stdout, &stderr
			err := run.Run()
			require.Error(t, err, name)
			assert.Empty(t, stdout.String(), name)
			recordings["error-"+name] = recording{
				Budget: budget, Args: args, Exchanges: rec.take(), Error: strings.TrimSpace(stderr.String()),
			}
		}
	})

	t.Run("the cluster's spend writer may write spend sources and nothing else", func(t *testing.T) {
		installSpendSourcePolicies(t)
		installSpendWriterRBAC(t)
		kube.EnsureNamespace(t, "team-support")
		budget := filepath.Join(repoRoot, "examples", "spend", "vllm", "budget.yaml")
		kube.Kubectl(t, "apply", "--server-side", "--field-manager=llmbudget-test", "-f", budget)
		t.Cleanup(func() { _, _, _ = kube.Run(context.Background(), "", "delete", "-f", budget, "--wait=false") })
		kube.ApplyYAML(t, "team-support", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: someone-elses}\n")
		as := []string{"--as=" + spendWriter, "--namespace=team-support"}
		// The budget's ConfigMap, which the writer creates by server-side apply, labelled as a spend source, and
		// then patches.
		out, err := kube.KubectlErr(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vllm-serving-spend, "+
			"labels: {llmbudget.dev/spend-source: vllm-serving-spend}}\n",
			append(as, "apply", "--server-side", "--field-manager=llmbudget-spend", "-f", "-")...)
		require.NoError(t, err, out)
		patch := `{"data":{"spend-2026-11-29":"{\"costUSD\":\"1.00\",\"inputTokens\":1,\"outputTokens\":1}"}}`
		kube.Kubectl(t, append(as, "patch", "configmap", "vllm-serving-spend", "--type=merge", "-p", patch)...)
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"patch", "configmap", "someone-elses", "--type=merge", "-p", patch},
				"the spend writers may write only spend sources: " +
					"ConfigMap team-support/someone-elses carries no label llmbudget.dev/spend-source"},
			{[]string{"create", "configmap", "new-one"}, "the spend writers may write only spend sources: " +
				"ConfigMap team-support/new-one carries no label llmbudget.dev/spend-source"},
			{[]string{"delete", "configmap", "vllm-serving-spend"}, `cannot delete resource "configmaps"`},
			{[]string{"get", "secrets"}, `cannot list resource "secrets"`},
		} {
			out, err := kube.KubectlErr(t, "", append(as, tc.args...)...)
			require.Error(t, err, "%v: %s", tc.args, out)
			assert.Contains(t, out, tc.want, "%v", tc.args)
		}
	})

	if dir := os.Getenv("LLMBUDGET_RECORD_SPEND"); dir != "" && !t.Failed() {
		for name, r := range recordings {
			data, err := json.MarshalIndent(r, "", "  ")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), append(data, '\n'), 0o644))
		}
	}
}
