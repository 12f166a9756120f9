package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	monthlyBudget = "../../examples/monthly-total/budget.yaml"
	monthlySpend  = "../../examples/monthly-total/spend.yaml"
	evalNow       = "2026-11-20T12:00:00Z"
)

func TestEveryWayOfAskingForHelpListsTheCommandsAndSucceeds(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}, {"help"}} {
		code, out, errOut := runProgram(args, "")
		assert.Equal(t, 0, code, "llmbudget %v", args)
		assert.Empty(t, errOut)
		for _, c := range commands {
			assert.Contains(t, out, "\n  "+c.name+" ", "llmbudget %v lists %s", args, c.name)
		}
	}
}

func TestEveryCommandPrintsItsFlagsWithDefaultsOnHelp(t *testing.T) {
	for _, c := range commands {
		for _, help := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {"help", c.name}} {
			code, out, errOut := runProgram(help, "")
			assert.Equal(t, 0, code, "llmbudget %v", help)
			assert.Empty(t, errOut)
			assert.True(t, strings.HasPrefix(out, "usage: llmbudget "+c.name), "llmbudget %v:\n%s", help, out)
		}
	}
	_, serveHelp, _ := runProgram([]string{"serve", "-h"}, "")
	assert.Contains(t, serveHelp, `listen address (default ":8080")`)
	_, evalHelp, _ := runProgram([]string{"eval", "-h"}, "")
	assert.Contains(t, evalHelp,
		"exit status:\n  0  every budget was evaluated (and none is in a --fail-on state)\n  1  invalid input")
}

func TestCommandLineMistakesExitWithStatus2AndUsage(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"an unknown command":        {[]string{"frobnicate"}, `llmbudget: unknown command "frobnicate"`},
		"a flag before the command": {[]string{"--addr", ":9090"}, "llmbudget: --addr given before a command"},
		"an unknown serve flag": {
			[]string{"serve", "--adr", ":9090"},
			"llmbudget serve: flag provided but not defined: -adr",
		},
		"eval without a file": {[]string{"eval"}, "llmbudget eval: no input: give at least one -f FILE (- for stdin)"},
		"eval with a bad clock": {
			[]string{"eval", "-f", monthlyBudget, "--now", "tomorrow"},
			`llmbudget eval: --now "tomorrow": must be RFC 3339`,
		},
		"a file given to migrate without -f": {
			[]string{"migrate", monthlyBudget},
			`llmbudget migrate: unexpected argument "` + monthlyBudget + `": give files with -f`,
		},
		"help on an unknown topic": {[]string{"help", "frobnicate"}, `llmbudget help: unknown command "frobnicate"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runProgram(tc.args, "")
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			assert.True(t, strings.HasPrefix(errOut, tc.want), "stderr:\n%s", errOut)
			assert.Contains(t, errOut, "usage: llmbudget", "the usage follows")
		})
	}
}

func TestEvalPrintsTheSyncResultAndExits0(t *testing.T) {
	code, out, errOut := runProgram([]string{"eval", "-f", monthlyBudget, "-f", monthlySpend, "--now", evalNow}, "")
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut)
	assert.True(t, strings.HasPrefix(out, "# team-ml/chatbot is Warning: 412.35 of 500.00 USD (82%)"), out)
}

func TestEvalHintsAtASpendConfigMapThatWasNotGiven(t *testing.T) {
	code, out, errOut := runProgram([]string{"eval", "-f", monthlyBudget, "--now", evalNow}, "")
	require.Equal(t, 0, code, "the budget is still evaluated: %s", errOut)
	assert.Contains(t, out, "(CostSourceMissing)")
	assert.Contains(t, errOut,
		"llmbudget eval: hint: ../../examples/monthly-total/budget.yaml:5: team-ml/chatbot reads ConfigMap team-ml/llm-spend")
}

func TestEvalExits1AndPrintsNothingWhenABudgetIsInvalid(t *testing.T) {
	budget, err := os.ReadFile(monthlyBudget)
	require.NoError(t, err)
	spend, err := os.ReadFile(monthlySpend)
	require.NoError(t, err)
	invalid := strings.Replace(string(budget), "name: chatbot", "name: other", 1)
	invalid = strings.Replace(invalid, "timeZone: Europe/Berlin", "timezone: Europe/Berlin", 1)
	stdin := string(budget) + "---\n" + string(spend) + "---\n" + invalid

	code, out, errOut := runProgram([]string{"eval", "-f", "-", "--now", evalNow}, stdin)
	assert.Equal(t, 1, code)
	assert.Empty(t, out, "nothing is printed unless every budget is valid")
	assert.Equal(t, "llmbudget eval: stdin:54: LLMCostBudget team-ml/other: unknown field \"spec.period.timezone\"\n",
		errOut)
}

func TestEvalSaysWhatItSkippedWhenNoBudgetIsFound(t *testing.T) {
	code, out, errOut := runProgram([]string{"eval", "-f", "../../examples/namespaces/"}, "")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "llmbudget eval: no LLMCostBudget (llmbudget.dev/v1alpha1) found in ../../examples/namespaces/; "+
		"skipped Namespace (v1)\n", errOut)
}

// The Kueue example shows a Job waiting only if its namespace is blocked: with the spend the examples apply, its
// budget must be over its limit and blocking.
func TestTheKueueExampleBlocksWithTheExamplesSpend(t *testing.T) {
	code, out, errOut := runProgram([]string{"eval", "-f", "../../examples/kueue/budget.yaml", "-f", monthlySpend,
		"--now", "2026-11-20T12:00:00Z"}, "")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "# team-ml/batch is OverBudget: 412.35 of 400.00 USD")
	assert.Contains(t, out, "    blocking: true\n")
}
