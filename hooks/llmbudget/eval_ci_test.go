package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEvalTakesFilesAndDirectoriesAsArgumentsBesideTheFlags(t *testing.T) {
	for name, args := range map[string][]string{
		"after the flags":       {"--now", evalNow, "--output", "summary", monthlyBudget, monthlySpend},
		"before the flags":      {monthlyBudget, "--now", evalNow, "--output", "summary", monthlySpend},
		"a directory":           {"../../examples/monthly-total", "--now", evalNow, "--output", "summary"},
		"beside -f":             {"-f", monthlyBudget, "--now", evalNow, "--output", "summary", monthlySpend},
		"the same file twice":   {monthlyBudget, "../../examples/monthly-total", "--now", evalNow, "--output=summary"},
		"stdin as an argument:": {monthlyBudget, "-", "--now", evalNow, "--output=summary"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runProgram(append([]string{"eval"}, args...), readExample(t, monthlySpend))
			require.Equal(t, 0, code, errOut)
			assert.Equal(t, "team-ml/chatbot Warning 412.35/500.00 USD (82%)\n", out)
		})
	}
}

func TestEvalSummaryIsOneLinePerBudgetAndQuietNothing(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.yaml": readExample(t, monthlyBudget) + "---\n" + readExample(t, monthlySpend),
		"b.yaml": strings.ReplaceAll(readExample(t, monthlyBudget), "team-ml", "team-b"),
	})
	code, out, errOut := runProgram([]string{"eval", dir, "--now", evalNow, "--output", "summary"}, "")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "team-ml/chatbot Warning 412.35/500.00 USD (82%)\nteam-b/chatbot Unknown ?/500.00 USD\n", out)

	code, out, errOut = runProgram([]string{"eval", dir, "--now", evalNow, "--quiet", "--fail-on", "unknown"}, "")
	assert.Equal(t, 3, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "team-b/chatbot is Unknown (--fail-on unknown)")
}

func TestEvalExcludesWhatItIsToldTo(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"budget.yaml":           readExample(t, monthlyBudget),
		"spend.yaml":            readExample(t, monthlySpend),
		"budget.converted.yaml": "kind: [broken\n",
	})
	code, _, _ := runProgram([]string{"eval", dir, "--now", evalNow}, "")
	require.Equal(t, 1, code)
	code, out, errOut := runProgram([]string{"eval", dir, "--now", evalNow, "--exclude", "*.converted.yaml",
		"--output", "summary"}, "")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "team-ml/chatbot Warning 412.35/500.00 USD (82%)\n", out)
	assert.Empty(t, errOut, "an excluded file is not noted")
}

func TestEvalRefusesTwoBudgetsOfOneNameNamingBoth(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a/budget.yaml": readExample(t, monthlyBudget),
		"b/budget.yaml": strings.Replace(readExample(t, monthlyBudget), `limitUSD: "500"`, `limitUSD: "400"`, 1),
	})
	code, out, errOut := runProgram([]string{"eval", dir, monthlySpend, "--now", evalNow}, "")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "llmbudget eval: "+filepath.Join(dir, "b/budget.yaml")+":5: LLMCostBudget team-ml/chatbot: also at "+
		filepath.Join(dir, "a/budget.yaml")+":5: kubectl apply would apply one over the other; give each once\n", errOut)
}

func TestEvalHeadlineNamesTheModelThatIsOver(t *testing.T) {
	code, out, errOut := runProgram([]string{"eval", "../../examples/per-model", "--now", evalNow}, "")
	require.Equal(t, 0, code, errOut)
	assert.True(t, strings.HasPrefix(out, "# team-ml/research is OverBudget "+
		"(model gpt-4o is over: 104.70 of 100.00 USD): "+
		"148.20 of 300.00 USD (49%) in "), out)
}

func TestEvalWarnsOfAZoneTheAPIServerAdmitsAndRefusesItWhenStrict(t *testing.T) {
	budget := filepath.Join(t.TempDir(), "budget.yaml")
	require.NoError(t, os.WriteFile(budget, []byte(strings.Replace(readExample(t, monthlyBudget),
		"Europe/Berlin", "Europe/Atlantis", 1)), 0o600))
	code, out, errOut := runProgram([]string{"eval", budget, monthlySpend, "--now", evalNow, "--output=summary"}, "")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "team-ml/chatbot Unknown ?/- USD\n", out, "the hook reports the budget Unknown")
	assert.Equal(t, "llmbudget eval: warning: "+budget+`:14: LLMCostBudget team-ml/chatbot: spec.period.timeZone: `+
		`Invalid value: "Europe/Atlantis": must be an IANA time zone, for example Europe/Berlin: not in the time zone `+
		"database; the API server admits it, and the hook reports the budget Unknown (InvalidSpec)\n", errOut)

	code, out, errOut = runProgram([]string{"eval", budget, monthlySpend, "--now", evalNow, "--strict-zones"}, "")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `spec.period.timeZone: Invalid value: "Europe/Atlantis"`)
}

// A stream kubectl would apply only in part (its splitter sees no line break) is refused, never read in part.
func TestEvalRefusesAStreamItCannotReadWhole(t *testing.T) {
	stream := readExample(t, monthlyBudget) + "---\n" + readExample(t, monthlySpend)
	for name, brk := range map[string]string{"CR alone": "\r", "U+2028": "\u2028", "U+2029": "\u2029", "NEL": "\u0085"} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runProgram([]string{"eval", "-", "--now", evalNow},
				strings.ReplaceAll(stream, "\n", brk))
			assert.Equal(t, 1, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, "llmbudget eval: stdin:1: the YAML parser finds 2 documents where kubectl's "+
				"splitter finds one")
		})
	}
}
