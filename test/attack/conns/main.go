// Command conns attacks the connection bounds of `llmbudget serve` and `llmbudget authz` over loopback, and
// reports how many real calls are answered while each attack holds, and each server's peak resident memory
// (VmHWM) against its Deployment's limit (GOMEMLIMIT set to it, as deployed).
//
//	make build && go run ./test/attack/conns
//
// The attackers are other Pods: they connect from 127.0.0.2 or 127.0.0.3, the real client (Metacontroller, or a
// gateway) from 127.0.0.1, except where an attack shares the real client's address. authz is configured with one
// gateway, 127.0.0.0/30 in header mode, and no API server: it never syncs, so every gateway call is answered 503
// (budget_unavailable), which is an answer all the same; a peer outside the gateway's CIDR is answered 403. Each
// attack opens at most 10,000 connections and holds for a few seconds. It exits 1 if any real call goes
// unanswered or any peak passes its limit.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmbudget/llmbudget/test/attack/internal/flood"
	"github.com/llmbudget/llmbudget/test/internal/serverproc"
)

// The addresses of the loopback peers.
const (
	realPeer     = "127.0.0.1" // Metacontroller, or the gateway
	otherPeer    = "127.0.0.2" // another Pod (authz: one within the gateway's CIDR)
	untrusted    = "127.0.0.5" // authz: a Pod outside the gateway's CIDR
	realCalls    = 5
	callDeadline = 2 * time.Second
)

const syncBody = `{"parent":{"metadata":{"name":"b","namespace":"ns"},` +
	`"spec":{"limitUSD":"10","costSource":{"configMapName":"cm","key":"k"}}},` +
	`"related":{"ConfigMap.v1":{"ns/cm":{"data":{"k":"2"}}}}}`

// target is a server under attack: how to start it, and what a real call is.
type target struct {
	name  string
	limit int64 // the Deployment's memory limit
	start func(bin string, limit int64) (*server, error)
	call  string // a real call, written on a new connection from realPeer
	// answered is whether a response is the server's answer to a real call.
	answered func(*http.Response) bool
}

type attack struct {
	name   string
	target *target
	run    func(addr string, scale int) (stop func())
}

var (
	serve = &target{name: "serve", limit: 128 << 20, start: startServe,
		call: fmt.Sprintf("POST /budget/sync HTTP/1.1\r\nHost: llmbudget\r\nContent-Type: application/json\r\n"+
			"Content-Length: %d\r\nConnection: close\r\n\r\n%s", len(syncBody), syncBody),
		answered: func(r *http.Response) bool { return r.StatusCode == http.StatusOK }}
	authz = &target{name: "authz", limit: 512 << 20, start: startAuthz,
		call: "POST /v1/chat/completions HTTP/1.1\r\nHost: llm\r\nX-Team: team-ml\r\nConnection: close\r\n\r\n",
		answered: func(r *http.Response) bool {
			return r.StatusCode == http.StatusOK || r.StatusCode == http.StatusServiceUnavailable
		}}
)

var attacks = []attack{
	{"10,000 idle keep-alive connections of another Pod", serve, idle(otherPeer, 10_000, syncRequest)},
	{"10,000 idle keep-alive connections of Metacontroller's own address", serve, idle(realPeer, 10_000, syncRequest)},
	{"5,000 concurrent small syncs of another Pod", serve, concurrent(otherPeer, 5_000, syncRequest)},
	{"5,000 slow syncs of another Pod (bodies trickled)", serve, slowBodies(otherPeer, 5_000)},
	{"2,000 connections of a non-gateway, each called once (403), then held", authz,
		idle(untrusted, 2_000, gatewayRequest)},
	{"2,000 connections of a non-gateway sending nothing", authz, silent(untrusted, 2_000)},
	{"10,000 idle keep-alive connections of a Pod in the gateway's CIDR", authz,
		idle(otherPeer, 10_000, gatewayRequest)},
	{"5,000 unfinished headers of a Pod in the gateway's CIDR", authz, silentHeaders(otherPeer, 5_000)},
}

func main() {
	bin := flag.String("bin", "bin/llmbudget", "the llmbudget binary to attack")
	scale := flag.Int("scale", 1, "divide every attack's connections by this (for a quick try)")
	only := flag.String("only", "", "run only the attacks whose name contains this")
	flag.Parse()
	failed := false
	fmt.Printf("%-6s %-72s %10s %8s %12s %s\n", "server", "attack", "peak RSS", "limit", "real calls", "")
	for _, a := range attacks {
		if !strings.Contains(a.name, *only) {
			continue
		}
		peak, answered, err := measure(*bin, a, *scale)
		if err != nil {
			fmt.Fprintln(os.Stderr, "conns:", a.name+":", err)
			os.Exit(1)
		}
		verdict := "ok"
		if peak > a.target.limit || answered < realCalls {
			verdict, failed = "FAILED", true
		}
		fmt.Printf("%-6s %-72s %6.1f MiB %4d MiB %7d of %d %s\n", a.target.name, a.name, float64(peak)/(1<<20),
			a.target.limit>>20, answered, realCalls, verdict)
	}
	fmt.Printf("real calls from %s, each on a new connection, within %s each; attackers from other addresses\n",
		realPeer, callDeadline)
	if failed {
		os.Exit(1)
	}
}

func measure(bin string, a attack, scale int) (peak int64, answered int, err error) {
	srv, err := a.target.start(bin, a.target.limit)
	if err != nil {
		return 0, 0, err
	}
	defer srv.stop()
	stop := a.run(srv.Addr, max(scale, 1))
	defer stop()
	for range realCalls {
		if realCall(srv.Addr, a.target) {
			answered++
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // the attack holds on a while after the last real call
	return srv.Peak(), answered, nil
}

func realCall(addr string, t *target) bool {
	conn := flood.Dial(realPeer, addr)
	if conn == nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(callDeadline))
	if _, err := io.WriteString(conn, t.call); err != nil {
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return t.answered(resp)
}

// many runs n copies of f from the address from, each on a connection of its own, and returns once each has
// started its attack (or after 10 s).
func many(from, addr string, n int, f func(net.Conn)) (stop func()) {
	return flood.Many(from, addr, n, 10*time.Second, f)
}

func syncRequest() string {
	return fmt.Sprintf("POST /budget/sync HTTP/1.1\r\nHost: llmbudget\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\n\r\n%s", len(syncBody), syncBody)
}

func gatewayRequest() string {
	return "POST /v1/chat/completions HTTP/1.1\r\nHost: llm\r\nX-Team: team-ml\r\n\r\n"
}

// idle makes one call on each connection, reads the answer, and keeps the connection open.
func idle(from string, n int, request func() string) func(string, int) func() {
	return func(addr string, scale int) func() {
		return many(from, addr, n/scale, func(conn net.Conn) {
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = io.WriteString(conn, request())
			if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			_ = conn.SetDeadline(time.Time{})
		})
	}
}

// concurrent makes one call on each connection at once and keeps the connection open after its answer.
func concurrent(from string, n int, request func() string) func(string, int) func() {
	return idle(from, n, request)
}

// slowBodies sends a sync's header and the start of its body on each connection, then a byte a second.
func slowBodies(from string, n int) func(string, int) func() {
	return func(addr string, scale int) func() {
		stopped := make(chan struct{})
		hold := many(from, addr, n/scale, func(conn net.Conn) {
			_, err := fmt.Fprintf(conn, "POST /budget/sync HTTP/1.1\r\nHost: llmbudget\r\n"+
				"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(syncBody)+1000, syncBody[:20])
			if err != nil {
				return
			}
			flood.Trickle(conn, " ", stopped)
		})
		return func() { close(stopped); hold() }
	}
}

// silent opens connections and sends nothing on them.
func silent(from string, n int) func(string, int) func() {
	return func(addr string, scale int) func() { return many(from, addr, n/scale, func(net.Conn) {}) }
}

// silentHeaders sends the first line of a call and nothing more.
func silentHeaders(from string, n int) func(string, int) func() {
	return func(addr string, scale int) func() {
		return many(from, addr, n/scale, func(conn net.Conn) {
			_, _ = io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: llm\r\n")
		})
	}
}

// server is a started server and the directory of its configuration, if it has one.
type server struct {
	*serverproc.Server
	dir string
}

func startServe(bin string, limit int64) (*server, error) {
	return start(bin, limit, "serving hooks", "", "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "",
		"--log-level", "info")
}

// startAuthz runs authz with one gateway and a kubeconfig whose API server is no one's: it never syncs.
func startAuthz(bin string, limit int64) (*server, error) {
	dir, err := os.MkdirTemp("", "llmbudget-conns-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	config := filepath.Join(dir, "authz.yaml")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "http://127.0.0.1:1"}}]
users: [{name: none, user: {}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(config, []byte(`gateways:
- name: gateway
  addresses: ["127.0.0.0/30"]
  mode: header
  header: x-team
`), 0o600); err != nil {
		return nil, err
	}
	return start(bin, limit, "serving authorization calls", dir, "authz", "--config", config,
		"--kubeconfig", kubeconfig, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--log-level", "info")
}

// start runs bin with args, GOMEMLIMIT the limit as the Deployment sets it, until its log names its address.
func start(path string, limit int64, msg, dir string, args ...string) (*server, error) {
	cmd, err := serverproc.Command(path, args...)
	if err != nil {
		return nil, err
	}
	serverproc.LimitMemory(cmd, limit)
	p, err := serverproc.Start(cmd, msg)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &server{Server: p, dir: dir}, nil
}

func (s *server) stop() {
	s.Kill()
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}
