package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/httpapi"
)

// tightHandler admits one call at a time, of at most MinCallWeight bytes.
func tightHandler(t *testing.T, observe func(httpapi.HookCall)) http.Handler {
	t.Helper()
	h, err := httpapi.New(httpapi.Config{
		Now:              func() time.Time { return fixed },
		Logger:           slog.New(slog.DiscardHandler),
		MaxBodyBytes:     httpapi.MinCallWeight,
		MaxInFlightBytes: httpapi.MinCallWeight,
		Observe:          observe,
	})
	require.NoError(t, err)
	return h
}

// holdTheBound starts a call whose chunked body declares no length, so it
// holds the whole bound while its body is read; it returns once the handler
// reads the first bytes, with the writer of the rest and the call's answer.
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
	_, err := io.WriteString(send, minimalSync[:10])
	require.NoError(t, err)
	t.Cleanup(func() { send.Close() })
	return send, done
}

func TestCallsPastTheInFlightBoundAre429WithRetryAfter(t *testing.T) {
	var calls []httpapi.HookCall
	h := tightHandler(t, func(c httpapi.HookCall) { calls = append(calls, c) })
	send, heldDone := holdTheBound(t, h)

	busy := do(h, http.MethodPost, "/budget/sync", "application/json", minimalSync)
	assert.Equal(t, http.StatusTooManyRequests, busy.Code)
	assert.Equal(t, "1", busy.Header().Get("Retry-After"))
	assert.Equal(t, "busy: more than 65536 request bytes in flight; retry after 1 s\n", busy.Body.String())
	assert.Equal(t, http.StatusOK, do(h, http.MethodGet, "/healthz", "", "").Code, "probes are never refused")

	_, err := io.WriteString(send, minimalSync[10:])
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
	_, err := httpapi.New(httpapi.Config{
		Now: time.Now, Logger: slog.Default(), MaxBodyBytes: 2 << 20, MaxInFlightBytes: 1 << 20,
	})
	assert.EqualError(t, err, "httpapi: Config.MaxInFlightBytes (1048576) must be at least MaxBodyBytes (2097152)")
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
