package evaluate

import (
	"math"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// limits is what a subject, the budget or one model, is measured against.
type limits struct {
	usd    *money.Amount
	tokens *api.TokenLimits
}

// gauge is the largest percent of any of l's limits and what it measures.
func (l limits) gauge(u spend.Usage) (percent int64, driver string) {
	percent = -1
	consider := func(p int64, what string) {
		if p > percent {
			percent, driver = p, what
		}
	}
	if l.usd != nil {
		consider(u.CostUSD.PercentOf(*l.usd), "spend")
	}
	if t := l.tokens; t != nil {
		for _, m := range []struct {
			name  string
			used  int64
			limit *int64
		}{{"input tokens", u.InputTokens, t.Input}, {"output tokens", u.OutputTokens, t.Output}, {"total tokens", u.TotalTokens(), t.Total}} {
			if m.limit != nil {
				consider(percentOf(m.used, *m.limit), m.name)
			}
		}
	}
	return max(percent, 0), driver
}

// parseLimit reads a limit that Validate has already parsed, so it cannot fail.
func parseLimit(s *string) *money.Amount {
	if s == nil {
		return nil
	}
	l, _ := money.ParseMaxDecimals(*s, api.LimitDecimals)
	return &l
}

// percentOf is floor(used*100/limit), saturating at MaxInt64, by the exact
// arithmetic of money (a count of tokens read as a count of nanos); a zero
// limit is exhausted by any usage, even none.
func percentOf(used, limit int64) int64 {
	if limit <= 0 {
		return math.MaxInt64
	}
	return max(money.FromNanos(used).PercentOf(money.FromNanos(limit)), 0)
}
