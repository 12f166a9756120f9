package evaluate

import (
	"fmt"
	"math/big"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/text"
)

// ProjectFor is how long past its latest sample a burn rate is projected. As deployed the next figures come
// within a scrape interval and a writer interval (30 s); past this bound the burn may have stopped long ago, and a
// block never rests on so old a projection.
const ProjectFor = 5 * time.Minute

// projection is where the spend's burn rate takes it: status.projection, and whether the budget blocks on it.
type projection struct {
	status *api.ProjectionStatus
	// at is when the rate takes the spend to a USD limit, rounded up to the second, if that is within ProjectFor of
	// the sample it runs from and within the period: zero otherwise, and then nothing blocks on it.
	at time.Time
	// until is when the projection stops being used: ProjectFor past its sample.
	until  time.Time
	reach  use    // the limit it reaches, with its figures now
	rate   string // the rate that limit is reached at, "12.00 USD/h"
	blocks bool   // at has passed and the spec blocks on projections: the budget blocks
	lapsed bool   // at has passed, and so has until: a block on it ended at until
}

// project projects the spend read at its burn rate. Every instant it shows follows from the figures and the rate
// alone; only whether at has passed depends on the clock, so a repeated or stale sync finds the same crossing.
// Stale or unreadable spend projects nothing.
func project(in Input, v verdict, f freshness, m measurement) projection {
	r := in.Spend.Rate
	switch {
	case r == nil || !v.evaluated() || in.Invalid != nil:
		return projection{}
	case r.Unused != "":
		return projection{status: &api.ProjectionStatus{Unused: text.Abbreviate(r.Unused, maxMessage)}}
	}
	p := projection{
		status: &api.ProjectionStatus{BurnRateUSDPerHour: r.USDPerHour.String(), Window: r.Window.String(),
			SampledAt: &metav1.Time{Time: r.SampledAt.UTC().Truncate(time.Second)}},
		until: r.SampledAt.Add(ProjectFor),
	}
	if f.stale {
		p.status.Unused = "the spend is stale: " + f.message
		return p
	}
	for _, c := range candidates(in, m, r) {
		at, ok := reaches(c.spent, c.limit, c.rate, r.SampledAt)
		if !ok || !at.Before(in.Window.End) || (!p.at.IsZero() && !at.Before(p.at)) {
			continue
		}
		p.at, p.reach, p.rate = at, c.use, c.rate.String()+" USD/h"
	}
	if p.at.IsZero() {
		return p
	}
	p.status.LimitReachedAt, p.status.Limit = metaTime(p.at), p.reach.String()+" "+p.reach.figures()
	if p.at.After(p.until) {
		p.at = time.Time{} // later figures will say whether it is reached: nothing waits for it
		return p
	}
	spec := in.Budget.Spec
	p.lapsed = !in.Now.Before(p.until)
	p.blocks = spec.Enforcement.BlockOn == api.BlockOnProjected && !in.Now.Before(p.at) && !p.lapsed
	return p
}

// candidate is a USD limit a rate may take the spend to.
type candidate struct {
	use                use
	spent, limit, rate money.Amount
}

// candidates are the budget's USD limit and its models' that the spend has not reached, each with its rate.
func candidates(in Input, m measurement, r *spend.Rate) []candidate {
	var out []candidate
	if l := parseLimit(in.Budget.Spec.LimitUSD); l != nil {
		out = append(out, candidate{use: use{what: "spend", used: m.spentUSD, limit: m.limitUSD},
			spent: in.Spend.Usage.CostUSD, limit: *l, rate: r.USDPerHour})
	}
	for _, ml := range in.Budget.Spec.ModelLimits {
		if l := parseLimit(ml.LimitUSD); l != nil {
			spent := in.Spend.Usage.Models[ml.Model].CostUSD
			out = append(out, candidate{
				use:   use{model: ml.Model, what: "spend", used: spent.String(), limit: l.String()},
				spent: spent, limit: *l, rate: r.Models[ml.Model],
			})
		}
	}
	return out
}

// reaches is when spend growing at rate (USD per hour) from spent at from reaches limit, rounded up to the
// second so that it is never earlier than the rate says; false when it has already, or never does.
func reaches(spent, limit, rate money.Amount, from time.Time) (time.Time, bool) {
	left := limit.Sub(spent)
	if left.Sign() <= 0 || rate.Sign() <= 0 {
		return time.Time{}, false
	}
	// left and rate are whole nanos of a dollar; their ratio in hours, in nanoseconds, overflows an int64 product.
	ns := new(big.Int).Mul(nanosOf(left), big.NewInt(int64(time.Hour)))
	q, rem := new(big.Int).QuoRem(ns, nanosOf(rate), new(big.Int))
	if rem.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > int64(maxProjection) {
		return time.Time{}, false
	}
	at := from.Add(time.Duration(q.Int64()))
	if t := at.Truncate(time.Second); !t.Equal(at) {
		at = t.Add(time.Second)
	}
	return at, true
}

// maxProjection bounds a crossing's distance: no period is longer than a month and a day.
const maxProjection = 32 * 24 * time.Hour

func nanosOf(a money.Amount) *big.Int { return big.NewInt(a.Nanos()) }

// words says the projection in a refusal: "spend 99.50 of 100.00 USD at 12.00 USD/h reaches the limit at T".
func (p projection) words() string {
	return fmt.Sprintf("%s %s at %s reaches the limit at %s", p.reach, p.reach.figures(), p.rate,
		p.at.UTC().Format(time.RFC3339))
}
