// Command llmbudget is the llmbudget hook service and its offline tools.
//
//	llmbudget [serve] [--addr :8080]   serve Metacontroller hooks (default)
//	llmbudget eval -f budget.yaml -f spend.yaml [--now RFC3339]
//	llmbudget migrate -f old-budgets.yaml [--skip-unknown-kinds]
//	llmbudget spend -f budget.yaml --prometheus URL --source litellm|vllm|otel-genai
//	llmbudget version
package main

import (
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(args, stderr)
	case "eval":
		err = evalCmd(args, stdin, stdout)
	case "migrate":
		err = migrateCmd(args, stdin, stdout, stderr)
	case "spend":
		err = spendCmd(args, stdin, stdout, stderr)
	case "version":
		_, err = fmt.Fprintf(stdout, "llmbudget %s\n", version)
	case "help":
		_, err = io.WriteString(stdout, usage)
	default:
		err = fmt.Errorf("unknown command %q\n\n%s", cmd, usage)
	}
	if err != nil {
		fmt.Fprintf(stderr, "llmbudget %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

const usage = `usage:
  llmbudget [serve] [--addr :8080] [--log-level info]
        serve the Metacontroller hooks
  llmbudget eval -f FILE [-f FILE ...] [--now 2026-11-20T12:00:00Z]
        evaluate a budget and its spend ConfigMap offline and print, as YAML,
        the status and children that sync would return ("-" reads stdin)
  llmbudget migrate -f FILE [-f FILE ...] [--skip-unknown-kinds]
        convert llm-cost-budget-operator and Kelos TaskBudget budgets into
        LLMCostBudgets, printed as YAML with comments ("-" reads stdin)
  llmbudget spend -f FILE [--budget NS/NAME] --prometheus URL
        (--source litellm|vllm|otel-genai | --query cost|input|output=SELECTOR ...)
        [--team ID] [--key HASH] [--namespace NS] [--pod-label L=V] [--service NAME]
        [--match 'L="V"'] [--prices FILE] [--step 15s] [--now RFC3339] [--print-query] [-o FILE]
        compute the budget's current-period spend from Prometheus counters and
        print its spend ConfigMap as YAML (nothing when a query fails or is empty)
  llmbudget version
`
