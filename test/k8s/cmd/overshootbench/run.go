package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
	"github.com/llmbudget/llmbudget/test/k8s/cmd/internal/benchkit"
)

func nproc() int { return runtime.NumCPU() }

func run(o options) ([]string, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	burns, err := plan(o)
	if err != nil {
		return nil, err
	}
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return nil, err
	}
	promBin, err := cacheBin(o.prometheus, "prometheus/v0.316.0", "prometheus")
	if err != nil {
		return nil, err
	}
	caddyBin, err := cacheBin(o.caddy, "caddy/v2.11.9", "caddy")
	if err != nil {
		return nil, err
	}
	dir, cleanup, err := workDir(o.keep)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	w, err := benchkit.DeployedSpendWriter()
	if err != nil {
		return nil, err
	}
	fmt.Printf("machine: %s\n", machine())
	fmt.Printf("writer: llmbudget %s %s (%s)\n", strings.Join(w.Args, " "), strings.Join(w.Loop, " "),
		benchkit.SpendWriterManifest)

	up := newUpstream()
	for _, b := range burns {
		up.add(b.key, b.ns, b.costMu, b.limitMu)
	}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	upAddr := strings.TrimPrefix(upSrv.URL, "http://")
	prom, promProc, err := startPrometheus(promBin, dir, upAddr, o.scrape)
	if promProc != nil {
		defer promProc.Stop(5 * time.Second)
	}
	if err != nil {
		return nil, err
	}

	c, k, err := benchkit.Start(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	if err := ensureNamespace(ctx, k, benchkit.WriterNamespace); err != nil {
		return nil, err
	}
	writerKubeconfig, err := installWriterRBAC(ctx, c, k, dir)
	if err != nil {
		return nil, err
	}
	for _, b := range burns {
		if err := createBurn(ctx, k, b, o.limitUSD); err != nil {
			return nil, fmt.Errorf("burn %s: %w", b.name, err)
		}
	}

	hookAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	hook, err := start(dir, "serve", bin, "serve", "--addr", hookAddr, "--metrics-addr", "", "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	defer hook.Stop(5 * time.Second)
	if err := waitFor(30*time.Second, "llmbudget serve to answer", func() (bool, string) {
		_, err := get("http://" + hookAddr + "/healthz")
		return err == nil, fmt.Sprint(err)
	}); err != nil {
		return nil, err
	}
	d := &driver{kube: k, hook: "http://" + hookAddr}
	if err := d.start(ctx); err != nil {
		return nil, err
	}
	authzAddr, authzProc, err := startAuthz(bin, dir, c.Kubeconfig)
	if authzProc != nil {
		defer authzProc.Stop(5 * time.Second)
	}
	if err != nil {
		return nil, err
	}
	caddy, caddyProc, err := startCaddy(caddyBin, dir, authzAddr, upAddr)
	if caddyProc != nil {
		defer caddyProc.Stop(5 * time.Second)
	}
	if err != nil {
		return nil, err
	}

	// Prometheus holds every team's series (at zero) before the writer asks: a period with no series is an error.
	if err := waitFor(2*o.scrape+time.Minute, "Prometheus to hold every team's spend", func() (bool, string) {
		out := promQuery(prom, "count(litellm_spend_metric_total)")
		return strings.Contains(out, fmt.Sprintf(`"%d"]`, len(burns))), out
	}); err != nil {
		return nil, err
	}
	// Prometheus' CPU without the writer, over two scrapes: what it spends on scraping and itself.
	idle, err := cpuOver(prom, 2*o.scrape)
	if err != nil {
		return nil, err
	}

	// The Deployment's Downward API: the replicas' Lease is in their own namespace.
	if err := os.Setenv("POD_NAMESPACE", benchkit.WriterNamespace); err != nil {
		return nil, err
	}
	var writers []string
	var writerProcs []*cluster.Process
	for i := range 2 {
		metrics, err := freeAddr()
		if err != nil {
			return nil, err
		}
		args := append(append([]string{}, w.Args...), w.Loop...)
		args = append(args, "--prometheus="+prom, "--kubeconfig="+writerKubeconfig,
			fmt.Sprintf("--identity=writer-%d", i), "--metrics-addr="+metrics)
		p, err := start(dir, fmt.Sprintf("writer-%d", i), bin, args...)
		if err != nil {
			return nil, err
		}
		defer p.Stop(5 * time.Second)
		writers = append(writers, "http://"+metrics)
		writerProcs = append(writerProcs, p)
	}
	// Every budget evaluated from a figure the writer wrote, before any client calls.
	if err := waitFor(3*time.Minute, "every budget's status to show the writer's first figure", func() (bool, string) {
		for i, p := range writerProcs {
			select {
			case <-p.Done():
				return true, fmt.Sprintf("writer-%d exited: %v: %s", i, p.Err(), p.Tail(5))
			default:
			}
		}
		for _, b := range burns {
			st := d.written(b.ns + "/agents")
			if len(st) == 0 || st[len(st)-1].status["observedSpendUSD"] == nil {
				return false, b.ns + " has no observed spend yet"
			}
		}
		return true, ""
	}); err != nil {
		return nil, err
	}
	for i, p := range writerProcs {
		select {
		case <-p.Done():
			return nil, fmt.Errorf("writer-%d exited: %v: %s", i, p.Err(), p.Tail(5))
		default:
		}
	}

	cpu0, err := metric(prom, "process_cpu_seconds_total")
	if err != nil {
		return nil, err
	}
	runs0 := writerRuns(writers)
	begin := time.Now().Add(time.Second)
	fmt.Printf("burns start at %s: %s each, limit %d USD, %.0f requests/s; Prometheus scrapes every %s\n",
		begin.UTC().Format(time.TimeOnly), strings.Join(names(burns), ", "), o.limitUSD, o.rate, o.scrape)
	var all sync.WaitGroup
	for _, b := range burns {
		deadline := b.length*3/2 + 3*time.Minute
		all.Go(func() { b.spend(ctx, up, caddy, begin, o.hold, deadline) })
	}
	all.Wait()
	end := time.Now()
	cpu1, err := metric(prom, "process_cpu_seconds_total")
	if err != nil {
		return nil, err
	}
	runs := writerRuns(writers) - runs0
	// The last figures reach the statuses a scrape and a writer cycle later: then status.overshoot is the whole.
	settled := waitFor(2*o.scrape+loopFlagValue(w.Loop, "--interval", 15*time.Second)+30*time.Second,
		"every status to show the spend the upstream counted", func() (bool, string) {
			for _, b := range burns {
				spent, _ := up.spent(b.key)
				st := d.written(b.ns + "/agents")
				if len(st) == 0 || st[len(st)-1].status["observedSpendUSD"] != usd(spent) {
					return false, b.name
				}
			}
			return true, ""
		})
	if settled != nil {
		fmt.Println(settled)
	}

	loopInterval := loopFlagValue(w.Loop, "--interval", 15*time.Second)
	missed := report(o, burns, up, d, loopInterval)
	busy := cpu1 - cpu0
	idleShare := idle * end.Sub(begin).Seconds()
	fmt.Printf("\nPrometheus CPU: %.2f s over %s of burns, %.0f writer cycles: %.3f s per cycle "+
		"(%.3f s without its idle %.4f s/s of scraping)\n", busy, end.Sub(begin).Round(time.Second), runs,
		busy/max(runs, 1), (busy-idleShare)/max(runs, 1), idle)
	fmt.Printf("hook syncs: %d; driver errors: %d\n", d.syncs, len(d.errs))
	for _, e := range d.errs[:min(len(d.errs), 5)] {
		fmt.Println("  " + e)
	}
	return missed, nil
}

func ensureNamespace(ctx context.Context, k benchkit.Kube, name string) error {
	_, err := k.Typed.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	_, err = k.Typed.CoreV1().Namespaces().Create(ctx, nsObject(name), metav1.CreateOptions{})
	return err
}

// cpuOver is Prometheus' CPU seconds per second over d.
func cpuOver(prom string, d time.Duration) (float64, error) {
	a, err := metric(prom, "process_cpu_seconds_total")
	if err != nil {
		return 0, err
	}
	time.Sleep(d)
	b, err := metric(prom, "process_cpu_seconds_total")
	return (b - a) / d.Seconds(), err
}

// writerRuns is the runs every replica made (only the leader's count grows).
func writerRuns(writers []string) float64 {
	n := 0.0
	for _, w := range writers {
		if v, err := metric(w, "llmbudget_spend_runs_total"); err == nil {
			n += v
		}
	}
	return n
}

// loopFlagValue is the duration flag name of the loop's flags, or def.
func loopFlagValue(flags []string, name string, def time.Duration) time.Duration {
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			if d, err := time.ParseDuration(v); err == nil {
				return d
			}
		}
	}
	return def
}

func names(burns []*burn) []string {
	var out []string
	for _, b := range burns {
		if !slices.Contains(out, short(b.length)) {
			out = append(out, short(b.length))
		}
	}
	return out
}
