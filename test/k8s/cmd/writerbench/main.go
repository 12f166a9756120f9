// Command writerbench measures the cluster's spend writer, `llmbudget spend --all`, as deployed: against the real
// API server of test/k8s (llmbudget's CRDs and admission policies installed) and a real Prometheus, which scrapes
// the LiteLLM spend counters of one team per budget. It creates the budgets (LiteLLM sources, Total format, spread
// over namespaces), runs the built binary once with the Deployment's flags, and prints its wall time and peak
// resident memory against the goal: within 60 s and 128 MiB for 1,000 budgets. At 10,000 budgets it runs three
// times: the period's first run, which asks for each budget's whole period; a run against a stand-in for
// Prometheus that answers at once, for what the writer's rate flags (--qps, --burst, --concurrency) allow apart
// from Prometheus; and a run that goes on from the stand-in's checkpoints, as every later run of a period does.
// Each must end within its --deadline. Then it runs the loop at that many budgets as a replica of the Deployment
// runs it (its loop flags, its Lease), for --loop-cycles runs, and prints each run's time and the replica's peak
// resident memory against the goal: every run after the first within --interval, and 128 MiB. Its counters grow
// at every scrape for every team, so every run finds every figure changed: the most a run has to write.
//
//	go run ./cmd/writerbench -bin ../../bin/llmbudget   # from test/k8s, after ./build.sh and
//	                                                     # ./build-prometheus.sh; make bench runs it
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
	"github.com/llmbudget/llmbudget/test/k8s/cmd/internal/benchkit"
)

// The goal for a run over goalBudgets budgets.
const (
	goalBudgets = 1_000
	goalWall    = 60 * time.Second
	goalRSS     = 128 << 20
)

type options struct {
	bin                 string
	budgets, large, per int
	prometheus          string
	cycles              int
	single              bool
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "../../bin/llmbudget", "the llmbudget binary (make build)")
	flag.IntVar(&o.budgets, "budgets", goalBudgets, "budgets of the measured run")
	flag.IntVar(&o.large, "large", 10_000, "budgets of the run that checks the deadline; 0 skips it")
	flag.IntVar(&o.per, "per-namespace", 50, "budgets in each namespace")
	flag.StringVar(&o.prometheus, "prometheus-bin", "", "Prometheus binary (default: build-prometheus.sh's cache)")
	flag.IntVar(&o.cycles, "loop-cycles", 4, "runs of the loop at -large budgets; 0 skips the loop")
	flag.BoolVar(&o.single, "single", true, "the single runs; false measures only the loop, at -large budgets")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "writerbench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx := context.Background()
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	cj, err := benchkit.DeployedSpendWriter()
	if err != nil {
		return err
	}
	fmt.Printf("llmbudget %s, GOMEMLIMIT %d (the Deployment's, %s)\n", strings.Join(cj.Args, " "), cj.MemLimit,
		benchkit.SpendWriterManifest)
	exp := &exporter{}
	target := httptest.NewServer(exp)
	defer target.Close()
	prom, stopProm, err := startPrometheus(o.prometheus, target.Listener.Addr().String())
	if err != nil {
		return err
	}
	defer stopProm()
	c, k, err := benchkit.Start(ctx)
	if err != nil {
		return err
	}
	defer c.Stop()
	if _, err := k.Typed.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: benchkit.WriterNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	standIn := httptest.NewServer(instantAnswers{})
	defer standIn.Close()
	if o.single {
		fmt.Printf("%-8s %-22s %10s %10s %10s %8s %s\n", "budgets", "prometheus", "created in", "run wall",
			"peak RSS", "written", "")
	}
	made := 0
	sizes := []int{o.budgets, o.large}
	if !o.single {
		sizes = []int{o.large}
	}
	for _, n := range sizes {
		if n <= made {
			continue
		}
		exp.teams.Store(int64(n))
		start := time.Now()
		if err := createBudgets(ctx, k, made, n, o.per); err != nil {
			return err
		}
		created := time.Since(start)
		made = n
		if err := waitForSeries(prom, n); err != nil {
			return err
		}
		runs := []struct{ name, url string }{{"real", prom}}
		if !o.single {
			runs = nil
		}
		if n != goalBudgets && o.single {
			// The same run against answers that cost nothing: what the writer's own rates (--qps, --burst,
			// --concurrency) allow, apart from what Prometheus takes. It checkpoints every budget, so that the
			// real run after it asks, as every run of a period but its first does, for the last minutes only
			// (the figures it writes are off by the stand-in's, but not what they cost).
			runs = append(runs, struct{ name, url string }{"stand-in", standIn.URL},
				struct{ name, url string }{"real, from checkpoints", prom})
		}
		for _, p := range runs {
			r, err := spendAll(bin, cj, p.url, c.Kubeconfig)
			if err != nil {
				return err
			}
			fmt.Printf("%-8d %-22s %10s %10s %6.1f MiB %8d %s\n", n, p.name, created.Round(time.Second),
				r.Wall.Round(100*time.Millisecond), float64(r.RSS)/(1<<20), r.written, verdict(n, r))
			if r.Exit != 0 {
				fmt.Printf("         exit %d; its last lines:%s\n", r.Exit, r.Tail(2, 200))
			}
		}
	}
	if o.cycles > 0 && made > 0 {
		return loop(bin, cj, prom, c.Kubeconfig, made, o.cycles)
	}
	return nil
}

// loop runs one replica of the writer's loop as the Deployment runs it, over n budgets, for cycles runs, and
// prints each run's time and the replica's peak resident memory against the goal.
func loop(bin string, cj benchkit.SpendWriter, prom, kubeconfig string, n, cycles int) error {
	interval := 15 * time.Second
	for _, a := range cj.Loop {
		if v, ok := strings.CutPrefix(a, "--interval="); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("the Deployment's %s: %w", a, err)
			}
			interval = d
		}
	}
	args := append(append(append([]string{}, cj.Args...), cj.Loop...), "--prometheus="+prom,
		"--kubeconfig="+kubeconfig, "--identity=writerbench")
	cmd := exec.Command(bin, args...)
	// The Downward API's: the Lease's namespace, and GOMEMLIMIT at the memory limit.
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+benchkit.WriterNamespace,
		"GOMEMLIMIT="+strconv.FormatInt(cj.MemLimit, 10))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	fmt.Printf("\nthe loop (%s) over %d budgets, goal: each run after the first within %s, %d MiB\n",
		strings.Join(cj.Loop, " "), n, interval, goalRSS>>20)
	fmt.Printf("%-5s %10s %8s %10s %7s %10s %s\n", "run", "run wall", "written", "unchanged", "failed", "peak RSS", "")
	lines := bufio.NewScanner(stderr)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	var slow []string
	peak := int64(0)
	for run := 1; run <= cycles && lines.Scan(); {
		var l struct {
			Msg                        string
			Seconds                    float64
			Written, Unchanged, Failed int
		}
		if json.Unmarshal(lines.Bytes(), &l) != nil || l.Msg != "spend writer run done" {
			continue
		}
		peak = max(peak, vmHWM(cmd.Process.Pid))
		took := time.Duration(l.Seconds * float64(time.Second))
		verdict := ""
		if run > 1 && took > interval {
			verdict = "NOT within the interval"
			slow = append(slow, fmt.Sprintf("run %d: %s", run, took.Round(100*time.Millisecond)))
		}
		fmt.Printf("%-5d %10s %8d %10d %7d %6.1f MiB %s\n", run, took.Round(100*time.Millisecond), l.Written,
			l.Unchanged, l.Failed, float64(peak)/(1<<20), verdict)
		run++
	}
	if err := lines.Err(); err != nil {
		return err
	}
	switch {
	case len(slow) > 0 || peak > goalRSS:
		fmt.Printf("the loop: NOT within the goal (runs after the first within %s, %d MiB): %s, peak %.1f MiB\n",
			interval, goalRSS>>20, strings.Join(slow, ", "), float64(peak)/(1<<20))
	default:
		fmt.Printf("the loop: within the goal (runs after the first within %s, %d MiB)\n", interval, goalRSS>>20)
	}
	return nil
}

// vmHWM is the peak resident memory of process pid so far (VmHWM in /proc/<pid>/status), 0 if unreadable.
func vmHWM(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// instantAnswers stands in for Prometheus: every query is answered at once with one model's growth of 1.5.
type instantAnswers struct{}

func (instantAnswers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at, err := strconv.ParseFloat(r.FormValue("time"), 64)
	if err != nil {
		http.Error(w, "time: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[`+
		`{"metric":{"model":"gpt-4o"},"value":[%.3f,"1.5"]}]}}`, at)
}

func verdict(n int, r result) string {
	switch {
	case (r.Exit != 0 || r.written != n) && n != goalBudgets:
		return "NOT within the deadline: the budgets not reached got their SpendWriteFailed Event"
	case r.Exit != 0 || r.written != n:
		return "NOT within the goal: not every budget was written"
	case n != goalBudgets:
		return "within the deadline"
	case r.Wall <= goalWall && r.RSS <= goalRSS:
		return "within the goal (60 s, 128 MiB)"
	}
	return "NOT within the goal (60 s, 128 MiB)"
}

// createBudgets creates budgets from..to-1, per to a namespace, each reading LiteLLM team team-<i>.
func createBudgets(ctx context.Context, k benchkit.Kube, from, to, per int) error {
	for ns := from / per; ns*per < to; ns++ {
		_, err := k.Typed.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: namespace(ns * per)}}, metav1.CreateOptions{})
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			return err
		}
	}
	return benchkit.Parallel(to-from, 32, func(j int) error {
		i := from + j
		b := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "llmbudget.dev/v1alpha1", "kind": "LLMCostBudget",
			"metadata": map[string]any{"name": team(i), "namespace": namespace(i / per * per)},
			"spec": map[string]any{
				"limitUSD": "300",
				"costSource": map[string]any{
					"configMapName": team(i) + "-spend", "format": "Total", "key": "total",
					"prometheus": map[string]any{"source": "litellm", "selector": map[string]any{"team": team(i)}},
				},
			},
		}}
		_, err := k.Dynamic.Resource(benchkit.Budgets).Namespace(namespace(i/per*per)).Create(ctx, b,
			metav1.CreateOptions{})
		return err
	})
}

func team(i int) string      { return fmt.Sprintf("team-%05d", i) }
func namespace(i int) string { return fmt.Sprintf("ns-%05d", i) }

// exporter serves LiteLLM's spend counter for teams team-00000.. and its token counters, growing a cent a scrape.
type exporter struct {
	teams   atomic.Int64
	scrapes atomic.Int64
}

func (e *exporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	n, s := int(e.teams.Load()), e.scrapes.Add(1)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	for _, m := range []struct {
		name  string
		value float64
	}{{"spend", 0.01}, {"input_tokens", 100}, {"output_tokens", 10}} {
		fmt.Fprintf(w, "# TYPE litellm_%s_metric_total counter\n", m.name)
		for i := range n {
			fmt.Fprintf(w, "litellm_%s_metric_total{team=%q,model=\"gpt-4o\",hashed_api_key=\"k%d\"} %g\n",
				m.name, team(i), i, m.value*float64(s))
		}
	}
}

// startPrometheus runs Prometheus scraping target every second and returns its URL.
func startPrometheus(bin, target string) (string, func(), error) {
	if bin == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", nil, err
		}
		bin = filepath.Join(home, ".cache", "llmbudget", "prometheus", "v0.316.0", "prometheus")
	}
	work, err := os.MkdirTemp("", "writerbench-prometheus-")
	if err != nil {
		return "", nil, err
	}
	config := fmt.Sprintf("global: {scrape_interval: 1s, scrape_timeout: 900ms}\nscrape_configs:\n"+
		"- job_name: litellm\n  honor_labels: true\n  static_configs: [{targets: [%q]}]\n", target)
	if err := os.WriteFile(filepath.Join(work, "prometheus.yml"), []byte(config), 0o600); err != nil {
		return "", nil, err
	}
	ports, err := cluster.FreePorts(1)
	if err != nil {
		return "", nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	p, err := cluster.StartProcess(bin, work, filepath.Join(work, "prometheus.log"),
		"--config.file="+filepath.Join(work, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(work, "data"),
		"--web.listen-address="+addr)
	if err != nil {
		return "", nil, fmt.Errorf("start %s (bash test/k8s/build-prometheus.sh builds it): %w", bin, err)
	}
	stop := func() { p.Stop(5 * time.Second); _ = os.RemoveAll(work) }
	return "http://" + addr, stop, nil
}

// waitForSeries waits until Prometheus has held every team's spend for 90 s: the writer sums the steps of the
// period up to the last whole step before its run, so a series scraped only in the last minute may not count yet.
func waitForSeries(prom string, teams int) error {
	q := "count(litellm_spend_metric_total offset 90s)"
	deadline := time.Now().Add(4 * time.Minute)
	for {
		resp, err := http.Get(prom + "/api/v1/query?query=" + url.QueryEscape(q))
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), fmt.Sprintf(`"%d"]`, teams)) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus has not held the spend of all %d teams for 90 s after 4 minutes", teams)
		}
		time.Sleep(time.Second)
	}
}

type result struct {
	benchkit.WriterRun
	written int
}

// spendAll runs the writer once, as the Deployment's leader does, and counts the budgets it reports written.
func spendAll(bin string, cj benchkit.SpendWriter, prom, kubeconfig string) (result, error) {
	run, err := cj.Run(bin, "--prometheus="+prom, "--kubeconfig="+kubeconfig)
	r := result{WriterRun: run}
	if err != nil {
		return r, err
	}
	for _, l := range r.Lines {
		if strings.Contains(l, `"msg":"spend written"`) {
			r.written++
		}
	}
	return r, nil
}
