package main

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// upstream is a fake OpenAI-compatible model server with LiteLLM's Prometheus callback: each request it serves
// costs its team (known by the API key, as LiteLLM knows it) a fixed price, counted exactly in micro-USD and
// exported as litellm_spend_metric_total with the token counters beside it. What it counts is the true spend.
type upstream struct {
	mu    sync.Mutex
	teams map[string]*account // by API key
}

// account is one team's true spend.
type account struct {
	team     string
	costMu   int64 // micro-USD a request costs
	limitMu  int64 // the budget's limit, to note the crossing
	spentMu  int64
	requests int64
	crossed  time.Time // when spentMu first reached limitMu
}

// Tokens a request counts, as a chat completion's usage.
const (
	inputTokens  = 200
	outputTokens = 50
)

func newUpstream() *upstream { return &upstream{teams: map[string]*account{}} }

// add opens an account for team, reached with API key key; its series are exported from now on, at zero.
func (u *upstream) add(key, team string, costMu, limitMu int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.teams[key] = &account{team: team, costMu: costMu, limitMu: limitMu}
}

// spent is the true spend of key's team now, and when it reached the limit (zero while it has not).
func (u *upstream) spent(key string) (int64, time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	a := u.teams[key]
	return a.spentMu, a.crossed
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/metrics" {
		u.metrics(w)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	u.mu.Lock()
	a, ok := u.teams[key]
	if ok {
		a.spentMu += a.costMu
		a.requests++
		if a.crossed.IsZero() && a.spentMu >= a.limitMu {
			a.crossed = time.Now()
		}
	}
	u.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"message":"invalid API key"}}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-bench","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,`+
		`"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
		inputTokens, outputTokens, inputTokens+outputTokens)
}

// metrics serves LiteLLM's counters, labelled as its Prometheus callback labels them.
func (u *upstream) metrics(w http.ResponseWriter) {
	u.mu.Lock()
	keys := make([]string, 0, len(u.teams))
	for k := range u.teams {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	type row struct {
		team, key  string
		spent, req int64
	}
	rows := make([]row, len(keys))
	for i, k := range keys {
		a := u.teams[k]
		rows[i] = row{a.team, k, a.spentMu, a.requests}
	}
	u.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	for _, m := range []struct {
		name  string
		value func(row) string
	}{
		{"litellm_spend_metric_total", func(r row) string { return fmt.Sprintf("%d.%06d", r.spent/1e6, r.spent%1e6) }},
		{"litellm_input_tokens_metric_total", func(r row) string { return fmt.Sprint(r.req * inputTokens) }},
		{"litellm_output_tokens_metric_total", func(r row) string { return fmt.Sprint(r.req * outputTokens) }},
	} {
		fmt.Fprintf(w, "# TYPE %s counter\n", m.name)
		for _, r := range rows {
			fmt.Fprintf(w, "%s{team=%q,model=\"gpt-4o\",hashed_api_key=%q,api_key_alias=%q} %s\n", m.name, r.team,
				"h-"+r.key, r.team, m.value(r))
		}
	}
}
