package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A recording is one run of llmbudget spend against the real Prometheus of the
// integration tests and what Prometheus answered it, recorded by
// LLMBUDGET_RECORD_SPEND=hooks/llmbudget/testdata/spend test/k8s/run.sh -run Spend.
type recording struct {
	Budget    string   `json:"budget"`
	Prices    string   `json:"prices,omitempty"`
	Args      []string `json:"args"`
	Exchanges []struct {
		Query  string          `json:"query"`
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	} `json:"exchanges"`
	Stdout string `json:"stdout"`
	Error  string `json:"error,omitempty"`
}

// fakePrometheus answers the recorded queries with the recorded answers, and any
// other query with the error Prometheus gives a bad query.
func fakePrometheus(t *testing.T, r recording) string {
	t.Helper()
	answers := map[string]int{}
	for i, x := range r.Exchanges {
		answers[x.Query] = i
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		require.NoError(t, req.ParseForm())
		i, ok := answers[req.Form.Get("query")]
		w.Header().Set("Content-Type", "application/json")
		if req.URL.Path != "/api/v1/query" || !ok {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"not recorded"}`))
			return
		}
		w.WriteHeader(r.Exchanges[i].Status)
		_, _ = w.Write(r.Exchanges[i].Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// writeFiles writes the recording's budget (and prices) and returns the flags naming them.
func writeFiles(t *testing.T, r recording) []string {
	t.Helper()
	dir := t.TempDir()
	args := []string{"-f", filepath.Join(dir, "budget.yaml")}
	require.NoError(t, os.WriteFile(args[1], []byte(r.Budget), 0o600))
	if r.Prices != "" {
		args = append(args, "--prices", filepath.Join(dir, "prices.yaml"))
		require.NoError(t, os.WriteFile(args[3], []byte(r.Prices), 0o600))
	}
	return args
}

func TestSpendAgainstRecordedPrometheusAnswersPrintsWhatTheRealRunPrinted(t *testing.T) {
	files, err := filepath.Glob("testdata/spend/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recordings in testdata/spend")
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			var r recording
			require.NoError(t, json.Unmarshal(data, &r))
			require.NotEmpty(t, r.Exchanges, "a recording without queries proves nothing")
			args := append(append([]string{"spend", "--prometheus", fakePrometheus(t, r)}, writeFiles(t, r)...), r.Args...)
			code, out, errOut := runProgram(args, "")
			assert.Equal(t, r.Stdout, out)
			assert.Equal(t, r.Error, strings.TrimSpace(errOut))
			assert.Equal(t, r.Error != "", code != 0, "the exit code says whether it failed")
		})
	}
}

const spendBudget = `apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata: {name: chatbot, namespace: team-ml}
spec:
  limitUSD: "500"
  period: {type: Monthly, timeZone: Europe/Berlin}
  costSource: {configMapName: llm-spend, key: total-usd}
`

func TestSpendFailsVisiblyAndPrintsNothing(t *testing.T) {
	dir := t.TempDir()
	budget := filepath.Join(dir, "budget.yaml")
	two := spendBudget + "---\n" + strings.Replace(spendBudget, "chatbot", "other", 1)
	require.NoError(t, os.WriteFile(budget, []byte(two), 0o600))
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens at its address any more
	tests := map[string]struct {
		args     []string
		wantErr  string
		wantCode int // 1 unless a usage error (2)
	}{
		"Prometheus unreachable": {
			[]string{"--budget=team-ml/chatbot", "--prometheus=" + closed.URL, "--source=litellm", "--team=t"},
			"connect: connection refused",
			0,
		},
		"two budgets and no choice": {
			[]string{"--prometheus=" + closed.URL, "--source=litellm"},
			"2 budgets in " + budget + ": choose one with --budget namespace/name",
			0,
		},
		"an unknown budget": {
			[]string{"--budget=team-ml/nope", "--prometheus=" + closed.URL, "--source=litellm"},
			"no LLMCostBudget team-ml/nope in",
			0,
		},
		"both --source and --query": {
			[]string{"--budget=team-ml/chatbot", "--source=litellm", "--query=cost=x"},
			"give either --source or --query",
			2,
		},
		"no Prometheus": {
			[]string{"--budget=team-ml/chatbot", "--source=litellm"},
			"no --prometheus URL",
			2,
		},
		"a bad --query": {
			[]string{"--budget=team-ml/chatbot", "--prometheus=" + closed.URL, "--query=tokens=x"},
			`--query "tokens=x": want cost=, input= or output=`,
			2,
		},
		"a --match that is no label matcher": {
			[]string{"--budget=team-ml/chatbot", "--prometheus=" + closed.URL, "--source=litellm", "--match=env=prod"},
			`--match "env=prod": want a PromQL label matcher`,
			2,
		},
		"a --match that closes the selector": {
			[]string{"--budget=team-ml/chatbot", "--prometheus=" + closed.URL, "--source=litellm",
				`--match=env="a"} or vector(1000) or x{a="b"`},
			`want a PromQL label matcher`,
			2,
		},
		"a --step that does not divide 15m": {
			[]string{"--budget=team-ml/chatbot", "--prometheus=" + closed.URL, "--source=litellm", "--step=7s"},
			"--step 7s: want a step that divides 15m",
			2,
		},
		"a bad --now": {
			[]string{"--budget=team-ml/chatbot", "--prometheus=" + closed.URL, "--source=vllm", "--now=today"},
			`--now "today": must be RFC 3339`,
			2,
		},
		"a misspelt --source": {
			[]string{"--budget=team-ml/chatbot", "--prometheus=" + closed.URL, "--source=litelm"},
			`llmbudget spend: source "litelm" is not one of litellm, vllm, otel-genai`,
			2,
		},
		"a bad --pod-label": {
			[]string{"--budget=team-ml/chatbot", "--prometheus=" + closed.URL, "--source=vllm", "--pod-label=x"},
			`--pod-label "x"`,
			2,
		},
		"token-only without prices": {
			[]string{"--budget=team-ml/chatbot", "--print-query=false", "--prometheus=" + closed.URL, "--source=vllm",
				"--now=2026-11-20T12:00:00Z"},
			"source vllm counts tokens only: give a price table with --prices",
			0,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runProgram(append([]string{"spend", "-f", budget}, tc.args...), "")
			assert.Equal(t, max(tc.wantCode, 1), code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.wantErr)
		})
	}
}

func TestSpendPrintQueryShowsEveryQueryWithoutAskingPrometheus(t *testing.T) {
	const queries = "# total-usd input\n" +
		`sum_over_time((sum by (model_name) ((last_over_time(vllm:prompt_tokens_total{namespace="team-ml"}[1h]) - ` +
		`last_over_time(vllm:prompt_tokens_total{namespace="team-ml"}[1h] offset 15s)) >= 0 or ` +
		`last_over_time(vllm:prompt_tokens_total{namespace="team-ml"}[1h])))[19d12h59m59s999ms:15s] @ 1795176000.000)` +
		"\n# total-usd output\n" +
		`sum_over_time((sum by (model_name) ((last_over_time(vllm:generation_tokens_total{namespace="team-ml"}[1h]) - ` +
		`last_over_time(vllm:generation_tokens_total{namespace="team-ml"}[1h] offset 15s)) >= 0 or ` +
		`last_over_time(vllm:generation_tokens_total{namespace="team-ml"}[1h])))[19d12h59m59s999ms:15s] @ 1795176000.000)` +
		"\n"
	code, out, errOut := runProgram([]string{"spend", "-f", "-", "--source=vllm", "--namespace=team-ml",
		"--now=2026-11-20T12:00:00Z", "--print-query"}, spendBudget)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, queries, out)
}

func TestSpendQueryFlagsNameYourOwnCounters(t *testing.T) {
	code, out, errOut := runProgram([]string{"spend", "-f", "-", "--query=cost=my_cost_total{app=\"x\"}",
		"--model-label=llm", "--now=2026-11-20T12:00:00Z", "--print-query"}, spendBudget)
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out,
		"# total-usd cost\nsum_over_time((sum by (llm) ((last_over_time(my_cost_total{app=\"x\"}[1h])"), out)
	assert.Equal(t, 1, strings.Count(out, "\n#")+1)
}

func TestSpendReadsTheSourceTheBudgetDeclares(t *testing.T) {
	budget := filepath.Join(t.TempDir(), "budget.yaml")
	declared := strings.Replace(spendBudget, "key: total-usd}", `key: total-usd,
    prometheus: {source: litellm, selector: {team: ml, match: ['env="prod"']}, step: 1m}}`, 1)
	require.NoError(t, os.WriteFile(budget, []byte(declared), 0o600))
	code, out, errOut := runProgram([]string{"spend", "-f", budget, "--print-query", "--now=2026-11-20T12:00:00Z"}, "")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `litellm_spend_metric_total{team="ml",env="prod"}`)
	assert.Contains(t, out, "999ms:1m] @", "the declared step")

	code, out, _ = runProgram([]string{"spend", "-f", budget, "--print-query", "--now=2026-11-20T12:00:00Z",
		"--step=30s"}, "")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "999ms:30s] @", "--step wins over the declared step")
}

func TestSpendHelpListsItsExitStatuses(t *testing.T) {
	code, out, _ := runProgram([]string{"spend", "-h"}, "")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "\nexit status:\n")
	assert.Contains(t, out, "llmbudget spend --all --prometheus URL [-n NAMESPACE]")
	assert.Contains(t, out, "with --all, every\n     budget's spend was written")
	for _, status := range []string{"\n  0  ", "\n  1  ", "\n  2  "} {
		assert.Contains(t, out, status)
	}
}

func TestSpendPrintQueryRefusesABrokenPriceTable(t *testing.T) {
	dir := t.TempDir()
	budget, prices := filepath.Join(dir, "budget.yaml"), filepath.Join(dir, "prices.yaml")
	require.NoError(t, os.WriteFile(budget, []byte(spendBudget), 0o600))
	require.NoError(t, os.WriteFile(prices, []byte("models: {gpt-4o: {input: ten}}\n"), 0o600))
	code, out, errOut := runProgram([]string{"spend", "-f", budget, "--source=vllm", "--namespace=team-ml",
		"--prices", prices, "--print-query"}, "")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, prices+": price table")
}

func TestSpendAllRefusesWhatOnlyOneBudgetsRunTakes(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	tests := map[string]struct {
		args     []string
		wantErr  string
		wantCode int
	}{
		"a file with --all": {[]string{"--all", "--prometheus=http://p", "-f", "budget.yaml"},
			"-f with --all: each budget's spec.costSource.prometheus says what to read", 2},
		"a selector with --all": {[]string{"--all", "--prometheus=http://p", "--team=a", "--step=1m"},
			"-step, -team with --all", 2},
		"no Prometheus": {[]string{"--all"}, "no --prometheus URL", 2},
		"a bad --now":   {[]string{"--all", "--prometheus=http://p", "--now=today"}, `--now "today": must be RFC 3339`, 2},
		"-n without --all": {[]string{"-f", "budget.yaml", "--prometheus=http://p", "-n", "team-a"},
			"-n: only with --all", 2},
		"neither -f nor --all": {[]string{"--prometheus=http://p"}, "give -f FILE, or --all", 2},
		"no kubeconfig outside a cluster": {[]string{"--all", "--prometheus=http://p"},
			"no --kubeconfig and no $KUBECONFIG, and not in a cluster", 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runProgram(append([]string{"spend"}, tc.args...), "")
			assert.Equal(t, tc.wantCode, code, errOut)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.wantErr)
		})
	}
}

// apiServer serves the LLMCostBudget list with status and body, and returns a kubeconfig for it.
func apiServer(t *testing.T, status int, body string) string {
	t.Helper()
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(func() {
		srv.Close()
		assert.Equal(t, []string{"/apis/llmbudget.dev/v1alpha1/namespaces/team-a/llmcostbudgets"}, asked)
	})
	return kubeconfigFor(t, srv.URL)
}

func TestSpendAllListsTheBudgetsOfTheAPIServerItIsGiven(t *testing.T) {
	t.Run("no budget: nothing to write, a summary line, status 0", func(t *testing.T) {
		kubeconfig := apiServer(t, http.StatusOK, `{"apiVersion":"llmbudget.dev/v1alpha1","kind":"LLMCostBudgetList",`+
			`"metadata":{},"items":[]}`)
		code, out, errOut := runProgram([]string{"spend", "--all", "--prometheus=http://127.0.0.1:1", "-n", "team-a",
			"--kubeconfig", kubeconfig}, "")
		require.Equal(t, 0, code, errOut)
		assert.Empty(t, out)
		var line map[string]any
		require.NoError(t, json.Unmarshal([]byte(errOut), &line), errOut)
		assert.Equal(t, "spend writer done", line["msg"])
		assert.Equal(t, 0.0, line["written"])
		assert.Equal(t, []any{}, line["failedBudgets"], "a list, even empty")
	})
	t.Run("budgets that cannot be listed: status 1 and the API server's words", func(t *testing.T) {
		kubeconfig := apiServer(t, http.StatusForbidden, `{"apiVersion":"v1","kind":"Status","status":"Failure",`+
			`"message":"llmcostbudgets.llmbudget.dev is forbidden: User \"u\" cannot list resource","reason":"Forbidden",`+
			`"code":403}`)
		t.Setenv("KUBECONFIG", kubeconfig)
		code, _, errOut := runProgram([]string{"spend", "--all", "--prometheus=http://127.0.0.1:1", "-n", "team-a"}, "")
		assert.Equal(t, 1, code)
		assert.Equal(t, "llmbudget spend: list llmcostbudgets.llmbudget.dev: page 1: "+
			"llmcostbudgets.llmbudget.dev is forbidden: "+
			"User \"u\" cannot list resource\n", errOut)
	})
}

// kubeconfigFor is a kubeconfig whose one cluster is the API server at url, with a token.
func kubeconfigFor(t *testing.T, url string) string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+url+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	return kubeconfig
}

// A spend that cannot reach Prometheus says why first, in a short line, and the query and its error after.
func TestSpendPutsWhyPrometheusCannotBeReachedFirst(t *testing.T) {
	dir := t.TempDir()
	budget := filepath.Join(dir, "budget.yaml")
	require.NoError(t, os.WriteFile(budget, []byte(spendBudget), 0o600))
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	code, out, errOut := runProgram([]string{"spend", "-f", budget, "--prometheus=" + closed.URL,
		"--source=litellm", "--team=t"}, "")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	first, rest, _ := strings.Cut(errOut, "\n")
	assert.Equal(t, "llmbudget spend: cannot reach Prometheus at "+closed.URL+": connection refused", first)
	assert.Less(t, len(first), 100)
	assert.Contains(t, rest, "llmbudget spend: query ")
	assert.Contains(t, rest, "connect: connection refused")
}

func TestUnreachableNamesTheCauseInAFewWords(t *testing.T) {
	tests := map[string]struct {
		err  error
		want string
	}{
		"connection refused": {&url.Error{Op: "Post", URL: "http://p", Err: &net.OpError{Op: "dial", Net: "tcp",
			Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, "connection refused"},
		"no such host": {&url.Error{Op: "Post", URL: "http://p", Err: &net.OpError{Op: "dial", Net: "tcp",
			Err: &net.DNSError{Err: "no such host", Name: "prometheus.monitoring", IsNotFound: true}}},
			"no such host prometheus.monitoring"},
		"a lookup that fails": {&net.DNSError{Err: "server misbehaving", Name: "p"}, "cannot look up p: server misbehaving"},
		"no answer in time":   {fmt.Errorf("query x: %w", context.DeadlineExceeded), "no answer within --timeout (2m0s)"},
		"an answer, refused":  {errors.New("query x: Prometheus answered 400 Bad Request: parse error"), ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, unreachable(tc.err, 2*time.Minute))
		})
	}
}
