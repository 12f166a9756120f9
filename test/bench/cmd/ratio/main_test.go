package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two rounds, as `make bench` writes them: each round runs every body's
// handler and floor back to back.
const rounds = `goos: linux
BenchmarkHook/budget/sync/capture-a/handler-2   100   50000 ns/op   900.00 MB/s   45000 req-bytes` +
	`   1000 B/op   10 allocs/op
BenchmarkHook/budget/sync/capture-a/floor-2     100  100000 ns/op   450.00 MB/s   5000 B/op   90 allocs/op
BenchmarkHook/budget/customize/capture-b/handler-2 100 30000 ns/op 200 B/op 3 allocs/op
BenchmarkHook/budget/customize/capture-b/floor-2   100 20000 ns/op 400 B/op 5 allocs/op
PASS
BenchmarkHook/budget/sync/capture-a/handler-2   100  300000 ns/op   900.00 MB/s   1000 B/op   10 allocs/op
BenchmarkHook/budget/sync/capture-a/floor-2     100  200000 ns/op   450.00 MB/s   5000 B/op   90 allocs/op
BenchmarkHook/budget/customize/capture-b/handler-2 100 30000 ns/op 200 B/op 3 allocs/op
BenchmarkHook/budget/customize/capture-b/floor-2   100 20000 ns/op 400 B/op 5 allocs/op
`

func TestParseGroupsRoundsByBodyInOrder(t *testing.T) {
	order, results, err := parse(strings.NewReader(rounds))
	require.NoError(t, err)
	assert.Equal(t, []string{"budget/sync/capture-a", "budget/customize/capture-b"}, order)
	a := results["budget/sync/capture-a"]
	assert.Equal(t, []float64{50000, 300000}, a["handler"].ns)
	assert.Equal(t, []float64{5000, 5000}, a["floor"].bytes)
	assert.Equal(t, []float64{90, 90}, a["floor"].allocs)
	assert.Equal(t, []float64{45000}, a["handler"].request, "the request's size, where reported")
}

func TestTheRatioPairsEachRoundsHandlerWithItsFloor(t *testing.T) {
	// Round ratios 0.5 and 1.5: their median is 1.0, while the ratio of
	// the medians would be 175000/150000.
	assert.InDelta(t, 1.0, medianRatio([]float64{50000, 300000}, []float64{100000, 200000}), 1e-9)
	assert.InDelta(t, 2.0, median([]float64{3, 1, 2}), 1e-9)
}

func TestTheTableJudgesSyncBodiesOnly(t *testing.T) {
	order, results, err := parse(strings.NewReader(rounds))
	require.NoError(t, err)
	var out bytes.Buffer
	report(&out, order, results)
	lines := strings.Split(out.String(), "\n")
	require.GreaterOrEqual(t, len(lines), 3)
	assert.Contains(t, lines[1], "budget/sync/capture-a")
	assert.Contains(t, lines[1], "45000")
	assert.Contains(t, lines[1], "1.00")
	assert.Contains(t, lines[1], "met")
	assert.Contains(t, lines[2], "1.50")
	assert.NotContains(t, lines[2], "MISSED", "customize carries no target")
	assert.Contains(t, out.String(), "missed on 0")
}

func TestTheLedgerBodyHasItsOwnTarget(t *testing.T) {
	assert.Equal(t, 2.0, targetOf("budget/sync/capture-over-budget-with-children"))
	assert.Equal(t, 2.0, targetOf("workload/finalize/capture-label-removed-decorations-left"))
	assert.Equal(t, 3.0, targetOf("budget/sync/synthetic-ledger-366d-10-thresholds"))
	assert.Equal(t, 0.0, targetOf("budget/customize/capture-first-customize"))
}
