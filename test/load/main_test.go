package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

const capture = "../fixtures/budget/sync/capture-over-budget-with-children.request.json"

func TestPercentilesAreExactNearestRank(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 1000; i++ {
		lat = append(lat, time.Duration(i)*time.Microsecond)
	}
	assert.Equal(t, 500*time.Microsecond, percentile(lat, 50))
	assert.Equal(t, 990*time.Microsecond, percentile(lat, 99))
	assert.Equal(t, 1000*time.Microsecond, last(lat))
	assert.Equal(t, time.Duration(0), percentile(nil, 99))
	assert.Equal(t, 7*time.Millisecond, percentile([]time.Duration{7 * time.Millisecond}, 99))
}

func TestBodiesAreDistinctBudgetsTheServiceAnswers(t *testing.T) {
	bodies, err := buildBodies(capture, 300)
	require.NoError(t, err)
	require.Len(t, bodies, 300)
	h, err := controller.NewRouter(metacontroller.Config{Now: time.Now,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	require.NoError(t, err)
	names := map[string]bool{}
	states := map[string]bool{}
	for _, b := range bodies {
		var req struct {
			Parent struct {
				Metadata struct{ Name, Namespace string }
			}
			Related map[string]map[string]json.RawMessage
		}
		require.NoError(t, json.Unmarshal(b, &req))
		md := req.Parent.Metadata
		names[md.Namespace+"/"+md.Name] = true
		require.Contains(t, req.Related["ConfigMap.v1"], md.Namespace+"/llm-spend",
			"the spend ConfigMap follows the budget's namespace")

		r := httptest.NewRequest(http.MethodPost, "/budget/sync", bytes.NewReader(b))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var resp struct{ Status struct{ State string } }
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
		states[resp.Status.State] = true
	}
	assert.Len(t, names, 300, "every body is a different budget")
	assert.ElementsMatch(t, []string{"UnderBudget", "Warning", "OverBudget"}, keys(states),
		"spends range over every state")
}

func TestOnlyLoopbackAddressesAreLoaded(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080"} {
		assert.NoError(t, checkLoopback(ok), ok)
	}
	for _, bad := range []string{"10.0.0.1:8080", "example.com:80", "0.0.0.0:8080", "127.0.0.1"} {
		assert.Error(t, checkLoopback(bad), bad)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	h := histogram{
		time.Millisecond:         90,
		2 * time.Millisecond:     99,
		5 * time.Millisecond:     100,
		time.Duration(1<<63 - 1): 100,
		250 * time.Microsecond:   10,
	}
	assert.Equal(t, 2*time.Millisecond, h.quantile(0.99))
	assert.Equal(t, time.Millisecond, h.quantile(0.5))
	assert.InDelta(t, 0.9, h.share(time.Millisecond), 1e-9)
	assert.Equal(t, time.Duration(0), histogram(nil).quantile(0.99))
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
