package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// burn is one measured run: a budget in a namespace of its own, spent at a steady rate through Caddy by a client
// bound to its Pod's address, until refused.
type burn struct {
	name     string        // the table's row: burn and blockOn
	length   time.Duration // the limit spent in this time at the rate
	blockOn  string        // spec.enforcement.blockOn; "" leaves it unset
	ns, key  string        // the namespace (and team, budget) and its API key
	ip       string        // the Pod's address, which the client binds to
	costMu   int64         // micro-USD a request costs
	limitMu  int64
	interval time.Duration // between two requests

	mu           sync.Mutex
	started      time.Time
	first429     time.Time
	spentAt429   int64 // the true spend when the first 429 came
	refused      int
	falseRefused int // refused while the true spend was below 95 % of the limit
	served       int
	servedAfter  int // served after the first 429
	failed       int // neither served nor refused: the error's first words are kept
	failure      string
	timedOut     bool
}

// spend calls at b's rate from start until hold after the first 429, or until deadline; it returns once every
// call has ended.
func (b *burn) spend(ctx context.Context, up *upstream, caddy string, start time.Time, hold, deadline time.Duration) {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(b.ip)}, Timeout: 5 * time.Second}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dialer.DialContext,
		MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	b.mu.Lock()
	b.started = start
	b.mu.Unlock()
	var calls sync.WaitGroup
	defer calls.Wait()
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * b.interval)
		if wait := time.Until(at); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		b.mu.Lock()
		done := !b.first429.IsZero() && time.Since(b.first429) > hold
		if !done && time.Since(start) > deadline {
			b.timedOut, done = true, true
		}
		b.mu.Unlock()
		if done {
			return
		}
		calls.Go(func() { b.call(ctx, client, up, caddy) })
	}
}

func (b *burn) call(ctx context.Context, client *http.Client, up *upstream, caddy string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+caddy+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+b.key)
	resp, err := client.Do(req)
	status := 0
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
	}
	now := time.Now()
	spent, _ := up.spent(b.key)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch status {
	case http.StatusOK:
		b.served++
		if !b.first429.IsZero() {
			b.servedAfter++
		}
	case http.StatusTooManyRequests:
		b.refused++
		if b.first429.IsZero() || now.Before(b.first429) {
			b.first429, b.spentAt429 = now, spent
		}
		if spent*100 < b.limitMu*95 {
			b.falseRefused++
		}
	default:
		b.failed++
		if b.failure == "" {
			b.failure = http.StatusText(status)
			if err != nil {
				b.failure = err.Error()
			}
		}
	}
}
