package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConnectionBoundsThatCannotWorkAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "authz.yaml")
	require.NoError(t, os.WriteFile(config, []byte("gateways: [{name: g, addresses: [10.0.0.0/8], mode: source}]\n"),
		0o600))
	tests := map[string]struct {
		args []string
		want string
	}{
		"serve: no connection per peer": {[]string{"serve", "--max-connections-per-peer", "0"},
			"--max-connections-per-peer 0: must be from 1 to --max-connections (512)"},
		"serve: more per peer than in all": {[]string{"serve", "--max-connections", "8",
			"--max-connections-per-peer", "9"}, "--max-connections-per-peer 9: must be from 1 to --max-connections (8)"},
		"authz: more per peer than in all": {[]string{"authz", "--config", config, "--max-connections-per-peer",
			"2000"}, "--max-connections-per-peer 2000: must be from 1 to --max-connections (1024)"},
		"authz: no untrusted connection": {[]string{"authz", "--config", config, "--max-untrusted-connections", "0"},
			"--max-untrusted-connections 0: must be from 1 to --max-connections (1024)"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runProgram(tt.args, "")
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr, tt.want)
		})
	}
}

func TestConnectionBoundsNotGivenAreAtMostAQuarterOfMaxConnections(t *testing.T) {
	config := filepath.Join(t.TempDir(), "authz.yaml")
	tests := map[string]struct {
		args               []string
		perPeer, untrusted int
	}{
		"serve's defaults":       {[]string{}, 128, 0},
		"serve with a small cap": {[]string{"--max-connections", "40"}, 10, 0},
		"serve with a bound given": {[]string{"--max-connections", "40", "--max-connections-per-peer", "30"},
			30, 0},
		"authz's defaults":                     {[]string{"--config", config}, 256, 16},
		"authz with a small cap":               {[]string{"--config", config, "--max-connections", "40"}, 10, 10},
		"authz with a cap of one":              {[]string{"--config", config, "--max-connections", "1"}, 1, 1},
		"authz with the untrusted bound given": {[]string{"--config", config, "--max-untrusted-connections", "2"}, 256, 2},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if tt.untrusted == 0 {
				o, err := parseServe(tt.args)
				require.NoError(t, err)
				assert.Equal(t, tt.perPeer, o.maxConnsPerPeer)
				return
			}
			o, err := parseAuthz(tt.args)
			require.NoError(t, err)
			assert.Equal(t, tt.perPeer, o.maxConnsPerPeer)
			assert.Equal(t, tt.untrusted, o.maxUntrustedConns)
		})
	}
}

// A peer holding its --max-connections-per-peer, all busy, gets no more; another peer, Metacontroller, is served.
func TestOnePeerCannotHoldTheSlotsAnotherNeeds(t *testing.T) {
	addrs := startServer(t, serveOptions{maxConns: 8, maxConnsPerPeer: 2})
	from := func(ip string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 2 * time.Second}
		conn, err := d.Dial("tcp", addrs.hooks)
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	for range 2 {
		_, err := io.WriteString(from("127.0.0.2"), "POST /budget/sync HTTP/1.1\r\nHost: llm")
		require.NoError(t, err)
	}
	time.Sleep(50 * time.Millisecond) // both are being read
	past := from("127.0.0.2")
	require.NoError(t, past.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := past.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "a third connection of the peer is closed as it comes")
	mc := from("127.0.0.1")
	require.NoError(t, mc.SetDeadline(time.Now().Add(5*time.Second)))
	assert.Equal(t, http.StatusOK, rawSync(t, mc, bufio.NewReader(mc)))
}
