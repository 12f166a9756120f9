// Command attack measures the hook service's memory under the attacks its bounds are for, against the
// Deployment's 128 MiB limit: it starts the built binary (`llmbudget serve --addr 127.0.0.1:0`, GOMEMLIMIT set
// to the limit as deployed) once per attack, runs the attack over loopback, and reports the server's peak
// resident memory (VmHWM) and whether real syncs sent during the attack were answered.
//
//	make build && go run ./test/attack
//
// The attacks come from 127.0.0.2, another Pod, and the real syncs from 127.0.0.1. They need no valid request:
// unfinished headers of 1 MB each, idle keep-alive connections, bodies trickled a byte at a time after 64 KiB
// (declared) or 1.1 MB (chunked), and many small syncs at once. Then come the syncs at scale (scale.go): real
// captures grown to 10,000 namespaces, or 100 cluster budgets, and a crafted cluster sync over 58,000 namespaces
// sent four times at once; each must be answered within 1 s. It exits 1 if any peak passes the limit, a real sync
// beside an attack is not answered, or a sync at scale takes longer.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/llmbudget/llmbudget/test/attack/internal/flood"
	"github.com/llmbudget/llmbudget/test/internal/serverproc"
)

const syncBody = `{"parent":{"metadata":{"name":"b","namespace":"ns"},` +
	`"spec":{"limitUSD":"10","costSource":{"configMapName":"cm","key":"k"}}},` +
	`"related":{"ConfigMap.v1":{"ns/cm":{"data":{"k":"2"}}}}}`

type attack struct {
	name string
	run  func(addr string, scale int) (stop func())
}

var attacks = []attack{
	{"200 connections each sending 1 MB of an unfinished header", unfinishedHeaders},
	{"10,000 idle keep-alive connections", idleConnections},
	{"4 bodies trickled after 64 KiB of 4 MiB, 4 chunked after 1.1 MB", trickledBodies},
	{"5,000 concurrent small syncs", concurrentSyncs},
}

func main() {
	bin := flag.String("bin", "bin/llmbudget", "the llmbudget binary to attack")
	limit := flag.Int64("limit", 128<<20, "the container's memory limit, in bytes (GOMEMLIMIT)")
	scale := flag.Int("scale", 1, "divide every attack's connections by this (for a quick try)")
	fixtures := flag.String("fixtures", "test/fixtures", "the hook fixtures the scaled syncs grow from")
	only := flag.String("only", "", "run only the attacks and scaled syncs whose name contains this")
	flag.Parse()
	failed := false
	fmt.Printf("%-66s %12s %14s %s\n", "attack", "peak RSS", "syncs beside", "")
	for _, a := range attacks {
		if !strings.Contains(a.name, *only) {
			continue
		}
		peak, answered, err := measure(*bin, *limit, a, *scale)
		if err != nil {
			fmt.Fprintln(os.Stderr, "attack:", a.name+":", err)
			os.Exit(1)
		}
		verdict := "within the limit"
		if peak > *limit || answered < realSyncs {
			verdict, failed = "FAILED", true
		}
		fmt.Printf("%-66s %8.1f MiB %8d of %d %s\n", a.name, float64(peak)/(1<<20), answered, realSyncs, verdict)
	}
	fmt.Printf("\n%-74s %9s %9s %8s %10s %s\n", "sync at scale", "request", "answer", "slowest", "peak RSS", "status")
	for _, c := range scaledSyncs {
		if !strings.Contains(c.name, *only) {
			continue
		}
		r, err := measureScaled(*bin, *limit, *fixtures, c)
		if err != nil {
			fmt.Fprintln(os.Stderr, "attack:", c.name+":", err)
			os.Exit(1)
		}
		verdict := "within the limits"
		if r.peak > *limit || r.slowest > time.Second {
			verdict, failed = "FAILED", true
		}
		fmt.Printf("%-74s %6.1f MB %6.1f MB %6.0f ms %6.1f MiB %s %s\n", c.name, float64(r.requestBytes)/1e6,
			float64(r.responseBytes)/1e6, float64(r.slowest.Microseconds())/1e3, float64(r.peak)/(1<<20),
			strings.Join(r.codes, ","), verdict)
	}
	fmt.Printf("limit %.0f MiB; a sync at scale within 1 s\n", float64(*limit)/(1<<20))
	if failed {
		os.Exit(1)
	}
}

// realSyncs are sent, one at a time, while each attack holds, each within 2 s: every one must be answered 200,
// since the attacker is held to its --max-connections-per-peer and idle connections are closed for new ones.
const realSyncs = 5

var serveArgs = strings.Fields(os.Getenv("SERVE_ARGS"))

func measure(bin string, limit int64, a attack, scale int) (peak int64, answered int, err error) {
	srv, err := start(bin, limit)
	if err != nil {
		return 0, 0, err
	}
	defer srv.Kill()
	stop := a.run(srv.Addr, scale)
	defer stop()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for range realSyncs {
		resp, err := client.Post("http://"+srv.Addr+"/budget/sync", "application/json", strings.NewReader(syncBody))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				answered++
			}
		}
	}
	time.Sleep(time.Second) // the attack holds on a while after the last real sync
	return srv.Peak(), answered, nil
}

// attacker is the address the attacks connect from: another Pod's, as in a cluster, where Metacontroller's own
// address is its alone. The real syncs come from 127.0.0.1, so --max-connections-per-peer holds the attacker.
const attacker = "127.0.0.2"

// many runs n copies of f from the attacker, each on a connection of its own, and returns once each has started
// its attack (or after 5 s).
func many(addr string, n int, f func(net.Conn)) (stop func()) {
	return flood.Many(attacker, addr, n, 5*time.Second, f)
}

func unfinishedHeaders(addr string, scale int) func() {
	return many(addr, 200/scale, func(conn net.Conn) {
		_, _ = io.WriteString(conn, "POST /budget/sync HTTP/1.1\r\nHost: llmbudget\r\nX-Pad: ")
		chunk := strings.Repeat("x", 16<<10)
		for range 64 {
			_ = conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if _, err := io.WriteString(conn, chunk); err != nil {
				return
			}
		}
	})
}

func idleConnections(addr string, scale int) func() {
	return many(addr, 10_000/scale, func(conn net.Conn) {
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		_, _ = fmt.Fprintf(conn, "POST /budget/sync HTTP/1.1\r\nHost: llmbudget\r\nContent-Type: application/json\r\n"+
			"Content-Length: %d\r\n\r\n%s", len(syncBody), syncBody)
		if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		_ = conn.SetDeadline(time.Time{}) // kept alive, idle
	})
}

func trickledBodies(addr string, _ int) func() {
	stopped := make(chan struct{})
	trickle := func(header string, head string, next string) func(net.Conn) {
		return func(conn net.Conn) {
			if _, err := io.WriteString(conn, "POST /budget/sync HTTP/1.1\r\nHost: llmbudget\r\n"+
				"Content-Type: application/json\r\n"+header+"\r\n"+head); err != nil {
				return
			}
			flood.Trickle(conn, next, stopped)
		}
	}
	declared := many(addr, 4, trickle("Content-Length: 4194304\r\n", strings.Repeat(" ", 64<<10), " "))
	const chunked = 1_100_000
	chunk := fmt.Sprintf("%x\r\n%s\r\n", chunked, strings.Repeat(" ", chunked))
	unbounded := many(addr, 4, trickle("Transfer-Encoding: chunked\r\n", chunk, "1\r\n \r\n"))
	time.Sleep(500 * time.Millisecond) // the server reads what was sent at once
	return func() { close(stopped); declared(); unbounded() }
}

func concurrentSyncs(addr string, scale int) func() {
	return many(addr, 5_000/scale, func(conn net.Conn) {
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = fmt.Fprintf(conn, "POST /budget/sync HTTP/1.1\r\nHost: llmbudget\r\nContent-Type: application/json\r\n"+
			"Content-Length: %d\r\n\r\n%s", len(syncBody), syncBody)
		if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// start runs `bin serve` on a loopback port, with GOMEMLIMIT the limit as the Deployment sets it.
func start(path string, limit int64) (*serverproc.Server, error) {
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--metrics-addr", "", "--log-level", "info"}, serveArgs...)
	cmd, err := serverproc.Command(path, args...)
	if err != nil {
		return nil, err
	}
	serverproc.LimitMemory(cmd, limit)
	return serverproc.Start(cmd, "serving hooks")
}
