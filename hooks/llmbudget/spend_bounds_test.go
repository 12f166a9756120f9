package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpendRefusesABoundOfZeroOrLessNamingTheFlag(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	all := []string{"spend", "--all", "--prometheus=http://p"}
	tests := map[string]struct {
		args    []string
		wantErr string
	}{
		"--timeout 0s with -f": {[]string{"spend", "-f", "b.yaml", "--prometheus=http://p", "--timeout=0s"},
			"--timeout 0s"},
		"--timeout 0s with --all": {append(all, "--timeout=0s"), "--timeout 0s"},
		"--request-timeout -1s":   {append(all, "--request-timeout=-1s"), "--request-timeout -1s"},
		"--deadline 0s":           {append(all, "--deadline=0s"), "--deadline 0s"},
		"--concurrency 0":         {append(all, "--concurrency=0"), "--concurrency 0"},
		"--concurrency 100000": {append(all, "--concurrency=100000"),
			"--concurrency 100000: want at most 64 budgets computed at once"},
		"--qps 0":    {append(all, "--qps=0"), "--qps 0"},
		"--qps NaN":  {append(all, "--qps=NaN"), "--qps NaN"},
		"--burst -1": {append(all, "--burst=-1"), "--burst -1"},
		"--deadline without --all": {[]string{"spend", "-f", "b.yaml", "--prometheus=http://p", "--deadline=1m"},
			"-deadline: only with --all"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runProgram(tc.args, "")
			assert.Equal(t, 2, code, errOut)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.wantErr)
		})
	}
}

// silentAPIServer accepts connections and never answers; it returns a kubeconfig for it.
func silentAPIServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return kubeconfigFor(t, srv.URL)
}

func TestSpendAllFailsNamingTheRequestTimeoutWhenTheAPIServerNeverAnswers(t *testing.T) {
	code, out, errOut := runProgram([]string{"spend", "--all", "--prometheus=http://127.0.0.1:1",
		"--kubeconfig", silentAPIServer(t), "--request-timeout=1s"}, "")
	assert.Equal(t, 1, code, errOut)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "llmbudget spend: list llmcostbudgets.llmbudget.dev: page 1: ")
	assert.Contains(t, errOut, "(no answer within 1s, the bound of each call to the API server: --request-timeout)")
}

func TestSpendRefusesAConfigMapOverOneMiBNamingItsSizeAndTheCap(t *testing.T) {
	series := make([]string, 5000)
	for i := range series {
		series[i] = fmt.Sprintf(`{"metric":{"model":"%0200d"},"value":[1795176000,"1"]}`, i)
	}
	body := `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(series, ",") + `]}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	budget := filepath.Join(t.TempDir(), "budget.yaml")
	require.NoError(t, os.WriteFile(budget, []byte(spendBudget), 0o600))

	code, out, errOut := runProgram([]string{"spend", "-f", budget, "--prometheus", srv.URL, "--source=litellm",
		"--team=a"}, "")
	assert.Equal(t, 1, code, errOut)
	assert.Empty(t, out)
	assert.Regexp(t, `^llmbudget spend: budget team-ml/chatbot: ConfigMap team-ml/llm-spend encodes to \d{7} bytes, `+
		`more than the 1 MiB the API server stores \(promspend.MaxConfigMapBytes\)`, errOut)
}

// Every flag the docs' spend --all section names is one spend -h lists, and the section that sizes the writer
// names each of its bounds.
func TestTheSpendAllFlagsTheDocsNameAreThoseOfSpendHelp(t *testing.T) {
	doc, err := os.ReadFile("../../docs/coming-from.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "### Every budget of the cluster: `llmbudget spend --all`")
	require.True(t, ok)
	section, _, _ = strings.Cut(section, "\n### ")
	code, help, _ := runProgram([]string{"spend", "-h"}, "")
	require.Equal(t, 0, code)
	named := regexp.MustCompile("--([a-z][a-z-]*)").FindAllStringSubmatch(section, -1)
	require.NotEmpty(t, named)
	for _, m := range named {
		if m[1] == "all" {
			continue
		}
		assert.Regexp(t, "\n  -"+m[1]+"[ \n]", help, "--%s, named in docs/coming-from.md", m[1])
	}
	assert.Contains(t, section, "(commands.md#llmbudget-spend)", "the section links to the flags' reference")
	ops, err := os.ReadFile("../../docs/operations.md")
	require.NoError(t, err)
	_, sizing, ok := strings.Cut(string(ops), "## Sizing the spend writer")
	require.True(t, ok)
	sizing, _, _ = strings.Cut(sizing, "\n## ")
	for _, bound := range []string{"timeout", "request-timeout", "deadline", "concurrency", "qps", "burst", "settle"} {
		assert.Contains(t, sizing, "`--"+bound+"`", "operations.md's sizing names --%s", bound)
	}
}
