package gateway_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/authz/gateway"
)

var now = time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)

const sentence = "LLMCostBudget team-ml/chatbot is OverBudget (spend 612.00 of 500.00 USD this Daily period, " +
	"ends 2026-11-30T00:00:00Z)"

func store() *authz.Store {
	s := authz.NewStore()
	s.SetNamespace(authz.Namespace{Name: "team-ml"})
	s.SetNamespace(authz.Namespace{Name: "team-support"})
	s.SetBudget(authz.Budget{Kind: api.Kind, Namespace: "team-ml", Name: "chatbot", State: api.OverBudget,
		RemainingUSD: "0.00", PeriodEnd: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		Enforcement: api.EnforcementStatus{Blocking: true, Scope: api.ScopeNamespace, Message: sentence}})
	s.SetBudget(authz.Budget{Kind: api.Kind, Namespace: "team-support", Name: "desk", State: api.Warning,
		RemainingUSD: "12.50", Enforcement: api.EnforcementStatus{Reason: "admitted"}})
	s.SetPod(authz.Pod{Namespace: "team-ml", Name: "chatbot-0"}, []netip.Addr{netip.MustParseAddr("10.1.0.2")})
	s.SetPod(authz.Pod{Namespace: "team-support", Name: "desk-0"}, []netip.Addr{netip.MustParseAddr("10.1.0.3")})
	return s
}

func handler(t testing.TB, unknown authz.UnknownCaller, cache authz.Cache) http.Handler {
	t.Helper()
	h, _ := handlerAndMetrics(t, unknown, cache)
	return h
}

func handlerAndMetrics(t testing.TB, unknown authz.UnknownCaller, cache authz.Cache) (
	http.Handler, *gateway.Metrics) {
	t.Helper()
	r, err := gateway.NewResolver([]gateway.Gateway{
		{Name: "caddy", Addresses: []string{"192.0.2.0/24"}, Mode: gateway.ModeSource},
		{Name: "litellm", Addresses: []string{"198.51.100.7/32"}, Mode: gateway.ModeHeader, Header: "x-team"},
		{Name: "istio", Addresses: []string{"203.0.113.0/24"}, Mode: gateway.ModeSPIFFE},
	})
	require.NoError(t, err)
	s := store()
	cacheOf := func() authz.Cache { return cache }
	m := gateway.NewMetrics("test", gateway.CacheGauges{Cache: cacheOf, Counts: s.Counts})
	h, err := gateway.NewHandler(gateway.HandlerConfig{Resolver: r, View: s, Cache: cacheOf, UnknownCaller: unknown,
		Now: func() time.Time { return now }, Metrics: m, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return h, m
}

var current = authz.Cache{Synced: true, Age: time.Second, MaxAge: 30 * time.Second}

func call(h http.Handler, method, path, peer string, kv ...string) *http.Response {
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = peer
	for i := 0; i < len(kv); i += 2 {
		req.Header.Add(kv[i], kv[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func TestTheServerAnswersAsGatewaysExpect(t *testing.T) {
	tests := map[string]struct {
		method, path, peer string
		headers            []string
		status             int
		want               map[string]string
		body               string
	}{
		"a refused caller gets 429, Retry-After and the OpenAI error": {
			method: http.MethodPost, path: "/v1/chat/completions", peer: "192.0.2.9:41000",
			headers: []string{"X-Forwarded-For", "10.1.0.2"}, status: http.StatusTooManyRequests,
			want: map[string]string{"Retry-After": "3600", gateway.HeaderBudget: "LLMCostBudget team-ml/chatbot",
				gateway.HeaderState: "OverBudget", gateway.HeaderRemaining: "0.00",
				"Content-Type": "application/json"},
			body: `{"error":{"message":"` + sentence + `","type":"insufficient_quota","code":"budget_exceeded"}}`,
		},
		"an allowed caller gets 200 and its budget's figures, whatever the method and path": {
			method: http.MethodGet, path: "/auth", peer: "192.0.2.9:41000",
			headers: []string{"X-Forwarded-For", "10.1.0.3", "X-Forwarded-Method", "POST",
				"X-Forwarded-Uri", "/v1/chat/completions"},
			status: http.StatusOK,
			want: map[string]string{gateway.HeaderBudget: "LLMCostBudget team-support/desk",
				gateway.HeaderState: "Warning", gateway.HeaderRemaining: "12.50"},
		},
		"a client's own X-Forwarded-For before the gateway's hop changes nothing": {
			method: http.MethodPost, path: "/v1/completions", peer: "192.0.2.9:41000",
			headers: []string{"X-Forwarded-For", "10.1.0.3, 10.1.0.2"}, status: http.StatusTooManyRequests,
			want: map[string]string{"Retry-After": "3600"},
		},
		"a peer that is no gateway is refused whatever it says": {
			method: http.MethodPost, path: "/", peer: "10.1.0.3:5000",
			headers: []string{"X-Forwarded-For", "10.1.0.3"}, status: http.StatusForbidden,
			body: `{"error":{"message":"llmbudget answers configured gateways only","type":"permission_error",` +
				`"code":"untrusted_peer"}}`,
		},
		"an unknown caller is admitted by default": {
			method: http.MethodPost, path: "/", peer: "192.0.2.9:41000",
			headers: []string{"X-Forwarded-For", "10.9.9.9"}, status: http.StatusOK,
		},
		"a header mode gateway names the namespace": {
			method: http.MethodPost, path: "/", peer: "198.51.100.7:3000",
			headers: []string{"X-Team", "team-ml"}, status: http.StatusTooManyRequests,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			resp := call(handler(t, authz.AdmitUnknown, current), tt.method, tt.path, tt.peer, tt.headers...)
			assert.Equal(t, tt.status, resp.StatusCode)
			for k, v := range tt.want {
				assert.Equal(t, v, resp.Header.Get(k), k)
			}
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			if tt.body != "" {
				assert.JSONEq(t, tt.body, string(body))
			}
		})
	}
}

func TestAnUnknownCallerIsRefusedWhenThePolicySaysSo(t *testing.T) {
	resp := call(handler(t, authz.RefuseUnknown, current), http.MethodPost, "/", "192.0.2.9:1",
		"X-Forwarded-For", "10.9.9.9")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	var body gateway.ErrorBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, "unknown_caller", body.Error.Code)
	assert.Contains(t, body.Error.Message, "no one Pod has address 10.9.9.9")
}

func TestAnAnswerFromAnOldCacheSaysSo(t *testing.T) {
	old := authz.Cache{Synced: true, Age: 90 * time.Second, MaxAge: 30 * time.Second}
	resp := call(handler(t, authz.AdmitUnknown, old), http.MethodPost, "/", "192.0.2.9:1",
		"X-Forwarded-For", "10.1.0.3")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "1m30s", resp.Header.Get(gateway.HeaderCacheStale))
}

func TestTheMetricsCountDecisionsByResultAndReason(t *testing.T) {
	h, m := handlerAndMetrics(t, authz.AdmitUnknown, current)
	call(h, http.MethodPost, "/", "192.0.2.9:1", "X-Forwarded-For", "10.1.0.2")
	call(h, http.MethodPost, "/", "192.0.2.9:1", "X-Forwarded-For", "10.9.9.9")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	out := rec.Body.String()
	for _, line := range []string{
		`llmbudget_authz_decisions_total{gateway="caddy",reason="budget_blocking",result="refused"} 1`,
		`llmbudget_authz_decisions_total{gateway="caddy",reason="unknown_caller",result="allowed"} 1`,
		`llmbudget_authz_unknown_callers_total{gateway="caddy"} 1`,
		`llmbudget_authz_decision_duration_seconds_count 2`,
		`llmbudget_authz_cache_synced 1`,
		`llmbudget_authz_cached_objects{kind="pod"} 2`,
	} {
		assert.True(t, strings.Contains(out, line+"\n"), "missing %s in\n%s", line, out)
	}
}
