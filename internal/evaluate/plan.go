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
	models []modelPlan
}

// limits is what a subject, the budget or one model, is measured against.
type limits struct {
	usd    *money.Amount
	tokens tokenLimits
}

type modelPlan struct {
	name   string
	limits limits
}

func (p plan) budget() limits { return limits{usd: p.limit, tokens: p.tokens} }

// gaugeReading is the largest percent of any of a subject's limits and what
// it measures.
type gaugeReading struct {
	percent int64
	driver  string
}

func (l limits) gauge(u spend.Usage) gaugeReading {
	g := gaugeReading{percent: -1}
	consider := func(p int64, what string) {
		if p > g.percent {
			g.percent, g.driver = p, what
		}
	}
	if l.usd != nil {
		consider(u.CostUSD.PercentOf(*l.usd), "spend")
	}
	for _, m := range l.tokens.measures(u) {
		consider(m.percent, m.name)
	}
	if g.percent < 0 {
		g.percent = 0
	}
	return g
}

// compile turns a defaulted spec that passed Validate into a plan; the parses
// here cannot fail because Validate ran the same ones.
func compile(s *api.Spec) plan {
	var p plan
	p.limit = parseLimit(s.LimitUSD)
	loc, _ := period.LoadLocation(s.Period.TimeZone)
	p.period = period.Spec{Kind: period.Kind(s.Period.Type), StartDay: int(*s.Period.StartDay), Location: loc}
	if s.TokenLimits != nil {
		p.tokens = tokenLimits{input: s.TokenLimits.Input, output: s.TokenLimits.Output, total: s.TokenLimits.Total}
	}
	for _, m := range s.ModelLimits {
		mp := modelPlan{name: m.Model, limits: limits{usd: parseLimit(m.LimitUSD)}}
		if m.TokenLimits != nil {
			mp.limits.tokens = tokenLimits{input: m.TokenLimits.Input, output: m.TokenLimits.Output, total: m.TokenLimits.Total}
		}
		p.models = append(p.models, mp)
	}
	p.source = spend.Source{Format: s.CostSource.Format, Key: s.CostSource.Key, KeyPrefix: s.CostSource.KeyPrefix}
	return p
}

func parseLimit(s *string) *money.Amount {
	if s == nil {
		return nil
	}
	l, _ := money.ParseMaxDecimals(*s, api.LimitDecimals)
	return &l
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
