// Command climem measures the peak memory of `llmbudget eval` and `llmbudget migrate` on a large input, as a
// multiple of the input's size: it writes, in a temporary directory, a multi-document YAML stream of budgets and
// their spend ConfigMaps (for eval) and one of exported llm-cost-budget-operator and Kelos budgets (for migrate),
// each of about -mib MiB, runs the built binary on each with its output to /dev/null, and reports the child's peak
// resident set size (wait4's ru_maxrss, the kernel's VmHWM) and its time.
//
//	make build && go run ./test/climem
//
// It exits 1 when a run fails or a peak passes -target times its input. The default target, 6.5, is what eval and
// migrate keep to with Go's default GOGC; what remains above the input is in docs/benchmarks.md, "CLI memory".
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("bin", "bin/llmbudget", "the llmbudget binary to measure")
	mib := flag.Int("mib", 48, "size of each generated input, in MiB (the CLI reads at most 64 MiB)")
	target := flag.Float64("target", 6.5, "the most peak RSS may be, as a multiple of the input")
	keep := flag.Bool("keep", false, "keep the generated inputs and print their directory")
	flag.Parse()
	if err := run(*bin, int64(*mib)<<20, *target, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "climem:", err)
		os.Exit(1)
	}
}

func run(bin string, size int64, target float64, keep bool) error {
	dir, err := os.MkdirTemp("", "climem")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("inputs in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	runs := []struct {
		cmd   string
		write func(w io.Writer, i int) (int, error)
		args  []string
	}{
		{"eval", writeBudget, []string{"--now", "2026-11-20T12:00:00Z"}},
		{"migrate", writeOperatorBudget, nil},
	}
	failed := false
	fmt.Printf("%-8s %10s %10s %9s %8s %s\n", "command", "input", "peak RSS", "multiple", "time", "")
	for _, r := range runs {
		path := filepath.Join(dir, r.cmd+".yaml")
		n, err := generate(path, size, r.write)
		if err != nil {
			return err
		}
		peak, took, err := measure(bin, append(append([]string{r.cmd}, r.args...), "-f", path))
		if err != nil {
			return fmt.Errorf("%s: %w", r.cmd, err)
		}
		multiple := float64(peak) / float64(n)
		verdict := fmt.Sprintf("within %.1fx", target)
		if multiple > target {
			verdict, failed = fmt.Sprintf("FAILED: over %.1fx", target), true
		}
		fmt.Printf("%-8s %6.1f MiB %6.1f MiB %8.2fx %7.1fs %s\n", r.cmd, float64(n)/(1<<20), float64(peak)/(1<<20),
			multiple, took.Seconds(), verdict)
	}
	if failed {
		return fmt.Errorf("a peak passed %.1f times its input", target)
	}
	return nil
}

// generate writes documents to path until they reach size bytes, and returns how many bytes it wrote.
func generate(path string, size int64, write func(io.Writer, int) (int, error)) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriter(f)
	var n int64
	for i := 0; n < size; i++ {
		m, err := write(w, i)
		if err != nil {
			f.Close()
			return 0, err
		}
		n += int64(m)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return n, f.Close()
}

// measure runs bin with args, output discarded, and returns its peak resident set size and its wall time.
func measure(bin string, args []string) (int64, time.Duration, error) {
	cmd := exec.Command(bin, args...)
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return 0, 0, err
	}
	defer devNull.Close()
	cmd.Stdout, cmd.Stderr = devNull, devNull
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("%s %v: %w", bin, args[0], err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0, fmt.Errorf("no resource usage on this system")
	}
	return ru.Maxrss << 10, time.Since(start), nil // Linux counts ru_maxrss in KiB
}

// writeBudget writes the i-th of a cluster's budgets with its spend ConfigMap, in turn a monthly total, a
// per-model budget and a daily ledger of a month's days, as kubectl get -o yaml prints them.
func writeBudget(w io.Writer, i int) (int, error) {
	ns := fmt.Sprintf("team-%d", i/3)
	switch i % 3 {
	case 0:
		return fmt.Fprintf(w, `---
apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata:
  name: chatbot
  namespace: %[1]s
  labels:
    app.kubernetes.io/part-of: chatbot
spec:
  limitUSD: "500"
  period:
    type: Monthly
    timeZone: Europe/Berlin
  warnThresholdPercent: 80
  thresholds:
  - percent: 50
    basis: Actual
  - percent: 100
    basis: Forecasted
  costSource:
    configMapName: llm-spend
    format: Total
    key: total-usd
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: llm-spend
  namespace: %[1]s
  labels:
    llmbudget.dev/spend-source: chatbot
data:
  total-usd: "%[2]d.35"
`, ns, 300+i%400)
	case 1:
		return fmt.Fprintf(w, `---
apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata:
  name: research
  namespace: %[1]s
spec:
  limitUSD: "300"
  period:
    type: Monthly
    timeZone: Europe/Berlin
  modelLimits:
  - model: gpt-4o
    limitUSD: "100"
  - model: anthropic/claude-3-5-sonnet
    tokenLimits:
      output: 2000000
  costSource:
    configMapName: research-spend
    key: month-to-date
  enforcement:
    action: BlockNewWorkloads
    resources:
    - jobs.batch
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: research-spend
  namespace: %[1]s
  labels:
    llmbudget.dev/spend-source: research
data:
  month-to-date: |
    {"costUSD": "148.20", "inputTokens": 21000000, "outputTokens": 2600000,
     "models": {
       "gpt-4o": {"costUSD": "%[2]d.70", "inputTokens": 15000000, "outputTokens": 900000},
       "anthropic/claude-3-5-sonnet": {"costUSD": "43.50", "inputTokens": 6000000, "outputTokens": 1700000}
     }}
`, ns, 50+i%100)
	default:
		n, err := fmt.Fprintf(w, `---
apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata:
  name: support-bot
  namespace: %[1]s
spec:
  limitUSD: "25"
  period:
    type: Daily
    timeZone: America/New_York
  tokenLimits:
    total: 2000000
    output: 400000
  costSource:
    configMapName: support-bot-spend
    format: DailyLedger
    keyPrefix: spend-
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: support-bot-spend
  namespace: %[1]s
  labels:
    llmbudget.dev/spend-source: support-bot
data:
  exported-at: "2026-11-20T11:05:00Z"
`, ns)
		for day := 1; day <= 20 && err == nil; day++ {
			var m int
			m, err = fmt.Fprintf(w, "  spend-2026-11-%02d: '{\"costUSD\": \"%d.%02d\", \"inputTokens\": 1700000, "+
				"\"outputTokens\": 350000}'\n", day, 10+(i+day)%15, day)
			n += m
		}
		return n, err
	}
}

// writeOperatorBudget writes the i-th of a cluster's budgets to migrate, in turn an llm-cost-budget-operator
// LLMCostBudget and a Kelos TaskBudget, as kubectl get -o yaml exports them, server-set fields and all.
func writeOperatorBudget(w io.Writer, i int) (int, error) {
	ns := fmt.Sprintf("team-%d", i/2)
	if i%2 == 1 {
		return fmt.Fprintf(w, `---
apiVersion: kelos.dev/v1alpha2
kind: TaskBudget
metadata:
  creationTimestamp: "2026-10-14T15:40:02Z"
  generation: 1
  labels:
    team: platform
  name: agents-daily
  namespace: %[1]s
  resourceVersion: "51002931"
  uid: 0b7e5a44-93c1-4f0d-8a6e-c51f3d2e9a17
spec:
  maxCostUSD: 12500m
  maxInputTokens: 3000000
  maxOutputTokens: 600000
  period:
    timezone: America/New_York
    type: Daily
  taskSelector:
    matchExpressions:
    - key: kelos.dev/type
      operator: In
      values:
      - claude-code
      - codex
    matchLabels:
      team: platform
status:
  currentPeriodEnd: "2026-11-30T05:00:00Z"
  currentPeriodStart: "2026-11-29T05:00:00Z"
  observedGeneration: 1
  used:
    costUSD: 3750m
    inputTokens: 1210400
    outputTokens: 187250
`, ns)
	}
	return fmt.Fprintf(w, `---
apiVersion: finops.kineticgain.com/v1alpha1
kind: LLMCostBudget
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"finops.kineticgain.com/v1alpha1","kind":"LLMCostBudget","metadata":{"annotations":{"owner":`+
		`"support-platform@example.com"},"name":"support-bot","namespace":"%[1]s"},"spec":{"costSource":`+
		`{"configMapName":"llm-cost","key":"total_usd"},"monthlyLimitUSD":"%[2]d.00","warnThresholdPercent":90}}
    owner: support-platform@example.com
  creationTimestamp: "2026-09-02T08:14:31Z"
  generation: 3
  managedFields:
  - apiVersion: finops.kineticgain.com/v1alpha1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:annotations:
          .: {}
          f:kubectl.kubernetes.io/last-applied-configuration: {}
          f:owner: {}
      f:spec:
        .: {}
        f:costSource:
          .: {}
          f:configMapName: {}
          f:key: {}
        f:monthlyLimitUSD: {}
        f:warnThresholdPercent: {}
    manager: kubectl-client-side-apply
    operation: Update
    time: "2026-11-03T10:02:12Z"
  name: support-bot
  namespace: %[1]s
  resourceVersion: "48213377"
  uid: 6f0c1d9e-5b7a-4c2e-9d4f-2a8e1b3c7d50
spec:
  costSource:
    configMapName: llm-cost
    key: total_usd
  monthlyLimitUSD: "%[2]d.00"
  warnThresholdPercent: 90
status:
  observedSpendUSD: "1287.40"
  percentUsed: 86
  state: Warning
`, ns, 1000+i%1000)
}
