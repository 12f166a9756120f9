package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeTree writes files (path relative to dir: contents) under a new temporary directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	return dir
}

func readExample(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestEvalReadsDirectoriesRecursivelyAndSaysWhatItSkipped(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"team-ml/budget.yaml":       readExample(t, monthlyBudget),
		"team-ml/spend/spend.yml":   readExample(t, monthlySpend),
		"team-ml/README.md":         "# not a manifest\n",
		"team-ml/placeholder.yaml":  "# filled in later\n",
		".git/config.yaml":          "not: read\n",
		"team-ml/kustomization.yml": "resources: [budget.yaml]\n",
	})
	code, out, errOut := runProgram([]string{"eval", "-f", dir, "--now", evalNow}, "")
	require.Equal(t, 1, code, "kustomization.yml is not a Kubernetes object: %s", errOut)
	assert.Empty(t, out)
	require.NoError(t, os.Remove(filepath.Join(dir, "team-ml/kustomization.yml")))

	code, out, errOut = runProgram([]string{"eval", "-f", dir, "--now", evalNow}, "")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "# team-ml/chatbot is Warning: 412.35 of 500.00 USD (82%)",
		"the budget and the spend of a subdirectory were read")
	assert.Equal(t, "llmbudget eval: note: skipped "+filepath.Join(dir, ".git")+": a hidden directory\n"+
		"llmbudget eval: note: skipped "+filepath.Join(dir, "team-ml/README.md")+": not a .yaml, .yml or .json file\n"+
		"llmbudget eval: note: skipped "+filepath.Join(dir, "team-ml/placeholder.yaml")+": empty: no YAML document\n", errOut)
}

func TestEvalFailOnSetsStatus3ForBudgetsInTheStatesNamed(t *testing.T) {
	budget, spend := readExample(t, monthlyBudget), readExample(t, monthlySpend)
	garbage := strings.Replace(spend, `"412.35"`, `"12,34"`, 1)
	cases := map[string]struct {
		stdin, failOn string
		code          int
		stderr        string
	}{
		"a Warning budget with --fail-on warning": {budget + "---\n" + spend, "warning", 3,
			"llmbudget eval: stdin:5: team-ml/chatbot is Warning (--fail-on warning)\n"},
		"a Warning budget with --fail-on overbudget": {budget + "---\n" + spend, "overbudget", 0, ""},
		"garbage spend with --fail-on unknown": {budget + "---\n" + garbage, "OverBudget,Unknown", 3,
			"llmbudget eval: stdin:5: team-ml/chatbot is Unknown (--fail-on OverBudget,Unknown)\n"},
		"garbage spend without --fail-on": {budget + "---\n" + garbage, "", 0, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runProgram([]string{"eval", "-f", "-", "--now", evalNow, "--fail-on", tc.failOn}, tc.stdin)
			assert.Equal(t, tc.code, code)
			assert.Equal(t, tc.stderr, errOut)
			assert.Contains(t, out, "budget: team-ml/chatbot", "the evaluation is printed either way")
		})
	}
}

func TestEvalFailOnRefusesAStateThatDoesNotExist(t *testing.T) {
	code, out, errOut := runProgram([]string{"eval", "-f", monthlyBudget, "--fail-on", "warning,overbudgte"}, "")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `llmbudget eval: --fail-on "overbudgte": not a state; give a comma-separated list of `+
		"underbudget, warning, overbudget, unknown\n")
}

func TestEvalNamesAnEmptyFileAsEmpty(t *testing.T) {
	dir := writeTree(t, map[string]string{"empty.yaml": "", "comments.yaml": "# nothing yet\n---\n"})
	for _, f := range []string{"empty.yaml", "comments.yaml"} {
		code, _, errOut := runProgram([]string{"eval", "-f", filepath.Join(dir, f)}, "")
		assert.Equal(t, 1, code)
		assert.Equal(t, "llmbudget eval: "+filepath.Join(dir, f)+": is empty: no YAML document\n", errOut)
	}
}

// kubectl apply -f empty.yaml -f budget.yaml applies the budget and skips the empty file: eval does the same, and
// says so.
func TestEvalSkipsAnEmptyFileNamedBesideOthersAsKubectlDoes(t *testing.T) {
	dir := writeTree(t, map[string]string{"empty.yaml": "# nothing yet\n"})
	empty := filepath.Join(dir, "empty.yaml")
	code, out, errOut := runProgram([]string{"eval", "-f", empty, "-f", monthlyBudget, "--output", "summary"}, "")
	assert.Equal(t, 0, code, errOut)
	assert.NotEmpty(t, out)
	assert.Contains(t, errOut, "llmbudget eval: note: skipped "+empty+": empty: no YAML document\n")
}

// utf16 is text as Windows PowerShell's > writes it: UTF-16 little-endian with a byte-order mark.
func utf16(text string) string {
	b := []byte{0xff, 0xfe}
	for _, r := range text {
		b = append(b, byte(r), byte(r>>8))
	}
	return string(b)
}

func TestEvalReadsUTF16WholeAndRefusesWhatItCannotTranscode(t *testing.T) {
	stream := readExample(t, monthlyBudget) + "---\n" + readExample(t, monthlySpend)
	code, out, errOut := runProgram([]string{"eval", "-f", "-", "--now", evalNow}, utf16(stream))
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut, "the ConfigMap after the budget was read too: no hint that it is missing")
	assert.Contains(t, out, "412.35 of 500.00 USD")

	noBOM := utf16(stream)[2:]
	code, _, errOut = runProgram([]string{"eval", "-f", "-"}, noBOM)
	assert.Equal(t, 1, code)
	assert.Equal(t, "llmbudget eval: stdin: holds NUL bytes: UTF-16 or UTF-32 without a byte-order mark, "+
		"or not text; save it as UTF-8\n", errOut)
}

func TestEvalRefusesWhatTheAPIServerRefusesForSize(t *testing.T) {
	budget, spend := readExample(t, monthlyBudget), readExample(t, monthlySpend)
	notes := "metadata:\n  annotations:\n    notes: " + strings.Repeat("x", 300<<10) + "\n"
	big := strings.Replace(budget, "metadata:\n", notes, 1)
	huge := spend + "  padding: " + strings.Repeat("x", 1<<20) + "\n"
	code, out, errOut := runProgram([]string{"eval", "-f", "-"}, big+"---\n"+huge)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut,
		"LLMCostBudget team-ml/chatbot: metadata.annotations: Too long: may not be more than 262144 bytes")
	assert.Contains(t, errOut, "ConfigMap team-ml/llm-spend: data: Too long: may not be more than 1048576 bytes")
}
