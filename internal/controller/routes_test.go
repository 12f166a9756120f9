package controller_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
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

var fixed = time.Date(2026, 11, 29, 7, 30, 0, 0, time.UTC)

func newHandler(t testing.TB, logs io.Writer, maxBody int64) http.Handler {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	h, err := controller.NewRouter(metacontroller.Config{
		Now:          func() time.Time { return fixed },
		Logger:       slog.New(slog.NewJSONHandler(logs, nil)),
		MaxBodyBytes: maxBody,
	})
	require.NoError(t, err)
	return h
}

func do(h http.Handler, method, path, contentType, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const minimalSync = `{"parent":{"apiVersion":"llmbudget.dev/v1alpha1","kind":"LLMCostBudget",` +
	`"metadata":{"name":"b","namespace":"ns","generation":1},` +
	`"spec":{"limitUSD":"10","costSource":{"configMapName":"cm","key":"k"}}},` +
	`"children":{},"related":{"ConfigMap.v1":{"ns/cm":{"metadata":{"labels":{"llmbudget.dev/spend-source":"cm"}},` +
	`"data":{"k":"2.50"}}}},"finalizing":false}`

func TestMalformedRequestsAreRefusedWithOneLineReasons(t *testing.T) {
	cases := map[string]struct {
		path, contentType, body string
		status                  int
		reason                  string
	}{
		"a form body is not JSON": {"/budget/sync", "application/x-www-form-urlencoded", "a=b", 415,
			"Content-Type must be application/json, got application/x-www-form-urlencoded"},
		"a missing content type": {"/budget/sync", "", minimalSync, 415,
			"Content-Type must be application/json, got none"},
		"an empty body": {"/budget/sync", "application/json", "", 400,
			"request body is empty"},
		"truncated JSON": {"/budget/sync", "application/json", `{"parent": {`, 400,
			"request: malformed JSON at byte 12: unexpected end of JSON input"},
		"JSON with a syntax error": {"/budget/sync", "application/json", `{"parent": x}`, 400,
			"request: malformed JSON at byte 12: invalid character 'x' looking for beginning of value"},
		"a request without a parent": {"/budget/sync", "application/json", `{"children":{}}`, 400,
			"request has no parent"},
		"a parent without a name": {"/budget/sync", "application/json", `{"parent":{"metadata":{}}}`, 400,
			"parent.metadata.name is missing"},
		"finalizing of the wrong type": {"/budget/sync", "application/json", `{"parent":{},"finalizing":"yes"}`, 400,
			`request.finalizing: Invalid value: "string": must be of type boolean`},
		"a workload that is not an object": {"/workload/sync", "application/json", `{"object":5}`, 400,
			`object: Invalid value: "number": must be of type object`},
		"workload labels that are not an object": {"/workload/sync", "application/json",
			`{"object":{"metadata":{"name":"w","labels":"x"}}}`, 400,
			`object.metadata.labels: Invalid value: "string": must be of type object`},
		"a parent that is not an object": {"/budget/sync", "application/json", `{"parent":[]}`, 400,
			`parent: Invalid value: "array": must be of type object`},
		"a customize request without a parent": {"/budget/customize", "application/json", `{}`, 400,
			"request has no parent"},
		"a decorator request without an object": {"/workload/sync", "application/json", `{"attachments":{}}`, 400,
			"request has no object"},
	}
	h := newHandler(t, nil, 0)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := do(h, http.MethodPost, tc.path, tc.contentType, tc.body)
			assert.Equal(t, tc.status, w.Code)
			assert.Equal(t, tc.reason+"\n", w.Body.String())
			assert.Equal(t, 1, strings.Count(w.Body.String(), "\n"), "one line")
		})
	}
}

func TestBodiesOverTheLimitAre413(t *testing.T) {
	h := newHandler(t, nil, 64)
	w := do(h, http.MethodPost, "/budget/sync", "application/json", minimalSync)
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	assert.Equal(t, "request body of 350 bytes exceeds the limit of 64 bytes\n", w.Body.String())

	// A chunked body has no Content-Length: the reader's limit catches it.
	r := httptest.NewRequest(http.MethodPost, "/budget/sync", io.MultiReader(strings.NewReader(minimalSync)))
	r.ContentLength = -1
	r.Header.Set("Content-Type", "application/json")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	assert.Equal(t, "request body exceeds the limit of 64 bytes\n", w.Body.String())
}

func TestABadBudgetIsAnswered200WithStateUnknown(t *testing.T) {
	h := newHandler(t, nil, 0)
	body := strings.Replace(minimalSync, `"limitUSD":"10"`, `"limitUSD":"ten dollars"`, 1)
	w := do(h, http.MethodPost, "/budget/sync", "application/json; charset=utf-8", body)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var resp struct {
		Status struct {
			State      string `json:"state"`
			Conditions []struct{ Type, Reason, Message string }
		} `json:"status"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
	assert.Equal(t, "Unknown", resp.Status.State)
	assert.Equal(t, "InvalidSpec", resp.Status.Conditions[0].Reason)
	assert.Contains(t, resp.Status.Conditions[0].Message,
		`spec.limitUSD: Invalid value: "ten dollars": must be a decimal greater than 0 with at most 6 decimals`)
}

func TestEachHookCallLogsOneLine(t *testing.T) {
	var logs bytes.Buffer
	h := newHandler(t, &logs, 0)
	w := do(h, http.MethodPost, "/budget/sync", "application/json", minimalSync)
	require.Equal(t, http.StatusOK, w.Code)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 1)
	var entry map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &entry))
	assert.Equal(t, "budget/sync", entry["hook"])
	assert.Equal(t, "ns/b", entry["budget"])
	assert.Equal(t, "UnderBudget", entry["state"])
	assert.Equal(t, float64(200), entry["status"])
	assert.NotContains(t, entry, "duration", "nanoseconds as an integer read as nonsense in log tools")
	require.Contains(t, entry, "duration_ms")
	ms, isNumber := entry["duration_ms"].(float64)
	require.True(t, isNumber, "duration_ms is a JSON number: %v", entry["duration_ms"])
	assert.GreaterOrEqual(t, ms, 0.0)
}

func TestHealthAndReadiness(t *testing.T) {
	h := newHandler(t, nil, 0)
	assert.Equal(t, http.StatusOK, do(h, http.MethodGet, "/healthz", "", "").Code)
	assert.Equal(t, http.StatusOK, do(h, http.MethodGet, "/readyz", "", "").Code)
	assert.Equal(t, http.StatusMethodNotAllowed, do(h, http.MethodGet, "/budget/sync", "", "").Code)
	assert.Equal(t, http.StatusNotFound, do(h, http.MethodPost, "/nope", "application/json", "{}").Code)

	notReady, err := controller.NewRouter(metacontroller.Config{
		Now: time.Now, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Ready: func() bool { return false },
	})
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, do(notReady, http.MethodGet, "/readyz", "", "").Code)
}

func TestConfigIsValidatedFirst(t *testing.T) {
	_, err := controller.NewRouter(metacontroller.Config{Logger: slog.Default()})
	assert.EqualError(t, err, "metacontroller: Config.Now is required")
	_, err = controller.NewRouter(metacontroller.Config{Now: time.Now})
	assert.EqualError(t, err, "metacontroller: Config.Logger is required")
	_, err = controller.NewRouter(metacontroller.Config{Now: time.Now, Logger: slog.Default(), MaxBodyBytes: -1})
	assert.EqualError(t, err, "metacontroller: Config.MaxBodyBytes must not be negative, got -1")
}
