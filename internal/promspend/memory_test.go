package promspend_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/promspend"
)

// bigAnswer is a vector of n series of about 1 KB each.
func bigAnswer(n int) string {
	series := make([]string, n)
	for i := range series {
		series[i] = fmt.Sprintf(`{"model":"m","pod":"%01000d"}`, i)
	}
	return vector(series...)
}

// A plan's answers count against its share of the run's memory: a share that grows takes what is free and fails,
// naming the memory, past it; one taken whole fails past its size.
func TestAPlansAnswersHoldAShareOfTheRunsMemory(t *testing.T) {
	body := bigAnswer(600) // about 600 KB
	url := serve(t, answer(200, body))
	c, err := promspend.NewClient(url, promspend.DefaultLimits)
	require.NoError(t, err)
	ctx := context.Background()
	plan := ledger(t)

	tests := map[string]struct {
		memory, first int64
		grows         bool
		wantErr       string
	}{
		"a growing share past the memory": {2 << 20, 1 << 20, true,
			"answers past the memory a run gives the answers of the budgets computed at once: 2 MiB of the " +
				"run's 2 MiB, and no more free"},
		"a share taken whole, past its size": {8 << 20, 1 << 20, false,
			"answers past the memory a run gives the answers of the budgets computed at once: past its 1 MiB " +
				"of the run's 8 MiB"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := promspend.NewMemory(tc.memory)
			share, err := m.Take(ctx, tc.first, tc.grows)
			require.NoError(t, err)
			_, err = plan.AskWithin(promspend.WithShare(ctx, share), c, promspend.DefaultAllowance,
				func(promspend.Query, string) {})
			require.ErrorIs(t, err, promspend.ErrOverMemory)
			assert.Contains(t, err.Error(), tc.wantErr)
			share.Release()
			whole, err := m.Take(ctx, tc.memory, false)
			require.NoError(t, err, "a share released gives back all it took")
			whole.Release()
		})
	}
	t.Run("answers within the share", func(t *testing.T) {
		m := promspend.NewMemory(64 << 20)
		share, err := m.Take(ctx, 1<<20, true)
		require.NoError(t, err)
		defer share.Release()
		answers, err := plan.AskWithin(promspend.WithShare(ctx, share), c, promspend.Allowance{Series: 1 << 20,
			Body: 64 << 20}, func(promspend.Query, string) {})
		require.NoError(t, err)
		assert.Len(t, answers, len(plan.Queries))
		assert.GreaterOrEqual(t, share.Held(), int64(len(body)*len(plan.Queries)), "it grew with the answers")
	})
}

// Taking a share waits for the memory others hold, until they release it or the context ends; more than the
// memory holds is taken as all of it.
func TestTakingAShareWaitsForTheMemoryOthersHold(t *testing.T) {
	m := promspend.NewMemory(4 << 20)
	held, err := m.Take(context.Background(), 1<<30, false)
	require.NoError(t, err)
	assert.Equal(t, int64(4<<20), held.Held())

	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = m.Take(short, 1, true)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	got := make(chan *promspend.Share)
	go func() {
		s, err := m.Take(context.Background(), 2<<20, false)
		assert.NoError(t, err)
		got <- s
	}()
	select {
	case <-got:
		t.Fatal("a share was taken while all the memory was held")
	case <-time.After(50 * time.Millisecond):
	}
	held.Release()
	select {
	case s := <-got:
		assert.Equal(t, int64(2<<20), s.Held())
		s.Release()
	case <-time.After(5 * time.Second):
		t.Fatal("a share waited on memory released")
	}
}
