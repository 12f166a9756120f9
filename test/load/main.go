// Command load measures the hook service under load over loopback: it starts
// the built binary (`llmbudget serve --addr 127.0.0.1:0`), fires budget sync
// requests at it over keep-alive connections at several concurrencies, and
// reports requests per second, exact p50/p99 latency, errors, CPU time per
// request and the server's resident memory before and after.
//
//	make build && go run ./test/load
//
// The requests are 10,000 distinct budgets (name, namespace, uid, limit and
// spend varied) built ahead of time from a real Metacontroller capture, so
// that generating them costs nothing during the run. Each concurrency level
// sends exactly -requests requests and stops at -max-run whatever happens;
// only loopback addresses are accepted. It exits 1 if any request failed.
//
// Beside each level it runs the same requests against a floor server (this
// program re-executed with -serve-floor): a separate process that only
// decodes each request into `any` with encoding/json and encodes a captured
// llmbudget response from `any`, the unavoidable cost of a call, as in the
// benchmarks of test/bench. Its latency is what the machine, the Go runtime
// and net/http give any JSON hook here.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/llmbudget/llmbudget/test/internal/serverproc"
)

type options struct {
	bin         string
	addr        string
	capture     string
	budgets     int
	requests    int
	concurrency []int
	maxRun      time.Duration
	logLevel    string
	cpuProfile  string
	profileAt   int
	floor       bool
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == serveFloorFlag {
		if err := serveFloor(os.Stdin, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "load floor:", err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(2)
	}
	failed, err := run(o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.StringVar(&o.bin, "bin", "bin/llmbudget", "the llmbudget binary to start")
	fs.StringVar(&o.addr, "addr", "", "load an already running server at this loopback host:port instead (no RSS figures)")
	fs.StringVar(&o.capture, "capture", "test/fixtures/budget/sync/capture-over-budget-with-children.request.json",
		"budget sync capture the requests are built from")
	fs.IntVar(&o.budgets, "budgets", 10_000, "distinct budgets the requests are spread over")
	fs.IntVar(&o.requests, "requests", 100_000, "requests per concurrency level")
	levels := fs.String("concurrency", "1,16,64", "comma-separated concurrency levels, run in order")
	fs.DurationVar(&o.maxRun, "max-run", 3*time.Minute, "time limit of one concurrency level")
	fs.StringVar(&o.logLevel, "log-level", "info",
		"the server's --log-level: info (one line per call, as in production) or debug")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the server (taken through --pprof) to this file")
	fs.IntVar(&o.profileAt, "profile-concurrency", 16, "the concurrency level -cpuprofile profiles")
	fs.BoolVar(&o.floor, "floor", true, "also load a floor server (encoding/json decode and encode only) at each level")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, f := range strings.Split(*levels, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 || c > 1024 {
			return o, fmt.Errorf("-concurrency: %q is not a level from 1 to 1024", f)
		}
		o.concurrency = append(o.concurrency, c)
	}
	switch {
	case o.logLevel != "info" && o.logLevel != "debug":
		return o, errors.New("-log-level must be info or debug: the server's address is read from its info line")
	case o.budgets < 1 || o.requests < 1:
		return o, errors.New("-budgets and -requests must be positive")
	case o.requests > 10_000_000:
		return o, errors.New("-requests is bounded at 10,000,000")
	case o.maxRun <= 0 || o.maxRun > time.Hour:
		return o, errors.New("-max-run must be between 0 and 1h")
	}
	return o, nil
}

// level is one concurrency level's figures.
type level struct {
	concurrency     int
	sent, completed int
	errors          int
	firstError      string
	wall            time.Duration
	latencies       []time.Duration // sorted
	serverCPU       time.Duration
	clientCPU       time.Duration
	rssAfter        int64
	// handled is the server's own histogram of its hook durations over the
	// level (llmbudget_hook_duration_seconds), where it exposes one.
	handled histogram
}

func run(o options, out io.Writer) (failed bool, err error) {
	fmt.Fprintf(out, "building %d distinct budget sync requests from %s\n", o.budgets, o.capture)
	bodies, err := buildBodies(o.capture, o.budgets)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(out, "  %d bodies, %d bytes each on average\n", len(bodies), avgLen(bodies))

	var srv *server
	addr := o.addr
	if addr == "" {
		// /metrics beside the hooks, where hookHistogram reads it.
		// The load is one peer, as Metacontroller is: it may hold every connection, past which calls wait.
		args := []string{"serve", "--addr", "127.0.0.1:0", "--metrics-addr=", "--log-level", o.logLevel,
			"--max-connections-per-peer", "512"}
		if o.cpuProfile != "" {
			args = append(args, "--pprof")
		}
		if srv, err = startServer(o.bin, args, nil); err != nil {
			return false, fmt.Errorf("%w (run `make build` first)", err)
		}
		defer srv.stop()
		addr = srv.Addr
	} else if err := checkLoopback(addr); err != nil {
		return false, err
	}
	url := "http://" + addr + "/budget/sync"
	fmt.Fprintf(out, "llmbudget %s", url)
	var rssBefore, hwm int64
	if srv != nil {
		rssBefore, _ = srv.Memory()
		fmt.Fprintf(out, " (pid %d), RSS at start %s", srv.Cmd.Process.Pid, mib(rssBefore))
	}
	fmt.Fprintln(out)

	var floor *server
	if o.floor {
		// The floor answers every request with one captured llmbudget
		// answer, of the median size among the first hundred budgets'.
		resp, err := medianAnswer(url, bodies[:min(len(bodies), 101)])
		if err != nil {
			return false, err
		}
		self, err := os.Executable()
		if err != nil {
			return false, err
		}
		if floor, err = startServer(self, []string{serveFloorFlag}, resp); err != nil {
			return false, fmt.Errorf("floor server: %w", err)
		}
		defer floor.stop()
		fmt.Fprintf(out, "floor     http://%s (pid %d), answering with a captured response of %d bytes\n",
			floor.Addr, floor.Cmd.Process.Pid, len(resp))
	}
	fmt.Fprintf(out, "client GOMAXPROCS %d, %d CPUs; each level runs llmbudget, then the floor\n\n",
		runtime.GOMAXPROCS(0), runtime.NumCPU())

	var levels, floors []level
	for _, c := range o.concurrency {
		var profile chan error
		if o.cpuProfile != "" && c == o.profileAt && srv != nil {
			profile = srv.profile(o.cpuProfile, o.maxRun)
		}
		l := runLevel(url, bodies, c, o.requests, o.maxRun, srv)
		if profile != nil {
			if err := <-profile; err != nil {
				fmt.Fprintf(out, "cpu profile: %v\n", err)
			} else {
				fmt.Fprintf(out, "cpu profile of the server at concurrency %d written to %s\n", c, o.cpuProfile)
			}
		}
		levels = append(levels, l)
		failed = failed || l.errors > 0 || l.completed < o.requests
		if floor != nil {
			floors = append(floors, runLevel("http://"+floor.Addr+"/budget/sync", bodies, c, o.requests, o.maxRun, floor))
		}
	}
	var rssAfter int64
	if srv != nil {
		rssAfter, hwm = srv.Memory()
	}
	report(out, o, levels, floors, srv != nil, rssBefore, rssAfter, hwm)
	return failed, nil
}

// medianAnswer posts bodies and returns the answer of median length.
func medianAnswer(url string, bodies [][]byte) ([]byte, error) {
	var answers [][]byte
	for _, b := range bodies {
		a, err := sample(url, b)
		if err != nil {
			return nil, err
		}
		answers = append(answers, a)
	}
	slices.SortFunc(answers, func(a, b []byte) int { return len(a) - len(b) })
	return answers[len(answers)/2], nil
}

// sample posts one body and returns the answer.
func sample(url string, body []byte) ([]byte, error) {
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("sample request: status %d: %s", resp.StatusCode, b)
	}
	return b, err
}

// runLevel sends n requests with c workers over keep-alive connections.
func runLevel(url string, bodies [][]byte, c, n int, maxRun time.Duration, srv *server) level {
	client := &http.Client{Transport: &http.Transport{
		Proxy:               nil, // loopback only, whatever the environment says
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        c,
		MaxIdleConnsPerHost: c,
		MaxConnsPerHost:     c,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), maxRun)
	defer cancel()

	latencies := make([]time.Duration, n)
	done := make([]bool, n)
	var next, sent, errs atomic.Int64
	var firstErr sync.Once
	var firstError string
	cpu0, self0 := cpuOf(srv), selfCPU()
	hist0 := hookHistogram(srv)
	start := time.Now()
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				sent.Add(1)
				d, err := call(ctx, client, url, bodies[i%len(bodies)], &buf)
				if err != nil {
					errs.Add(1)
					firstErr.Do(func() { firstError = err.Error() })
					continue
				}
				latencies[i], done[i] = d, true
			}
		}()
	}
	wg.Wait()
	l := level{
		concurrency: c, wall: time.Since(start), sent: int(sent.Load()), errors: int(errs.Load()), firstError: firstError,
	}
	l.serverCPU, l.clientCPU = cpuOf(srv)-cpu0, selfCPU()-self0
	l.handled = hookHistogram(srv).minus(hist0)
	l.latencies = latencies[:0]
	for i, ok := range done {
		if ok {
			l.latencies = append(l.latencies, latencies[i])
		}
	}
	slices.Sort(l.latencies)
	l.completed = len(l.latencies)
	if srv != nil {
		l.rssAfter, _ = srv.Memory()
	}
	return l
}

// call posts one body and checks that the answer is a budget status.
func call(ctx context.Context, client *http.Client, url string, body []byte, buf *bytes.Buffer) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	switch {
	case err != nil:
		return 0, fmt.Errorf("read response: %w", err)
	case resp.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(buf.String()))
	case !bytes.Contains(buf.Bytes(), []byte(`"state":"`)):
		return 0, fmt.Errorf("response without a budget state: %.200s", buf.String())
	}
	return d, nil
}

func report(out io.Writer, o options, levels, floors []level, own bool, rssBefore, rssAfter, hwm int64) {
	fmt.Fprintf(out, "%-9s %11s %9s %9s %7s %8s %9s %9s %9s %9s %10s %10s %11s\n",
		"server", "concurrency", "requests", "completed", "errors", "seconds", "req/s",
		"p50", "p99", "max", "server µs", "client µs", "RSS after")
	for i, l := range levels {
		row(out, "llmbudget", l, own)
		if i < len(floors) {
			row(out, "floor", floors[i], true)
		}
	}
	fmt.Fprintln(out, "(server µs, client µs: CPU time, user+system, per completed request, "+
		"of the server and of this load generator)")
	fmt.Fprintln(out, "\nllmbudget's own view (llmbudget_hook_duration_seconds, "+
		"from reading the request to writing the answer):")
	for _, l := range levels {
		if q := l.handled.quantile(0.99); q > 0 && q < math.MaxInt64 {
			fmt.Fprintf(out, "  concurrency %-3d p99 of the time in the handler <= %s; %.1f%% of calls took <= 1ms\n",
				l.concurrency, ms(q), 100*l.handled.share(time.Millisecond))
		}
	}
	if own {
		fmt.Fprintf(out, "\nllmbudget RSS: %s before, %s after, growth %s, peak %s\n",
			mib(rssBefore), mib(rssAfter), mib(rssAfter-rssBefore), mib(hwm))
	}

	fmt.Fprintln(out, "\ntargets:")
	errorsTotal, short := 0, false
	for _, l := range levels {
		errorsTotal += l.errors
		short = short || l.completed < o.requests
	}
	calls := 0
	for _, l := range levels {
		calls += l.completed
	}
	verdict(out, errorsTotal == 0 && !short, fmt.Sprintf("zero errors over %d calls", len(levels)*o.requests),
		fmt.Sprintf("%d errors, %d calls answered", errorsTotal, calls))
	if own {
		growth := rssAfter - rssBefore
		verdict(out, growth <= 20<<20, "RSS growth <= 20 MiB over the run", "growth "+mib(growth))
	}
}

func row(out io.Writer, name string, l level, own bool) {
	rps := float64(l.completed) / l.wall.Seconds()
	cpuPer, clientPer, rss := "-", "-", "-"
	if l.completed > 0 {
		clientPer = fmt.Sprintf("%.0f", float64(l.clientCPU.Microseconds())/float64(l.completed))
		if own {
			cpuPer = fmt.Sprintf("%.0f", float64(l.serverCPU.Microseconds())/float64(l.completed))
		}
	}
	if own {
		rss = mib(l.rssAfter)
	}
	fmt.Fprintf(out, "%-9s %11d %9d %9d %7d %8.2f %9.0f %9s %9s %9s %10s %10s %11s\n",
		name, l.concurrency, l.sent, l.completed, l.errors, l.wall.Seconds(), rps,
		ms(percentile(l.latencies, 50)), ms(percentile(l.latencies, 99)), ms(last(l.latencies)), cpuPer, clientPer, rss)
	if l.firstError != "" {
		fmt.Fprintf(out, "  first error: %s\n", l.firstError)
	}
}

func verdict(out io.Writer, met bool, target, figure string) {
	v := "met"
	if !met {
		v = "MISSED"
	}
	fmt.Fprintf(out, "  %-6s %s (%s)\n", v, target, figure)
}

// percentile is the nearest-rank percentile of sorted latencies.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

func last(sorted []time.Duration) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[len(sorted)-1]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d.Microseconds())/1000) }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func avgLen(bodies [][]byte) int {
	total := 0
	for _, b := range bodies {
		total += len(b)
	}
	return total / max(len(bodies), 1)
}

// buildBodies varies the capture's budget into n distinct ones: name,
// namespace, uid, limit and spend (so that states range from UnderBudget to
// OverBudget), with the spend ConfigMap and children keyed to match.
func buildBodies(capture string, n int) ([][]byte, error) {
	raw, err := os.ReadFile(capture)
	if err != nil {
		return nil, err
	}
	bodies := make([][]byte, n)
	for i := range n {
		var req map[string]any
		if err := json.Unmarshal(raw, &req); err != nil {
			return nil, fmt.Errorf("%s: %w", capture, err)
		}
		ns, name := fmt.Sprintf("team-%03d", i%250), fmt.Sprintf("budget-%05d", i)
		uid := fmt.Sprintf("%08x-6078-4c35-b80d-%012x", i, i)
		parent, _ := req["parent"].(map[string]any)
		md, _ := parent["metadata"].(map[string]any)
		spec, _ := parent["spec"].(map[string]any)
		if md == nil || spec == nil {
			return nil, fmt.Errorf("%s: no parent metadata and spec", capture)
		}
		md["name"], md["namespace"], md["uid"] = name, ns, uid
		spec["limitUSD"] = strconv.Itoa(100 + i%900)
		cmName, _ := dig(spec, "costSource", "configMapName").(string)
		key, _ := dig(spec, "costSource", "key").(string)
		for _, groupName := range []string{"related", "children"} {
			groups, _ := req[groupName].(map[string]any)
			for g, objs := range groups {
				renamed := map[string]any{}
				for k, obj := range objs.(map[string]any) {
					_, objName, _ := strings.Cut(k, "/")
					if o, ok := obj.(map[string]any); ok {
						if omd, ok := o["metadata"].(map[string]any); ok {
							omd["namespace"] = ns
						}
						if objName == cmName {
							o["data"] = map[string]any{key: fmt.Sprintf("%d.%02d", (i*7919)%1200, i%100)}
						}
					}
					renamed[ns+"/"+objName] = obj
				}
				groups[g] = renamed
			}
		}
		if bodies[i], err = json.Marshal(req); err != nil {
			return nil, err
		}
	}
	return bodies, nil
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// server is the llmbudget process under load.
type server struct{ *serverproc.Server }

// startServer starts a server process that logs its address as llmbudget
// does ({"msg":"serving hooks","addr":...} on stderr), feeding it stdin.
func startServer(path string, args []string, stdin []byte) (*server, error) {
	cmd, err := serverproc.Command(path, args...)
	if err != nil {
		return nil, err
	}
	cmd.Stdin = bytes.NewReader(stdin)
	p, err := serverproc.Start(cmd, "serving hooks")
	if err != nil {
		return nil, err
	}
	s := &server{p}
	if err := checkLoopback(s.Addr); err != nil {
		s.stop()
		return nil, err
	}
	if err := waitHealthy("http://"+s.Addr+"/healthz", 10*time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// stop asks the server to drain and kills it if it does not within 30s.
func (s *server) stop() {
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.Done():
	case <-time.After(30 * time.Second):
		s.Kill()
	}
}

// userHZ is the unit of /proc/<pid>/stat's CPU times on Linux.
const userHZ = 100

// cpuOf returns the server's CPU time so far, user and system.
func cpuOf(s *server) time.Duration {
	if s == nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the line.
	rest := string(b[bytes.LastIndexByte(b, ')')+1:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / userHZ
}

// selfCPU returns this process's CPU time so far, user and system.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// profile fetches a CPU profile of the server while a level runs.
func (s *server) profile(path string, maxRun time.Duration) chan error {
	done := make(chan error, 1)
	go func() {
		secs := min(int(maxRun.Seconds()), 10)
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.Addr, secs))
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("pprof answered %s", resp.Status)
			return
		}
		f, err := os.Create(path)
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	return done
}

func waitHealthy(url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy within %s: %v", url, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkLoopback refuses any address that is not on this machine's loopback.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("address %q is not a loopback address", addr)
	}
	return nil
}

// histogram is a cumulative Prometheus histogram: upper bound → count.
type histogram map[time.Duration]float64

// hookHistogram reads llmbudget's budget/sync duration histogram from its
// /metrics; nil when there is none (the floor, or an older binary).
func hookHistogram(s *server) histogram {
	if s == nil {
		return nil
	}
	resp, err := http.Get("http://" + s.Addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	h := histogram{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	const prefix = `llmbudget_hook_duration_seconds_bucket{hook="budget/sync",le="`
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		le, count, ok := strings.Cut(line, `"} `)
		bound, err1 := strconv.ParseFloat(le, 64)
		n, err2 := strconv.ParseFloat(count, 64)
		if !ok || err1 != nil || err2 != nil {
			continue
		}
		le2 := time.Duration(math.MaxInt64) // the +Inf bucket: every call
		if !math.IsInf(bound, 1) {
			le2 = time.Duration(bound * float64(time.Second))
		}
		h[le2] = n
	}
	return h
}

func (h histogram) minus(before histogram) histogram {
	if h == nil {
		return nil
	}
	d := histogram{}
	for le, n := range h {
		d[le] = n - before[le]
	}
	return d
}

func (h histogram) bounds() []time.Duration {
	var bs []time.Duration
	for le := range h {
		bs = append(bs, le)
	}
	slices.Sort(bs)
	return bs
}

// quantile is the smallest bucket bound within which a share q of the calls
// finished; 0 when unknown.
func (h histogram) quantile(q float64) time.Duration {
	bs := h.bounds()
	if len(bs) == 0 || h[bs[len(bs)-1]] == 0 {
		return 0
	}
	total := h[bs[len(bs)-1]]
	for _, le := range bs {
		if h[le] >= q*total {
			return le
		}
	}
	return 0
}

// share is the fraction of calls that finished within d (a bucket bound).
func (h histogram) share(d time.Duration) float64 {
	bs := h.bounds()
	if len(bs) == 0 || h[bs[len(bs)-1]] == 0 {
		return 0
	}
	return h[d] / h[bs[len(bs)-1]]
}
