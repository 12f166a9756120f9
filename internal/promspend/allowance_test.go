package promspend_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/promspend"
)

// ledger is the plan of a DailyLedger budget on the 20th of its month: 21 days, 3 queries each.
func ledger(t *testing.T) promspend.Plan {
	t.Helper()
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "a"})
	require.NoError(t, err)
	plan, err := promspend.NewPlan(budget(api.Monthly, "UTC", 1, api.DailyLedger), at("2026-11-20T12:00:00Z"), src,
		api.DefaultStep)
	require.NoError(t, err)
	require.Greater(t, len(plan.Queries), 30)
	return plan
}

// Each answer is within Limits, but a plan of many queries adds them up: the allowance bounds their sum.
func TestThePlansAnswersTogetherStayWithinItsAllowanceOfSeriesAndBytes(t *testing.T) {
	models := make([]string, 40)
	for i := range models {
		models[i] = fmt.Sprintf(`{"model":"model-%d"}`, i)
	}
	forty := vector(models...)
	tests := map[string]struct {
		allowance promspend.Allowance
		wantErr   string
	}{
		"the series of all the answers": {promspend.Allowance{Series: 100, Body: 16 << 20},
			"answers past the cap of one budget's answers: 100 series and 16 MiB in all " +
				"(promspend.DefaultAllowance); query 3 of"},
		"the bytes of all the answers": {promspend.Allowance{Series: 20_000, Body: int64(len(forty)) * 5 / 2},
			"answers past the cap of one budget's answers: 20000 series and " +
				fmt.Sprint(len(forty)*5/2) + " bytes in all (promspend.DefaultAllowance); query 3 of"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var asked atomic.Int32
			url := serve(t, func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				answer(200, forty)(w, r)
			})
			c, err := promspend.NewClient(url, promspend.DefaultLimits)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = ledger(t).AskWithin(ctx, c, tc.allowance, func(promspend.Query, string) {})
			require.ErrorIs(t, err, promspend.ErrOverAllowance)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Equal(t, int32(3), asked.Load(), "no query after the one that passed the allowance")
		})
	}
}

func TestThePlansAnswersWithinTheDefaultAllowanceAreReturned(t *testing.T) {
	url := serve(t, answer(200, vector(`{"model":"gpt-4o"}`)))
	c, err := promspend.NewClient(url, promspend.DefaultLimits)
	require.NoError(t, err)
	plan := ledger(t)
	answers, err := plan.Ask(context.Background(), c, func(promspend.Query, string) {})
	require.NoError(t, err)
	assert.Len(t, answers, len(plan.Queries))
}

func TestAConfigMapOverOneMiBIsRefusedNamingTheCap(t *testing.T) {
	assert.NoError(t, promspend.CheckConfigMapSize("team-a/spend", make([]byte, promspend.MaxConfigMapBytes)))
	err := promspend.CheckConfigMapSize("team-a/spend", []byte(strings.Repeat("x", promspend.MaxConfigMapBytes+1)))
	require.Error(t, err)
	assert.Equal(t, "ConfigMap team-a/spend encodes to 1048577 bytes, more than the 1 MiB the API server stores "+
		"(promspend.MaxConfigMapBytes): fewer models or ledger days would fit", err.Error())
}
