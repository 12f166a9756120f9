package controller_test

import (
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

func scrape(t *testing.T, m *controller.Metrics) string {
	t.Helper()
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	require.Equal(t, 200, w.Code)
	b, err := io.ReadAll(w.Body)
	require.NoError(t, err)
	return string(b)
}

func TestHookCallsAreCountedByHookCodeAndOutcome(t *testing.T) {
	m := controller.NewMetrics("v1.2.3")
	m.ObserveHook(metacontroller.Call{
		Hook: "budget/sync", Status: 200, Duration: 3 * time.Millisecond, State: "OverBudget", Reason: "Evaluated",
	})
	m.ObserveHook(metacontroller.Call{
		Hook: "budget/sync", Status: 200, Duration: time.Millisecond, State: "Unknown", Reason: "CostKeyMissing",
	})
	m.ObserveHook(metacontroller.Call{
		Hook: "workload/sync", Status: 200, Duration: time.Millisecond, State: "OverBudget", Reason: "",
	})
	m.ObserveHook(metacontroller.Call{
		Hook: "budget/sync", Status: 400, Duration: time.Millisecond, State: "", Reason: "malformed JSON",
	})
	text := scrape(t, m)
	assert.Contains(t, text, `llmbudget_hook_requests_total{code="200",hook="budget/sync"} 2`)
	assert.Contains(t, text, `llmbudget_hook_requests_total{code="400",hook="budget/sync"} 1`)
	assert.Contains(t, text, `llmbudget_hook_requests_total{code="200",hook="workload/sync"} 1`)
	assert.Contains(t, text, `llmbudget_evaluations_total{reason="Evaluated",state="OverBudget"} 1`)
	assert.Contains(t, text, `llmbudget_evaluations_total{reason="CostKeyMissing",state="Unknown"} 1`)
	assert.NotContains(t, text, `reason="malformed JSON"`, "refusals are not evaluations")
	assert.Contains(t, text, `llmbudget_hook_duration_seconds_bucket{hook="budget/sync",le="0.0025"} 2`)
	assert.Contains(t, text, `llmbudget_build_info{goversion="go`)
	assert.Contains(t, text, `version="v1.2.3"} 1`)
	assert.Contains(t, text, "go_goroutines")
}

func TestCallsRefusedForLoadAreCountedApartFromLatency(t *testing.T) {
	m := controller.NewMetrics("v1.2.3")
	m.ObserveHook(metacontroller.Call{Hook: "budget/sync", Status: 429, Duration: time.Second, State: "", Reason: "busy"})
	m.ObserveHook(metacontroller.Call{Hook: "budget/sync", Status: 429, Duration: time.Second, State: "", Reason: "busy"})
	m.ObserveHook(metacontroller.Call{
		Hook: "budget/sync", Status: 200, Duration: time.Millisecond, State: "UnderBudget", Reason: "Evaluated",
	})
	text := scrape(t, m)
	assert.Contains(t, text, `llmbudget_hook_rejected_total{hook="budget/sync"} 2`)
	assert.Contains(t, text, `llmbudget_hook_requests_total{code="429",hook="budget/sync"} 2`)
	assert.Contains(t, text, `llmbudget_hook_duration_seconds_count{hook="budget/sync"} 1`)
}
