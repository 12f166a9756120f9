package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/server"
)

// rawSync writes a budget sync, kept alive, on conn and reads its answer's status.
func rawSync(t *testing.T, conn net.Conn, r *bufio.Reader) int {
	t.Helper()
	_, err := fmt.Fprintf(conn, "POST /budget/sync HTTP/1.1\r\nHost: llmbudget\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\n\r\n%s", len(syncBody), syncBody)
	require.NoError(t, err)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

func TestAHeaderLargerThanMetacontrollerSendsIsAnswered431(t *testing.T) {
	addrs := startServer(t, serveOptions{})
	cases := map[string]struct {
		header string
		status int
	}{
		"the headers Metacontroller sends, with a long token": {
			"Accept-Encoding: gzip\r\nUser-Agent: Go-http-client/1.1\r\nAuthorization: Bearer " +
				strings.Repeat("t", 2048) + "\r\n", http.StatusOK,
		},
		"a header of 1 MB": {"X-Pad: " + strings.Repeat("x", 1<<20) + "\r\n", http.StatusRequestHeaderFieldsTooLarge},
		"many short headers past the bound": {
			strings.Repeat("X-Pad: "+strings.Repeat("x", 100)+"\r\n", 2*server.MaxHeaderBytes/100),
			http.StatusRequestHeaderFieldsTooLarge,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addrs.hooks)
			require.NoError(t, err)
			defer conn.Close()
			go func() {
				// The server answers, and stops reading, once the bound is passed: the rest may not be sent.
				_, _ = fmt.Fprintf(conn, "POST /budget/sync HTTP/1.1\r\nHost: llmbudget\r\n"+
					"Content-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s", tc.header, len(syncBody), syncBody)
			}()
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode)
		})
	}
}

// Past --max-connections, the connection idle the longest is closed for a new one; while none is idle (all are
// being read or answered), new connections wait in the kernel's backlog and are served as soon as one closes.
func TestConnectionsPastTheCapCloseTheLongestIdleOrWait(t *testing.T) {
	for _, kind := range []string{"idle keep-alive connections", "unfinished headers"} {
		t.Run(kind, func(t *testing.T) {
			const limit = 4
			addrs := startServer(t, serveOptions{maxConns: limit, maxConnsPerPeer: limit}) // one peer holds all
			var held []net.Conn
			for range limit {
				conn, err := net.Dial("tcp", addrs.hooks)
				require.NoError(t, err)
				t.Cleanup(func() { conn.Close() })
				if kind == "unfinished headers" {
					_, err = io.WriteString(conn, "POST /budget/sync HTTP/1.1\r\nHost: llm")
					require.NoError(t, err)
				} else {
					require.Equal(t, http.StatusOK, rawSync(t, conn, bufio.NewReader(conn)))
				}
				held = append(held, conn)
				time.Sleep(20 * time.Millisecond) // the server marks each idle in turn
			}
			waiting, err := net.Dial("tcp", addrs.hooks)
			require.NoError(t, err)
			defer waiting.Close()
			answered := make(chan int, 1)
			go func() {
				r := bufio.NewReader(waiting)
				_, _ = fmt.Fprintf(waiting, "POST /budget/sync HTTP/1.1\r\nHost: llmbudget\r\n"+
					"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(syncBody), syncBody)
				resp, err := http.ReadResponse(r, nil)
				if err != nil {
					answered <- 0
					return
				}
				resp.Body.Close()
				answered <- resp.StatusCode
			}()
			if kind == "idle keep-alive connections" {
				select {
				case code := <-answered:
					assert.Equal(t, http.StatusOK, code)
				case <-time.After(server.ReadHeaderTimeout):
					require.FailNow(t, "the new connection was not served")
				}
				require.NoError(t, held[0].SetReadDeadline(time.Now().Add(5*time.Second)))
				_, err := held[0].Read(make([]byte, 1))
				assert.ErrorIs(t, err, io.EOF, "the connection idle the longest was closed for it")
				return
			}
			select {
			case code := <-answered:
				require.FailNow(t, "a connection past the cap was served", "status %d", code)
			case <-time.After(300 * time.Millisecond): // how long it is seen waiting, not a deadline
			}
			require.NoError(t, held[0].Close())
			select {
			case code := <-answered:
				assert.Equal(t, http.StatusOK, code)
			case <-time.After(server.ReadHeaderTimeout):
				require.FailNow(t, "the waiting connection was not served once one closed")
			}
		})
	}
}

func TestAnUnfinishedHeaderIsCutOffAfterTheHeaderTimeout(t *testing.T) {
	addrs := startServer(t, serveOptions{})
	conn, err := net.Dial("tcp", addrs.hooks)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /budget/sync HTTP/1.1\r\nHost: llm")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(server.ReadHeaderTimeout+10*time.Second)))
	_, err = io.ReadAll(conn)
	var timeout net.Error
	assert.False(t, errors.As(err, &timeout) && timeout.Timeout(), "the server closed the connection: %v", err)
}

func TestServeRefusesFewerThanOneConnection(t *testing.T) {
	for _, n := range []string{"0", "-1"} {
		_, err := parseServe([]string{"--max-connections", n})
		var usage *usageError
		require.ErrorAs(t, err, &usage)
		assert.EqualError(t, err, "--max-connections must be at least 1, got "+n)
	}
}
