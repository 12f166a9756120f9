// Command writerattack measures the spend writer's memory against a hostile Prometheus: one run of `llmbudget
// spend --all` as deploy/components/spend-writer's Deployment runs it (its flags, GOMEMLIMIT at its 256Mi limit),
// against the real API server of test/k8s and a stand-in for Prometheus that answers every query with a large
// vector. Each attack runs at the Deployment's --concurrency and at the most the writer takes (64), and reports the
// writer's peak resident memory against the limit, and whether every budget was written or got its
// SpendWriteFailed Event.
//
//	go run ./cmd/writerattack -bin ../../bin/llmbudget   # from test/k8s, after ./build.sh; make bench runs it
//
// It exits 1 if any peak passes the limit or any budget is neither written nor given its Event.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/llmbudget/llmbudget/test/k8s/cmd/internal/benchkit"
)

// maxConcurrency is the most --concurrency the writer takes (spendwriter.MaxConcurrency).
const maxConcurrency = 64

// An attack is a kind of budget and what the stand-in answers each of its queries.
type attack struct {
	name    string
	format  string // Total or DailyLedger
	series  int    // in each answer
	written bool   // whether the budgets are written, or fail at their cap
}

var attacks = []attack{
	// 9,000 series of about 1.6 KB: 14.4 MiB, within one answer's 32 MiB and a budget's 16 MiB; the next passes it.
	{"Total: each answer 14.4 MiB, near a budget's cap", "Total", 9_000, false},
	// A ledger asks 3 queries a day of the month so far and the day before: 0.93 MiB each pass 16 MiB from the 5th.
	{"DailyLedger: answers of 0.93 MiB adding up past the cap", "DailyLedger", 580, false},
	// A Total budget asks 6 queries (two parts, three measures): 2.1 MiB in all, within its cap, and written.
	{"Total: 6 answers of 361 KiB each, within the cap", "Total", 220, true},
}

// budgets is how many budgets each attack's namespace holds.
const budgets = 64

func main() {
	bin := flag.String("bin", "../../bin/llmbudget", "the llmbudget binary (make build)")
	only := flag.String("only", "", "run only the attacks whose name contains this")
	flag.Parse()
	ok, err := run(*bin, *only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "writerattack:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// deployed is the spend writer as deploy/components/spend-writer runs it, but for --concurrency.
type deployed struct {
	benchkit.SpendWriter
	concurrency string
}

func deployedWriter() (deployed, error) {
	w, err := benchkit.DeployedSpendWriter()
	if err != nil {
		return deployed{}, err
	}
	cj := deployed{SpendWriter: benchkit.SpendWriter{MemLimit: w.MemLimit}}
	for _, a := range w.Args {
		if v, ok := strings.CutPrefix(a, "--concurrency="); ok {
			cj.concurrency = v
		} else {
			cj.Args = append(cj.Args, a)
		}
	}
	return cj, nil
}

func run(bin, only string) (bool, error) {
	ctx := context.Background()
	bin, err := filepath.Abs(bin)
	if err != nil {
		return false, err
	}
	cj, err := deployedWriter()
	if err != nil {
		return false, err
	}
	fmt.Printf("llmbudget %s, GOMEMLIMIT %d (the Deployment's, %s)\n", strings.Join(cj.Args, " "), cj.MemLimit,
		benchkit.SpendWriterManifest)
	standIn := &hostile{}
	prom := httptest.NewServer(standIn)
	defer prom.Close()
	c, k, err := benchkit.Start(ctx)
	if err != nil {
		return false, err
	}
	defer c.Stop()
	if err := createNamespace(ctx, k, benchkit.WriterNamespace); err != nil {
		return false, err
	}
	fmt.Printf("%-54s %11s %10s %8s %7s %s\n", "attack", "concurrency", "peak RSS", "written", "Events", "")
	ok := true
	for i, a := range attacks {
		if !strings.Contains(a.name, only) {
			continue
		}
		ns := fmt.Sprintf("attack-%d", i)
		if err := createBudgets(ctx, k, ns, a.format); err != nil {
			return false, err
		}
		standIn.body.Store(answer(a.series))
		for _, concurrency := range []string{cj.concurrency, strconv.Itoa(maxConcurrency)} {
			r, err := spendAll(bin, cj, prom.URL, c.Kubeconfig, ns, concurrency)
			if err != nil {
				return false, err
			}
			v := verdict(a, r, cj.MemLimit)
			ok = ok && strings.HasPrefix(v, "within")
			fmt.Printf("%-54s %11s %6.1f MiB %8d %7d %s\n", a.name, concurrency, float64(r.RSS)/(1<<20), r.written,
				r.events, v)
			if r.Exit != 0 && r.written+r.events != budgets {
				fmt.Printf("         exit %d; its last lines:%s\n", r.Exit, r.Tail(3, 300))
			}
		}
	}
	return ok, nil
}

func verdict(a attack, r result, limit int64) string {
	switch {
	case r.RSS > limit:
		return "NOT within the limit"
	case r.written+r.events != budgets:
		return "NOT every budget written or given its Event"
	case a.written && r.written != budgets:
		return "within the limit, but NOT every budget written"
	}
	return "within the limit; every budget written or given its Event"
}

func createNamespace(ctx context.Context, k benchkit.Kube, name string) error {
	_, err := k.Typed.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		metav1.CreateOptions{})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	return nil
}

// createBudgets creates the attack's budgets in ns, each reading its own LiteLLM team.
func createBudgets(ctx context.Context, k benchkit.Kube, ns, format string) error {
	if err := createNamespace(ctx, k, ns); err != nil {
		return err
	}
	return benchkit.Parallel(budgets, 16, func(i int) error {
		name := fmt.Sprintf("team-%03d", i)
		src := map[string]any{"configMapName": name + "-spend", "format": format,
			"prometheus": map[string]any{"source": "litellm", "selector": map[string]any{"team": name}}}
		if format == "Total" {
			src["key"] = "total"
		} else {
			src["keyPrefix"] = "spend-"
		}
		b := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "llmbudget.dev/v1alpha1", "kind": "LLMCostBudget",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"limitUSD": "300", "costSource": src},
		}}
		_, err := k.Dynamic.Resource(benchkit.Budgets).Namespace(ns).Create(ctx, b, metav1.CreateOptions{})
		return err
	})
}

// hostile stands in for Prometheus: every query is answered with the same vector.
type hostile struct{ body atomic.Value }

func (h *hostile) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(h.body.Load().([]byte))
}

// answer is a vector of n series of one model, each told apart by two labels of 800 bytes (1,682 bytes a
// series): a query sums by model, so the figures stay one model's, but every series is read and decoded.
func answer(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	pad := strings.Repeat("x", 790)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"metric":{"model":"gpt-4o","instance":"%s%010d","pod":"%s%010d"},`+
			`"value":[1795176000,"0.001"]}`, pad, i, pad, i)
	}
	b.WriteString("]}}")
	return []byte(b.String())
}

type result struct {
	benchkit.WriterRun
	written, events int
}

// spendAll runs the writer once over ns, as the Deployment's leader does but for --concurrency, and counts the
// budgets it reports written and those it reports not written whose Event was posted.
func spendAll(bin string, cj deployed, prom, kubeconfig, ns, concurrency string) (result, error) {
	run, err := cj.Run(bin, "--prometheus="+prom, "--kubeconfig="+kubeconfig, "-n", ns, "--concurrency="+concurrency)
	r := result{WriterRun: run}
	if err != nil {
		return r, err
	}
	for _, l := range r.Lines {
		switch {
		case strings.Contains(l, `"msg":"spend written"`):
			r.written++
		case strings.Contains(l, `"msg":"spend not written"`) && !strings.Contains(l, `"eventError"`):
			r.events++
		}
	}
	return r, nil
}
