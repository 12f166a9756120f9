package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	migrateOperatorExample = "../../examples/migrate/llm-cost-budget-operator.yaml"
	migrateKelosExample    = "../../examples/migrate/kelos-taskbudget.yaml"
)

// runProgram runs the llmbudget program with args and stdin, as main would.
func runProgram(args []string, stdin string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMigrateConvertsFilesAndStdinIntoOneStream(t *testing.T) {
	kelos, err := os.ReadFile(migrateKelosExample)
	require.NoError(t, err)
	code, out, errOut := runProgram([]string{"migrate", "-f", migrateOperatorExample, "-f", "-"}, string(kelos))
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 2, strings.Count(out, "\n---\n"), "three documents, two separators")
	assert.Equal(t, 3, strings.Count(out, "kind: LLMCostBudget\n"))
	assert.Contains(t, errOut, "llmbudget migrate: note: stdin:7: TaskBudget team-ml/agents-daily: label the Tasks")
}

func TestMigrateOutputIsAcceptedByEval(t *testing.T) {
	code, converted, errOut := runProgram([]string{"migrate", "-f", migrateOperatorExample}, "")
	require.Equal(t, 0, code, errOut)
	spend := `apiVersion: v1
kind: ConfigMap
metadata: {name: llm-spend, namespace: team-ml, labels: {llmbudget.dev/spend-source: chatbot}}
data: {total-usd: "412.35"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: llm-cost, namespace: team-support, labels: {llmbudget.dev/spend-source: support-bot}}
data: {total_usd: "1500.00"}
`
	code, out, errOut := runProgram([]string{"eval", "-f", "-", "--now", "2026-11-20T12:00:00Z"},
		converted+"---\n"+spend)
	require.Equal(t, 0, code, errOut)
	// The headline up to its children count: state, figures and period.
	headlines := regexp.MustCompile(`(?m)^# ([^;]*);`).FindAllStringSubmatch(out, -1)
	require.Len(t, headlines, 2, out)
	assert.Equal(t, "team-ml/chatbot is Warning: 412.35 of 500.00 USD (82%) "+
		"in 2026-11-01T00:00:00Z to 2026-12-01T00:00:00Z", headlines[0][1])
	assert.Equal(t, "team-support/support-bot is OverBudget: 1500.00 of 1500.00 USD (100%) "+
		"in 2026-11-01T00:00:00Z to 2026-12-01T00:00:00Z", headlines[1][1])
}

func TestMigrateRefusesOtherKindsAndSaysHowToSkipThem(t *testing.T) {
	dir := t.TempDir()
	mixed := filepath.Join(dir, "mixed.yaml")
	budget, err := os.ReadFile(migrateOperatorExample)
	require.NoError(t, err)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: llm-spend, namespace: team-ml}\n"
	require.NoError(t, os.WriteFile(mixed, append(budget, []byte("---\n"+cm)...), 0o644))

	code, out, errOut := runProgram([]string{"migrate", "-f", mixed}, "")
	assert.Equal(t, 1, code)
	assert.Empty(t, out, "nothing is printed when any document is refused")
	assert.Equal(t, "llmbudget migrate: "+mixed+":104: ConfigMap team-ml/llm-spend: "+
		"not a kind migrate converts: v1 ConfigMap (--skip-unknown-kinds skips such documents)\n", errOut)

	code, out, errOut = runProgram([]string{"migrate", "--skip-unknown-kinds", "-f", mixed}, "")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, 2, strings.Count(out, "kind: LLMCostBudget\n"))
	assert.Equal(t, "llmbudget migrate: note: "+mixed+":104: ConfigMap team-ml/llm-spend: "+
		"skipped: not a kind migrate converts: v1 ConfigMap\n", errOut)
}

func TestMigrateCommandLineMistakesAreExplained(t *testing.T) {
	tests := map[string]struct {
		args     []string
		stdin    string
		wantCode int
		wantErr  string
	}{
		"no input file": {
			[]string{"migrate"},
			"",
			2,
			"llmbudget migrate: no input: give at least one -f FILE (- for stdin)",
		},
		"a file given without -f": {
			[]string{"migrate", migrateOperatorExample},
			"",
			2,
			`llmbudget migrate: unexpected argument "` + migrateOperatorExample + `": give files with -f`,
		},
		"stdin given twice": {
			[]string{"migrate", "-f", "-", "-f", "-"},
			"",
			2,
			"llmbudget migrate: -f - given twice: stdin can be read only once",
		},
		"a file that does not exist": {
			[]string{"migrate", "-f", "missing.yaml"},
			"",
			1,
			"llmbudget migrate: open missing.yaml: no such file or directory",
		},
		"an unknown flag": {[]string{"migrate", "--skip"}, "", 2, "llmbudget migrate: flag provided but not defined: -skip"},
		"an input with nothing to convert": {
			[]string{"migrate", "-f", "-"},
			"---\n",
			1,
			"llmbudget migrate: nothing to convert in -: " +
				"no finops.kineticgain.com/v1alpha1 LLMCostBudget or kelos.dev/v1alpha2 TaskBudget",
		},
		"a refused document on stdin": {
			[]string{"migrate", "-f", "-"},
			"apiVersion: finops.kineticgain.com/v1alpha1\nkind: LLMCostBudget\n" +
				"metadata: {name: chatbot, namespace: team-ml}\n" +
				"spec:\n  monthlyLimitUSD: \"5\"\n  costSource: {configMapName: c, keyy: k}\n",
			1,
			`llmbudget migrate: stdin:6: LLMCostBudget team-ml/chatbot: unknown field "spec.costSource.keyy"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runProgram(tc.args, tc.stdin)
			assert.Equal(t, tc.wantCode, code, "exit status")
			assert.Empty(t, out)
			firstLine, _, _ := strings.Cut(errOut, "\n")
			assert.Equal(t, tc.wantErr, firstLine)
		})
	}
}

func TestMigrateReportsEveryErrorOfEveryFileAsEvalDoes(t *testing.T) {
	dir := t.TempDir()
	bad := func(name, field string) string {
		return "apiVersion: finops.kineticgain.com/v1alpha1\nkind: LLMCostBudget\nmetadata: {name: " + name +
			", namespace: team-ml}\nspec:\n  monthlyLimitUSD: \"5\"\n  costSource: {configMapName: c, " + field + ": k}\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"),
		[]byte(bad("one", "keyy")+"---\n"+bad("two", "kee")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(bad("three", "kye")), 0o644))

	code, out, errOut := runProgram([]string{"migrate", "-f", dir}, "")
	assert.Equal(t, 1, code)
	assert.Empty(t, out, "nothing is printed when any document is refused")
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	assert.Equal(t, "llmbudget migrate: "+a+":6: LLMCostBudget team-ml/one: unknown field \"spec.costSource.keyy\"\n"+
		"llmbudget migrate: "+a+":13: LLMCostBudget team-ml/two: unknown field \"spec.costSource.kee\"\n"+
		"llmbudget migrate: "+b+":6: LLMCostBudget team-ml/three: unknown field \"spec.costSource.kye\"\n", errOut)
}

// The examples' directory holds each migration's output beside its input: -f DIR converts the inputs alone.
func TestMigrateOfADirectoryPassesOverItsConvertedOutput(t *testing.T) {
	code, out, errOut := runProgram([]string{"migrate", "-f", "../../examples/migrate/", "--skip-unknown-kinds"}, "")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "llm-cost-budget-operator.converted.yaml:2: LLMCostBudget team-ml/chatbot: skipped: "+
		"already an llmbudget budget")
	_, alone, _ := runProgram([]string{"migrate", "-f", "../../examples/migrate/kelos-taskbudget.yaml",
		"-f", "../../examples/migrate/llm-cost-budget-operator.yaml"}, "")
	assert.Equal(t, alone, out)

	code, help, _ := runProgram([]string{"migrate", "-h"}, "")
	require.Equal(t, 0, code)
	assert.Contains(t, help, "usage: llmbudget migrate -f FILE|DIR", "-h says what -f takes")
	assert.Contains(t, help, "A directory stands for its .yaml,")
}
