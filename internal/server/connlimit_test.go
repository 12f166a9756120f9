package server_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/server"
)

const (
	peerA = "127.0.0.1"
	peerB = "127.0.0.2"
)

// serve serves "ok" within cfg's bounds on loopback and returns its address and listener.
func serve(t *testing.T, cfg server.ConnLimits) (string, *server.LimitedListener) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := server.LimitConns(raw, cfg)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, ConnState: ln.ConnState,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return raw.Addr().String(), ln
}

func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ask sends one request on c, kept alive, and reads its answer.
func ask(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "ok", string(body))
	require.NoError(t, c.SetDeadline(time.Time{}))
}

// begin sends half a request: the connection is active, its request being read.
func begin(t *testing.T, c net.Conn) {
	t.Helper()
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\n")
	require.NoError(t, err)
}

// closedByServer is whether the server closed c, within a second.
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	timedOut := errors.As(err, &ne) && ne.Timeout()
	return err != nil && !timedOut
}

func TestAnIdleConnectionIsClosedToMakeRoomPastMax(t *testing.T) {
	addr, ln := serve(t, server.ConnLimits{Max: 2})
	first, second := dialFrom(t, peerA, addr), dialFrom(t, peerA, addr)
	ask(t, first)
	time.Sleep(50 * time.Millisecond) // the server marks a connection idle just after its answer
	ask(t, second)
	time.Sleep(50 * time.Millisecond)
	third := dialFrom(t, peerB, addr)
	ask(t, third)
	assert.True(t, closedByServer(first), "the connection idle the longest is closed")
	assert.EqualValues(t, 1, ln.Evicted())
	ask(t, second)
}

func TestOnePeerHoldsAtMostPerPeerConnectionsAndOthersKeepTheirs(t *testing.T) {
	addr, ln := serve(t, server.ConnLimits{Max: 4, PerPeer: 2})
	for range 2 {
		begin(t, dialFrom(t, peerA, addr))
	}
	time.Sleep(50 * time.Millisecond) // both are being read
	past := dialFrom(t, peerA, addr)
	assert.True(t, closedByServer(past), "a third active connection of one peer is refused")
	assert.EqualValues(t, 1, ln.Refused())
	ask(t, dialFrom(t, peerB, addr))
}

func TestAPeerPastPerPeerClosesItsOwnIdleConnectionFirst(t *testing.T) {
	addr, ln := serve(t, server.ConnLimits{Max: 4, PerPeer: 2})
	idle, busy := dialFrom(t, peerA, addr), dialFrom(t, peerA, addr)
	ask(t, idle)
	begin(t, busy)
	time.Sleep(50 * time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	ask(t, dialFrom(t, peerA, addr))
	assert.True(t, closedByServer(idle))
	assert.Zero(t, ln.Refused())
}

func TestUntrustedPeersTogetherHoldAtMostUntrusted(t *testing.T) {
	trusted := func(a netip.Addr) bool { return a == netip.MustParseAddr(peerA) }
	addr, ln := serve(t, server.ConnLimits{Max: 8, Trusted: trusted, Untrusted: 1})
	begin(t, dialFrom(t, peerB, addr))
	time.Sleep(50 * time.Millisecond)
	assert.True(t, closedByServer(dialFrom(t, peerB, addr)), "a second untrusted connection is refused")
	assert.True(t, closedByServer(dialFrom(t, "127.0.0.3", addr)), "whichever address it comes from")
	assert.EqualValues(t, 2, ln.Refused())
	for range 3 {
		ask(t, dialFrom(t, peerA, addr))
	}
}

func TestPastMaxWithNoneIdleAConnectionWaitsForASlot(t *testing.T) {
	addr, ln := serve(t, server.ConnLimits{Max: 1})
	busy := dialFrom(t, peerA, addr)
	begin(t, busy)
	time.Sleep(50 * time.Millisecond)
	waiting := dialFrom(t, peerB, addr)
	_, err := io.WriteString(waiting, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	_, err = io.WriteString(busy, "Host: x\r\n\r\n") // busy's request completes, then its connection is idle
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(waiting), nil)
	require.NoError(t, err, "the waiting connection is served once the other is idle")
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Zero(t, ln.Refused())
}
