package evaluate

import (
	"math"
	"math/bits"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// plan is a validated spec turned into the values evaluation computes with.
type plan struct {
	limit  *money.Amount
	period period.Spec
	tokens tokenLimits
	source spend.Source
}

// compile turns a defaulted spec that passed Validate into a plan; the parses
// here cannot fail because Validate ran the same ones.
func compile(s *api.Spec) plan {
	var p plan
	if s.LimitUSD != nil {
		l, _ := money.ParseMaxDecimals(*s.LimitUSD, api.LimitDecimals)
		p.limit = &l
	}
	loc, _ := period.LoadLocation(s.Period.TimeZone)
	p.period = period.Spec{Kind: period.Kind(s.Period.Type), StartDay: int(*s.Period.StartDay), Location: loc}
	if s.TokenLimits != nil {
		p.tokens = tokenLimits{input: s.TokenLimits.Input, output: s.TokenLimits.Output, total: s.TokenLimits.Total}
	}
	p.source = spend.Source{Format: spend.Format(s.CostSource.Format), Key: s.CostSource.Key, KeyPrefix: s.CostSource.KeyPrefix}
	return p
}

type tokenLimits struct {
	input, output, total *int64
}

func (t tokenLimits) any() bool { return t.input != nil || t.output != nil || t.total != nil }

type tokenMeasure struct {
	name    string
	percent int64
}

// measures gives, for each set token limit, the percent of it that u uses.
func (t tokenLimits) measures(u spend.Usage) []tokenMeasure {
	var ms []tokenMeasure
	add := func(name string, used int64, limit *int64) {
		if limit != nil {
			ms = append(ms, tokenMeasure{name: name, percent: percentOf(used, *limit)})
		}
	}
	add("input tokens", u.InputTokens, t.input)
	add("output tokens", u.OutputTokens, t.output)
	add("total tokens", u.TotalTokens(), t.total)
	return ms
}

// percentOf is floor(used*100/limit) without overflow, saturating at
// MaxInt64; a zero limit is exhausted by any usage, even none.
func percentOf(used, limit int64) int64 {
	if limit <= 0 {
		return math.MaxInt64
	}
	if used <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(used), 100)
	if hi >= uint64(limit) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(limit))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}
