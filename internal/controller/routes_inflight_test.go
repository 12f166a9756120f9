package controller_test

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

// tightHandler admits one call at a time, of at most MinCallWeight bytes.
func tightHandler(t *testing.T, observe func(metacontroller.Call)) http.Handler {
	t.Helper()
	h, err := controller.NewRouter(metacontroller.Config{
		Now:              func() time.Time { return fixed },
		Logger:           slog.New(slog.DiscardHandler),
		MaxBodyBytes:     metacontroller.MinCallWeight,
		MaxInFlightBytes: metacontroller.MinCallWeight,
		Observe:          observe,
	})
	require.NoError(t, err)
	return h
}

// holdTheBound starts a call that has sent all but the end of a body of
// MinCallWeight bytes (minimalSync after leading spaces), so it holds the whole
// bound while the rest is awaited; it returns once the handler has counted those
// bytes, with the writer of the rest and the call's answer.
func holdTheBound(t *testing.T, h http.Handler) (*io.PipeWriter, <-chan *httptest.ResponseRecorder) {
	t.Helper()
	body, send := io.Pipe()
	held := httptest.NewRequest(http.MethodPost, "/budget/sync", body)
	held.ContentLength = -1
	held.Header.Set("Content-Type", "application/json")
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, held)
		done <- w
	}()
	pad := strings.Repeat(" ", metacontroller.MinCallWeight-len(minimalSync))
	_, err := io.WriteString(send, pad)
	require.NoError(t, err)
	// The handler reads again only after it has counted what it read before.
	_, err = io.WriteString(send, minimalSync[:1])
	require.NoError(t, err)
	t.Cleanup(func() { send.Close() })
	return send, done
}

func TestCallsPastTheInFlightBoundAre429WithRetryAfter(t *testing.T) {
	var calls []metacontroller.Call
	h := tightHandler(t, func(c metacontroller.Call) { calls = append(calls, c) })
	send, heldDone := holdTheBound(t, h)

	busy := do(h, http.MethodPost, "/budget/sync", "application/json", minimalSync)
	assert.Equal(t, http.StatusTooManyRequests, busy.Code)
	assert.Equal(t, "1", busy.Header().Get("Retry-After"))
	assert.Equal(t, "busy: more than 65536 request bytes in flight; retry after 1 s\n", busy.Body.String())
	assert.Equal(t, http.StatusOK, do(h, http.MethodGet, "/healthz", "", "").Code, "probes are never refused")

	_, err := io.WriteString(send, minimalSync[1:])
	require.NoError(t, err)
	require.NoError(t, send.Close())
	assert.Equal(t, http.StatusOK, (<-heldDone).Code)

	after := do(h, http.MethodPost, "/budget/sync", "application/json", minimalSync)
	assert.Equal(t, http.StatusOK, after.Code, "the bound is released when a call is answered")
	var statuses []int
	for _, c := range calls {
		statuses = append(statuses, c.Status)
	}
	assert.Equal(t, []int{429, 200, 200}, statuses)
}

func TestTheInFlightBoundMustAdmitTheLargestBody(t *testing.T) {
	_, err := controller.NewRouter(metacontroller.Config{
		Now: time.Now, Logger: slog.Default(), MaxBodyBytes: 2 << 20, MaxInFlightBytes: 1 << 20,
	})
	assert.EqualError(t, err, "metacontroller: Config.MaxInFlightBytes (1048576) must be at least MaxBodyBytes (2097152)")
}

func TestARefusedCallsBodyIsReadSoTheCallerSeesThe429(t *testing.T) {
	h := tightHandler(t, nil)
	holdTheBound(t, h)

	refused := strings.NewReader(minimalSync)
	r := httptest.NewRequest(http.MethodPost, "/budget/sync", refused)
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Zero(t, refused.Len(), "the refused body was read to its end")
}

// trickle opens a connection to addr and sends a sync's headers, head bytes of its body at
// once and then one byte at a time, every interval, until the test ends: chunked, or
// declaring length bytes. It returns once the headers and the first bytes are sent.
func trickle(t *testing.T, addr string, length, head int, interval time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	framing := "Transfer-Encoding: chunked\r\n"
	send := func(n int) string { return fmt.Sprintf("%x\r\n%s\r\n", n, strings.Repeat(" ", n)) }
	if length > 0 {
		framing = fmt.Sprintf("Content-Length: %d\r\n", length)
		send = func(n int) string { return strings.Repeat(" ", n) }
	}
	next := func() string { return send(1) }
	_, err = io.WriteString(conn, "POST /budget/sync HTTP/1.1\r\nHost: llmbudget\r\nContent-Type: application/json\r\n"+
		framing+"\r\n"+send(max(head, 1)))
	require.NoError(t, err)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := io.WriteString(conn, next()); err != nil {
					return
				}
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		conn.Close()
	})
}

// A body counts only the bytes that have arrived, from the first byte on and past 64 KiB,
// declared or chunked: callers that trickle their bodies leave the bound to everyone else.
// They used to be charged their whole declared length once they had sent 64 KiB (four
// refused every real sync), and a chunked body the fourfold room it was read into (four
// callers of 1.1 MB held 16 MiB).
func TestCallersTricklingTheirBodiesDoNotStarveRealSyncs(t *testing.T) {
	cases := []struct {
		name      string
		trickling int
		length    func(i int) int // declared length; 0: chunked
		head      int             // bytes sent at once before the trickle
	}{
		{"ten callers trickling from their first byte", 10, func(i int) int {
			return (1 - i%2) * metacontroller.DefaultMaxBodyBytes
		}, 1},
		{"four callers declaring 4 MiB and trickling after 64 KiB", 4, func(int) int {
			return metacontroller.DefaultMaxBodyBytes
		}, metacontroller.MinCallWeight + 1},
		{"four chunked callers trickling after 1.1 MB", 4, func(int) int { return 0 }, 1_100_000},
		{"four callers declaring 4 MiB and trickling after 1.1 MB", 4, func(int) int {
			return metacontroller.DefaultMaxBodyBytes
		}, 1_100_000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			syncBesideTricklingCallers(t, tc.trickling, tc.length, tc.head)
		})
	}
}

func syncBesideTricklingCallers(t *testing.T, trickling int, length func(int) int, head int) {
	h, err := controller.NewRouter(metacontroller.Config{
		Now: func() time.Time { return fixed }, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(h)
	active := make(chan struct{}, 64)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateActive {
			active <- struct{}{}
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	for i := range trickling {
		trickle(t, srv.Listener.Addr().String(), length(i), head, 20*time.Millisecond)
	}
	for range trickling {
		select {
		case <-active:
		case <-time.After(5 * time.Second):
			require.FailNow(t, "the trickling callers did not reach the server")
		}
	}
	// Long enough for every trickling call to reach its handler and read what it sent at once.
	time.Sleep(300 * time.Millisecond)

	client := srv.Client()
	for i := range 20 {
		start := time.Now()
		resp, err := client.Post(srv.URL+"/budget/sync", "application/json", strings.NewReader(minimalSync))
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		took := time.Since(start)
		assert.Equal(t, http.StatusOK, resp.StatusCode, "sync %d beside %d trickling callers", i, trickling)
		assert.Less(t, took, 100*time.Millisecond, "sync %d answered in %s", i, took)
	}
}
