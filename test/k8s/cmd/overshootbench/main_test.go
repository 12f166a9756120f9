package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEachBurnSpendsTheWholeLimitInItsLengthAtTheRate(t *testing.T) {
	burns, err := plan(options{burns: "2m,1h", blockOn: "Projected,-", limitUSD: 360, rate: 10})
	require.NoError(t, err)
	require.Len(t, burns, 4)
	for i, tc := range []struct {
		ns, blockOn, ip string
		costMu          int64
	}{
		{"burn-2m-projected", "Projected", "127.0.1.1", 300_000},
		{"burn-2m-unset", "", "127.0.1.2", 300_000},
		{"burn-1h-projected", "Projected", "127.0.1.3", 10_000},
		{"burn-1h-unset", "", "127.0.1.4", 10_000},
	} {
		b := burns[i]
		assert.Equal(t, tc.ns, b.ns)
		assert.Equal(t, tc.ip, b.ip, tc.ns)
		assert.Equal(t, tc.blockOn, b.blockOn, tc.ns)
		assert.Equal(t, tc.costMu, b.costMu, tc.ns)
		assert.Equal(t, int64(360e6), b.limitMu, tc.ns)
		assert.Equal(t, 100*time.Millisecond, b.interval, tc.ns)
		assert.Equal(t, "sk-"+tc.ns, b.key)
	}
}

func TestABurnShorterThanTenSecondsIsRefused(t *testing.T) {
	_, err := plan(options{burns: "5s", blockOn: "Projected", limitUSD: 1, rate: 1})
	assert.ErrorContains(t, err, `"5s"`)
}

func TestTheOvershootTargetFollowsTheBurnsLength(t *testing.T) {
	for l, want := range map[time.Duration]float64{time.Minute: 5, 2 * time.Minute: 5, 10 * time.Minute: 1,
		time.Hour: 0.5} {
		assert.Equal(t, want, overshootTarget(l), l)
	}
}

func TestTheProjectedCrossingIsReadFromTheStatusProjection(t *testing.T) {
	at, ok := projectedCrossing(map[string]any{"projection": map[string]any{
		"burnRateUSDPerHour": "10800.00", "limitReachedAt": "2026-12-06T06:02:30Z"}})
	require.True(t, ok)
	assert.Equal(t, time.Date(2026, 12, 6, 6, 2, 30, 0, time.UTC), at.UTC())
	_, ok = projectedCrossing(map[string]any{"projection": map[string]any{"burnRateUSDPerHour": "0"}})
	assert.False(t, ok, "no limitReachedAt: the rate reaches no limit")
	_, ok = projectedCrossing(map[string]any{})
	assert.False(t, ok)
}

func TestTheUpstreamCountsEachServedRequestOfAKnownKeyAndNotesTheCrossing(t *testing.T) {
	up := newUpstream()
	up.add("sk-a", "team-a", 400_000, 1_000_000)
	srv := httptest.NewServer(up)
	defer srv.Close()
	post := func(key string) int {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusUnauthorized, post("sk-nobody"))
	for i, want := range []int64{400_000, 800_000, 1_200_000} {
		assert.Equal(t, http.StatusOK, post("sk-a"))
		spent, crossed := up.spent("sk-a")
		assert.Equal(t, want, spent)
		assert.Equal(t, i == 2, !crossed.IsZero(), "crossed only once the spend reaches the limit")
	}
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	var body strings.Builder
	_, err = io.Copy(&body, resp.Body)
	require.NoError(t, err)
	for _, line := range []string{
		`litellm_spend_metric_total{team="team-a",model="gpt-4o",hashed_api_key="h-sk-a",api_key_alias="team-a"} 1.200000`,
		`litellm_input_tokens_metric_total{team="team-a",model="gpt-4o",hashed_api_key="h-sk-a",api_key_alias="team-a"} 600`,
		`litellm_output_tokens_metric_total{team="team-a",model="gpt-4o",hashed_api_key="h-sk-a",api_key_alias="team-a"} 150`,
	} {
		assert.Contains(t, body.String(), line+"\n")
	}
}

func TestUSDIsTruncatedToCents(t *testing.T) {
	for mu, want := range map[int64]string{0: "0.00", 1_239_999: "1.23", -5_000_000: "-5.00", 360_000_000: "360.00"} {
		assert.Equal(t, want, usd(mu))
	}
}
