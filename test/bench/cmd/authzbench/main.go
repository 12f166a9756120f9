// Command authzbench measures llmbudget authz at the size the issue sets: 10,000 namespaces, 1,000 budgets (900
// LLMCostBudgets, 100 ClusterLLMCostBudgets) and 100,000 Pods. It prints
//
//   - the decision latency in process, p50 and p99, of the authorization handler (caller resolution, Pod lookup,
//     decision and answer) over calls from random Pods;
//   - the memory the cache takes at that size: the Store and the informers' stores of trimmed objects, built with
//     package gateway's own trimming and decoding, as the process's RSS after a collection;
//   - the requests per second through a real Caddy with and without forward_auth to the same handler, served over
//     HTTP on loopback, alternating rounds in one run, and their ratio.
//
// make bench runs it after the hook benchmarks; docs/benchmarks.md records its figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/authz/gateway"
)

// The size the issue sets.
const (
	namespaces     = 10_000
	teamBudgets    = 900
	clusterBudgets = 100
	podsPerNS      = 10
	latencyRounds  = 3
)

func main() {
	home, _ := os.UserHomeDir()
	caddy := flag.String("caddy", filepath.Join(home, ".cache", "llmbudget", "caddy", "v2.11.9", "caddy"),
		"the Caddy binary (test/k8s/build-caddy.sh)")
	calls := flag.Int("calls", 200_000, "decisions timed for the latency percentiles")
	round := flag.Duration("round", 3*time.Second, "length of one load round through Caddy")
	rounds := flag.Int("rounds", 3, "load rounds with and without forward_auth each, alternating")
	workers := flag.Int("workers", 16, "concurrent clients of the load rounds")
	flag.Parse()
	if err := run(*caddy, *calls, *round, *rounds, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "authzbench:", err)
		os.Exit(1)
	}
}

func run(caddy string, calls int, round time.Duration, rounds, workers int) error {
	before := rss()
	store, informers, ips := fill()
	runtime.GC()
	debug.FreeOSMemory()
	after := rss()
	nsCount, budgetCount, podCount := store.Counts()
	objects := 0
	for _, inf := range informers {
		objects += len(inf.ListKeys())
	}
	fmt.Printf("cache: %d namespaces, %d budgets, %d pods; %d objects in the informers' stores\n", nsCount,
		budgetCount, podCount, objects)
	fmt.Printf("rss: %.0f MiB with the cache (%.0f MiB before it; target <= 300 MiB)\n", mib(after), mib(before))

	h, err := handler(store)
	if err != nil {
		return err
	}
	// Rounds apart, so that a burst of other work on a shared machine shows as one round's outlier.
	for i := range latencyRounds {
		p50, p99 := latency(h, ips, calls)
		fmt.Printf("decision latency in process, round %d of %d calls: p50 %s, p99 %s (target p99 <= 50µs)\n",
			i+1, calls, p50, p99)
	}

	with, without, err := throughCaddy(caddy, h, round, rounds, workers)
	if err != nil {
		return err
	}
	fmt.Printf("through Caddy, %d workers, %d rounds of %s each: %.0f rps without forward_auth, %.0f rps with it: "+
		"ratio %.2f (target >= 0.70)\n", workers, rounds, round, without, with, with/without)
	runtime.KeepAlive(informers)
	return nil
}

// fill builds the Store and, beside it, the informers' stores as the server holds them: each object made whole,
// then trimmed and decoded by package gateway's own functions. It returns the Pods' addresses.
func fill() (*authz.Store, []cache.Indexer, []netip.Addr) {
	store := authz.NewStore()
	keyed := cache.Indexers{}
	nsInf, podInf, budgetInf := cache.NewIndexer(cache.MetaNamespaceKeyFunc, keyed),
		cache.NewIndexer(cache.MetaNamespaceKeyFunc, keyed), cache.NewIndexer(cache.MetaNamespaceKeyFunc, keyed)
	var ips []netip.Addr
	for i := range namespaces {
		name := fmt.Sprintf("team-%05d", i)
		md := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1",
			Labels: map[string]string{"kubernetes.io/metadata.name": name, "department": fmt.Sprintf("d%02d", i%100),
				"team": name}}}
		if i%50 == 0 {
			md.Labels[api.Group+"/blocked"] = "true"
			md.Annotations = map[string]string{api.Group + "/blocked-by": "LLMCostBudget " + name + "/chatbot is " +
				"OverBudget (spend 612.00 of 500.00 USD this Monthly period, ends 2026-12-01T00:00:00Z)"}
		}
		_ = nsInf.Add(md)
		store.SetNamespace(authz.Namespace{Name: name, Labels: md.Labels, Blocked: md.Labels[api.Group+"/blocked"] ==
			"true", BlockedBy: md.Annotations[api.Group+"/blocked-by"]})
		for j := range podsPerNS {
			ip := netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), byte(j + 1)})
			trimmed, _ := gateway.TrimPod(wholePod(name, j, ip, i%3 == 0 && j == 0))
			pod := trimmed.(*gateway.TrimmedPod)
			_ = podInf.Add(pod)
			store.SetPod(authz.Pod{Namespace: pod.Namespace, Name: pod.Name, Budget: pod.Budget}, pod.IPs)
			ips = append(ips, ip)
		}
	}
	for i := range teamBudgets + clusterBudgets {
		kind, u := budgetObject(i)
		_ = budgetInf.Add(u)
		b, err := gateway.DecodeBudget(kind, u)
		if err != nil {
			panic(err)
		}
		store.SetBudget(b)
	}
	return store, []cache.Indexer{nsInf, podInf, budgetInf}, ips
}

// wholePod is a Pod as the API server lists it: spec, status, labels and managed fields.
func wholePod(ns string, j int, ip netip.Addr, labelled bool) *corev1.Pod {
	labels := map[string]string{"app": "chatbot", "pod-template-hash": "7d9f8c6b5"}
	if labelled {
		labels[api.LabelBudget] = "chatbot"
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("chatbot-7d9f8c6b5-%05d", j), Namespace: ns,
			ResourceVersion: "1", Labels: labels,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: "Update"}}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app",
			Image: "registry.example/chatbot:1.2.3", Env: []corev1.EnvVar{{Name: "OPENAI_BASE_URL",
				Value: "http://llm-gateway.llm-gateway:8080/v1"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip.String(), PodIPs: []corev1.PodIP{{IP: ip.String()}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// budgetObject is budget i: the first teamBudgets are LLMCostBudgets of the first namespaces (every tenth
// blocking, every third of those Labelled), the rest ClusterLLMCostBudgets each selecting one department.
func budgetObject(i int) (string, *unstructured.Unstructured) {
	enforcement := map[string]any{"blocking": false, "reason": "the budget is UnderBudget: new workloads are admitted"}
	status := map[string]any{"state": "UnderBudget", "remainingUSD": "87.50",
		"period": map[string]any{"start": "2026-11-01T00:00:00Z", "end": "2026-12-01T00:00:00Z"}}
	if i%10 == 0 {
		scope := "Namespace"
		if i%30 == 0 {
			scope = "Labelled"
		}
		enforcement = map[string]any{"blocking": true, "scope": scope, "gates": []any{"Policy"},
			"resources": []any{"pods"}, "message": "LLMCostBudget is OverBudget (spend 612.00 of 500.00 USD)"}
		status["state"], status["remainingUSD"] = "OverBudget", "0.00"
	}
	status["enforcement"] = enforcement
	spec := map[string]any{"limitUSD": "500", "period": map[string]any{"type": "Monthly"},
		"enforcement": map[string]any{"action": "BlockNewWorkloads", "failurePolicy": "Open"}}
	md := map[string]any{"name": "chatbot", "namespace": fmt.Sprintf("team-%05d", i), "resourceVersion": "1"}
	kind := api.Kind
	if i >= teamBudgets {
		kind = api.ClusterKind
		md = map[string]any{"name": fmt.Sprintf("department-%02d", i-teamBudgets), "resourceVersion": "1"}
		spec["namespaceSelector"] = map[string]any{"matchLabels": map[string]any{
			"department": fmt.Sprintf("d%02d", i-teamBudgets)}}
	}
	return kind, &unstructured.Unstructured{Object: map[string]any{"apiVersion": api.APIVersion, "kind": kind,
		"metadata": md, "spec": spec, "status": status}}
}

func handler(store *authz.Store) (http.Handler, error) {
	r, err := gateway.NewResolver([]gateway.Gateway{{Name: "bench", Addresses: []string{"127.0.0.1/32"},
		Mode: gateway.ModeSource}})
	if err != nil {
		return nil, err
	}
	state := func() authz.Cache { return authz.Cache{Synced: true, Age: time.Second, MaxAge: 30 * time.Second} }
	return gateway.NewHandler(gateway.HandlerConfig{Resolver: r, View: store, Cache: state,
		UnknownCaller: authz.AdmitUnknown, Now: time.Now, Logger: slog.New(slog.DiscardHandler),
		Metrics: gateway.NewMetrics("bench", gateway.CacheGauges{Cache: state, Counts: store.Counts})})
}

// latency times calls decisions, each from a random Pod, and returns their p50 and p99.
func latency(h http.Handler, ips []netip.Addr, calls int) (p50, p99 time.Duration) {
	reqs := make([]*http.Request, 1024)
	for i := range reqs {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		req.RemoteAddr = "127.0.0.1:40000"
		req.Header.Set("X-Forwarded-For", ips[(i*7919)%len(ips)].String())
		req.Header.Set("Content-Type", "application/json")
		reqs[i] = req
	}
	took := make([]time.Duration, calls)
	w := &discard{h: http.Header{}}
	for i := range calls {
		clear(w.h)
		start := time.Now()
		h.ServeHTTP(w, reqs[i%len(reqs)])
		took[i] = time.Since(start)
	}
	slices.Sort(took)
	return took[calls/2], took[calls*99/100]
}

// discard is the cheapest ResponseWriter, so that the figures are the handler's.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// throughCaddy serves h and a fake upstream on loopback, runs Caddy with one site straight to the upstream and one
// with forward_auth first, and measures both in alternating rounds; it returns the median rps of each.
func throughCaddy(bin string, h http.Handler, round time.Duration, rounds, workers int) (with, without float64,
	err error) {
	authzAddr, stopAuthz, err := serve(h)
	if err != nil {
		return 0, 0, err
	}
	defer stopAuthz()
	upAddr, stopUp, err := serve(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":`+
			`{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`)
	}))
	if err != nil {
		return 0, 0, err
	}
	defer stopUp()
	plain, guarded := freeAddr(), freeAddr()
	dir, err := os.MkdirTemp("", "authzbench")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	caddyfile := filepath.Join(dir, "Caddyfile")
	config := fmt.Sprintf("{\n\tadmin off\n\tauto_https off\n\tpersist_config off\n}\n"+
		"http://%s {\n\treverse_proxy %s\n}\n"+
		"http://%s {\n\tforward_auth %s {\n\t\turi /check\n\t\tcopy_headers X-Llmbudget-Budget X-Llmbudget-State\n\t}\n"+
		"\treverse_proxy %s\n}\n", plain, upAddr, guarded, authzAddr, upAddr)
	if err := os.WriteFile(caddyfile, []byte(config), 0o600); err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--config", caddyfile, "--adapter", "caddyfile")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return 0, 0, fmt.Errorf("start caddy (test/k8s/build-caddy.sh builds it): %w", err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	if err := waitServing(guarded); err != nil {
		return 0, 0, err
	}
	var withs, withouts []float64
	for range rounds {
		withouts = append(withouts, load(plain, round, workers))
		withs = append(withs, load(guarded, round, workers))
	}
	return median(withs), median(withouts), nil
}

// load posts chat completions to addr from workers clients for d and returns the successful requests per second.
func load(addr string, d time.Duration, workers int) float64 {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	var ok atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				resp, err := client.Post("http://"+addr+"/v1/chat/completions", "application/json",
					strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(ok.Load()) / d.Seconds()
}

func serve(h http.Handler) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return l.Addr().String(), func() { _ = srv.Close() }, nil
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitServing(addr string) error {
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("caddy does not serve %s", addr)
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// rss is the process's resident set, from /proc/self/status (Linux); 0 elsewhere.
func rss() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kib float64
			_, _ = fmt.Sscanf(strings.TrimSpace(rest), "%f kB", &kib)
			return kib * 1024
		}
	}
	return 0
}

func mib(b float64) float64 { return b / (1 << 20) }
