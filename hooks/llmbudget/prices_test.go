package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpendReadsAPriceTableAloneOrInItsConfigMap(t *testing.T) {
	dir := t.TempDir()
	budget := filepath.Join(dir, "budget.yaml")
	require.NoError(t, os.WriteFile(budget, []byte(spendBudget), 0o600))
	example := readExample(t, "../../examples/spend/prices.yaml")
	table := "models: {gpt-4o: {input: \"2.50\", output: \"10.00\"}}\n"
	cases := map[string]struct {
		prices string
		err    string // "" when it is read
	}{
		"the example ConfigMap": {example, ""},
		"a bare table":          {table, ""},
		"a ConfigMap whose one key is not prices.yaml": {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\n" +
			"data:\n  table.yaml: |\n    " + table, ""},
		"a ConfigMap of two other keys": {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\ndata: {a: x, b: z}\n",
			"ConfigMap: no key prices.yaml, and not one key alone (keys: a, b)"},
		"a table of two documents": {table + "---\n" + table,
			"price table: a second YAML document: a table is one document"},
		"a ConfigMap and more": {example + "---\n" + example, "2 YAML documents: give the price table's ConfigMap alone"},
		"a ConfigMap whose data is not strings": {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\ndata: {a: 1}\n",
			":4: ConfigMap p: data: must be of type string, got number (quote it)"},
		"a table over 1 MiB": {table + strings.Repeat("#", 1<<20),
			"larger than 1048576 bytes (1 MiB), the most a price table holds"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prices := filepath.Join(dir, "prices.yaml")
			require.NoError(t, os.WriteFile(prices, []byte(tc.prices), 0o600))
			code, out, errOut := runProgram([]string{"spend", "-f", budget, "--source=vllm", "--namespace=team-ml",
				"--prices", prices, "--print-query", "--now=2026-11-20T12:00:00Z"}, "")
			if tc.err == "" {
				assert.Equal(t, 0, code, errOut)
				assert.NotEmpty(t, out)
				return
			}
			assert.Equal(t, 1, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, "llmbudget spend: --prices "+prices+strings.Replace(": "+tc.err, ": :", ":", 1))
			assert.NotContains(t, errOut, "promspend.", "no Go type is named")
		})
	}
}

func TestSpendReadsNoMoreThanTheBoundOfAnEndlessPriceTable(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	budget := filepath.Join(t.TempDir(), "budget.yaml")
	require.NoError(t, os.WriteFile(budget, []byte(spendBudget), 0o600))
	code, _, errOut := runProgram([]string{"spend", "-f", budget, "--source=vllm", "--prices", "/dev/zero",
		"--print-query"}, "")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--prices /dev/zero: larger than 1048576 bytes (1 MiB)")
}

func TestSpendQuotesPrometheusWarningsSoNoTerminalCodeGetsThrough(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]},` +
			`"warnings":["\u001b[31mred\nllmbudget spend: forged line"]}`))
	}))
	defer srv.Close()
	code, _, errOut := runProgram([]string{"spend", "-f", "-", "--source=litellm", "--team=t", "--prometheus", srv.URL,
		"--now=2026-11-20T12:00:00Z"}, spendBudget)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut,
		`llmbudget spend: warning from Prometheus: "\x1b[31mred\nllmbudget spend: forged line"`+"\n")
	assert.NotContains(t, errOut, "\x1b")
	assert.NotContains(t, errOut, "\nllmbudget spend: forged line")
}
