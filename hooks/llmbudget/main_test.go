package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every command line that cannot be run is a usage error, status 2, with the command's help on stderr; -h and
// help print to stdout with status 0; a command that runs and fails is status 1.
func TestEveryUsageErrorExitsTwoAndSaysWhy(t *testing.T) {
	budget := "../../examples/monthly-total/budget.yaml"
	cases := map[string]struct {
		args   []string
		code   int
		stderr string // contained in stderr; "" wants it empty
		stdout string // contained in stdout; "" wants it empty
	}{
		"no arguments":                    {nil, 2, "llmbudget: no command given\n\nllmbudget: LLM cost budgets", ""},
		"no arguments lists the commands": {nil, 2, "\n  migrate ", ""},
		"help":                            {[]string{"help"}, 0, "", "usage: llmbudget <command> [flags]"},
		"-h":                              {[]string{"-h"}, 0, "", "usage: llmbudget <command> [flags]"},
		"help of a command":               {[]string{"help", "eval"}, 0, "", "usage: llmbudget eval [-f] FILE|DIR"},
		"help lists eval's exit 3":        {[]string{"help"}, 0, "", "3 a budget in an eval --fail-on state"},
		"help of an unknown one":          {[]string{"help", "evil"}, 2, `llmbudget help: unknown command "evil"`, ""},
		"an unknown command":              {[]string{"frobnicate"}, 2, `llmbudget: unknown command "frobnicate"`, ""},
		"a flag before the command":       {[]string{"--now", "x", "eval"}, 2, "--now given before a command", ""},
		"a command's -h":                  {[]string{"eval", "-h"}, 0, "", "exit status:"},
		"eval without -f":                 {[]string{"eval"}, 2, "llmbudget eval: no input: give at least one -f FILE", ""},
		"eval with a bad --output": {[]string{"eval", budget, "--output", "json"}, 2,
			`--output "json": want yaml or summary`, ""},
		"eval with a bad --exclude": {[]string{"eval", budget, "--exclude", "[a-"}, 2,
			`--exclude "[a-": syntax error in pattern`, ""},
		"eval with an unknown flag": {[]string{"eval", "-f", budget, "--nwo", "x"}, 2,
			"flag provided but not defined: -nwo", ""},
		"eval with a bad --now": {[]string{"eval", "-f", budget, "--now", "today"}, 2,
			`--now "today": must be RFC 3339`, ""},
		"eval of a missing file": {[]string{"eval", "-f", "missing.yaml"}, 1,
			"llmbudget eval: open missing.yaml", ""},
		"eval with stdin twice": {[]string{"eval", "-f", "-", "-f", "-"}, 2,
			"-f - given twice: stdin can be read only once", ""},
		"migrate without -f": {[]string{"migrate"}, 2, "llmbudget migrate: no input", ""},
		"serve with half of TLS": {[]string{"serve", "--tls-cert-file", "x"}, 2,
			"--tls-cert-file and --tls-key-file go together", ""},
		"serve with a bad level": {[]string{"serve", "--log-level", "loud"}, 2, "llmbudget serve: --log-level:", ""},
		"serve with a bad --now": {[]string{"serve", "--now", "today"}, 2, `--now "today": must be RFC 3339`, ""},
		"serve on a port past 65535": {[]string{"serve", "--addr", ":99999"}, 2,
			`llmbudget serve: --addr ":99999": want host:port or :port, with a port from 0 to 65535`, ""},
		"serve with metrics on no port": {[]string{"serve", "--metrics-addr", "localhost"}, 2,
			`llmbudget serve: --metrics-addr "localhost": want host:port`, ""},
		"serve with a negative body bound": {[]string{"serve", "--max-body-bytes", "-5"}, 2,
			"llmbudget serve: --max-body-bytes -5: must be at least 1 (the default is 4194304)", ""},
		"serve with a body bound of 0": {[]string{"serve", "--max-body-bytes", "0"}, 2,
			"llmbudget serve: --max-body-bytes 0: must be at least 1", ""},
		"serve with an in-flight bound below a call": {[]string{"serve", "--max-in-flight-bytes", "1000",
			"--max-body-bytes", "1000"}, 2, "llmbudget serve: --max-in-flight-bytes 1000: must be at least 65536", ""},
		"serve with a list limit below the body limit": {[]string{"serve", "--max-list-body-bytes", "1000"}, 2,
			"llmbudget serve: --max-list-body-bytes 1000: must be at least --max-body-bytes (4194304)", ""},
		"serve with an in-flight bound below a body": {[]string{"serve", "--max-in-flight-bytes", "1000000"}, 2,
			"llmbudget serve: --max-in-flight-bytes 1000000: must be at least 4194304", ""},
		"spend --all with a bad -n": {[]string{"spend", "--all", "--prometheus", "http://p", "-n", "Team_A"}, 2,
			`llmbudget spend: -n "Team_A": not a namespace name: a lowercase RFC 1123 label`, ""},
		"spend --all with a loop flag but no --loop": {[]string{"spend", "--all", "--prometheus", "http://p",
			"--interval", "5s"}, 2, "llmbudget spend: -interval: only with --loop", ""},
		"spend --loop without a Lease namespace": {[]string{"spend", "--all", "--loop", "--prometheus", "http://p"}, 2,
			"llmbudget spend: --loop: no --lease-namespace, and no $POD_NAMESPACE to default it", ""},
		"spend --loop renewing past the Lease": {[]string{"spend", "--all", "--loop", "--prometheus", "http://p",
			"--lease-namespace", "llmbudget-system", "--renew-deadline", "15s"}, 2,
			"--renew-deadline 15s: want it below --lease-duration (15s)", ""},
		"spend --loop with an interval of 0": {[]string{"spend", "--all", "--loop", "--prometheus", "http://p",
			"--lease-namespace", "llmbudget-system", "--interval", "0s"}, 2,
			"llmbudget spend: --interval 0s: want a duration above 0", ""},
		"spend --loop at a fixed time": {[]string{"spend", "--all", "--loop", "--prometheus", "http://p",
			"--lease-namespace", "llmbudget-system", "--now", "2026-11-20T12:00:00Z"}, 2,
			"llmbudget spend: --now with --loop: each run is at its own time", ""},
		"spend with a misspelt source": {[]string{"spend", "-f", budget, "--source", "litelm", "--prometheus", "http://p"}, 2,
			`llmbudget spend: source "litelm" is not one of litellm, vllm, otel-genai`, ""},
		"spend with stdin twice": {[]string{"spend", "-f", "-", "-f", "-", "--source", "vllm", "--prometheus", "http://p"}, 2,
			"-f - given twice", ""},
		"spend without a source": {[]string{"spend", "-f", budget, "--prometheus", "http://p"}, 1,
			"has no spec.costSource.prometheus: declare one, or give --source or --query", ""},
		"version with a flag": {[]string{"version", "--long"}, 2, "flag provided but not defined: -long", ""},
		"version with an argument": {[]string{"version", "extra"}, 2,
			`llmbudget version: unexpected argument "extra"`, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runProgram(tc.args, "")
			assert.Equal(t, tc.code, code)
			if tc.stderr == "" {
				assert.Empty(t, stderr)
			} else {
				assert.Contains(t, stderr, tc.stderr)
			}
			if tc.stdout == "" {
				assert.Empty(t, stdout)
			} else {
				assert.Contains(t, stdout, tc.stdout)
			}
			if code == exitUsage && len(tc.args) > 0 && tc.args[0] != "help" && tc.args[0] != "frobnicate" &&
				tc.args[0] != "--now" {
				assert.Contains(t, stderr, "usage: llmbudget "+tc.args[0], "a usage error shows the command's help")
			}
		})
	}
}
