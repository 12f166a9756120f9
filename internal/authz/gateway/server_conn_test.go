package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/authz"
)

func TestAnUntrustedPeerIsAnsweredAndItsConnectionClosed(t *testing.T) {
	srv := httptest.NewServer(handler(t, authz.AdmitUnknown, current)) // on loopback, which is no gateway
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = io.WriteString(conn, "GET /v1/chat/completions HTTP/1.1\r\nHost: authz\r\n\r\n")
	require.NoError(t, err)
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.True(t, resp.Close, "the answer says Connection: close")
	_, err = r.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "and the server closes the connection, so the peer holds no slot")
}
