package evaluate_test

import (
	"encoding/json"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// sampled is the latest sample of the figures the projections below run from.
var sampled = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// burning is a blocking 100 USD budget whose figures say spent at sampled, growing at rate USD per hour.
func burning(spent, rate string, mut ...func(*api.LLMCostBudget, *spend.Reading)) evaluate.Input {
	b := budget(func(b *api.LLMCostBudget) {
		b.Spec.LimitUSD = ptr("100")
		b.Spec.Enforcement = api.Enforcement{Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"}}
		b.Metadata.CreationTimestamp = metav1.NewTime(sampled.Add(-time.Hour))
	})
	r := spend.Reading{
		Usage:   spend.Usage{CostUSD: amount(spent)},
		Message: "spend read",
		Stamp:   spend.Stamp{Source: "ConfigMap team-ml/llm-spend", AsOf: sampled.Add(10 * time.Second)},
		Rate:    &spend.Rate{SampledAt: sampled, Window: time.Minute, USDPerHour: amount(rate)},
	}
	for _, m := range mut {
		m(&b, &r)
	}
	b.Spec.Default()
	return evaluate.Input{Budget: b, Subject: subject, Window: b.Spec.PeriodSpec().Containing(sampled), Spend: r}
}

func amount(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

func at(in evaluate.Input, t time.Time) evaluate.Input {
	in.Now = t
	return in
}

func TestASteadyBurnBlocksAtItsProjectedCrossing(t *testing.T) {
	// 92 of 100 USD at 120 USD/h: the limit is 4 minutes away from the sample, at 12:04:00.
	in := burning("92", "120")
	crossing := sampled.Add(4 * time.Minute)

	before := evaluate.Evaluate(at(in, sampled.Add(30*time.Second)))
	require.NotNil(t, before.Status.Projection)
	assert.Equal(t, "120.00", before.Status.Projection.BurnRateUSDPerHour)
	assert.Equal(t, "1m0s", before.Status.Projection.Window)
	assert.Equal(t, crossing, before.Status.Projection.LimitReachedAt.Time)
	assert.Equal(t, "spend 92.00 of 100.00 USD", before.Status.Projection.Limit)
	assert.False(t, before.Status.Enforcement.Blocking, "the crossing has not come")
	assert.Equal(t, 3*time.Minute+30*time.Second, before.ResyncAfter, "the sync is asked again at the crossing")

	after := evaluate.Evaluate(at(in, crossing))
	enf := after.Status.Enforcement
	require.True(t, enf.Blocking)
	assert.True(t, enf.Projected)
	assert.Nil(t, enf.BlockedOn, "a projection is no reading to hold on to")
	assert.Equal(t, api.Warning, after.Status.State, "the measured state is what was measured")
	assert.Contains(t, enf.Message, "LLMCostBudget team-ml/chatbot is projected OverBudget (spend 92.00 of 100.00 "+
		"USD at 120.00 USD/h reaches the limit at 2026-11-20T12:04:00Z")
	blocking := condition(t, after.Status, api.ConditionBlocking)
	assert.Equal(t, evaluate.ReasonBlockingProjected, blocking.Reason)
	assert.Equal(t, crossing, blocking.LastTransitionTime.Time, "the block began at the crossing, not at the sync")
	require.Len(t, after.Announcements, 2) // the block and the 80% threshold
	assert.Equal(t, evaluate.ReasonBlockingProjected, after.Announcements[0].Reason)
	assert.Equal(t, crossing, after.Announcements[0].At)
	assert.Equal(t, sampled.Add(evaluate.ProjectFor).Sub(crossing), after.ResyncAfter,
		"the sync is asked again when the projection lapses")
}

func TestTheSameProjectionASecondLaterDesiresTheSameChildren(t *testing.T) {
	in := burning("92", "120")
	first := evaluate.Evaluate(at(in, sampled.Add(4*time.Minute)))
	again := evaluate.Evaluate(at(in, sampled.Add(4*time.Minute+time.Second)))
	require.True(t, first.Status.Enforcement.Blocking)
	assert.Equal(t, encoded(t, first.Announcements), encoded(t, again.Announcements))
	assert.Equal(t, encoded(t, first.Quota), encoded(t, again.Quota))
	assert.Equal(t, encoded(t, first.Status.Enforcement), encoded(t, again.Status.Enforcement))
	assert.Equal(t, encoded(t, first.Status.Projection), encoded(t, again.Status.Projection))

	// A stale parent: the status it was given is the one before the block.
	stale := at(in, sampled.Add(4*time.Minute+2*time.Second))
	earlier := evaluate.Evaluate(at(in, sampled.Add(time.Minute))).Status
	stale.Budget.Status = &earlier
	replay := evaluate.Evaluate(stale)
	assert.Equal(t, encoded(t, first.Announcements), encoded(t, replay.Announcements))
	assert.Equal(t, encoded(t, first.Status.Enforcement), encoded(t, replay.Status.Enforcement))
}

func encoded(t *testing.T, v any) string {
	t.Helper()
	js, err := json.Marshal(v)
	require.NoError(t, err)
	return string(js)
}

func TestAProjectionBlocksOnlyWhereItShould(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     evaluate.Input
		now    time.Time
		blocks bool
		reach  *time.Time // status.projection.limitReachedAt
		unused string     // a part of status.projection.unused
	}{
		{name: "a zero rate never reaches the limit", in: burning("99.99", "0"), now: sampled.Add(time.Minute)},
		{
			name: "a crossing further off than the bound waits for later figures",
			in:   burning("50", "120"), now: sampled.Add(4 * time.Minute), reach: ptr(sampled.Add(25 * time.Minute)),
		},
		{
			name: "a projection older than the bound no longer blocks",
			in:   burning("99", "120"), now: sampled.Add(evaluate.ProjectFor), reach: ptr(sampled.Add(30 * time.Second)),
		},
		{
			name: "a falling rate moves the crossing past the sync",
			in:   burning("99", "6"), now: sampled.Add(time.Minute), reach: ptr(sampled.Add(10 * time.Minute)),
		},
		{
			name: "an opt-out blocks on measured spend only",
			in: burning("99", "120", func(b *api.LLMCostBudget, _ *spend.Reading) {
				b.Spec.Enforcement.BlockOn = api.BlockOnMeasured
			}),
			now: sampled.Add(time.Minute), reach: ptr(sampled.Add(30 * time.Second)),
		},
		{
			name: "a crossing after the period's end is not shown",
			in: burning("99", "1", func(_ *api.LLMCostBudget, r *spend.Reading) {
				r.Rate.SampledAt = time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC)
				r.Stamp.AsOf = r.Rate.SampledAt
			}),
			now: time.Date(2026, 11, 30, 23, 31, 0, 0, time.UTC),
		},
		{
			name: "a model's limit is projected from the model's rate",
			in: burning("10", "1", func(b *api.LLMCostBudget, r *spend.Reading) {
				b.Spec.ModelLimits = []api.ModelLimit{{Model: "gpt-4o", LimitUSD: ptr("5")}}
				r.Usage.Models = map[string]spend.Usage{"gpt-4o": {CostUSD: amount("4")}}
				r.Rate.Models = map[string]money.Amount{"gpt-4o": amount("60")}
			}),
			now: sampled.Add(time.Minute), blocks: true, reach: ptr(sampled.Add(time.Minute)),
		},
		{
			name: "a rate the source cannot vouch for is shown unused",
			in: burning("99", "120", func(_ *api.LLMCostBudget, r *spend.Reading) {
				r.Rate = &spend.Rate{Unused: "ConfigMap team-ml/llm-spend has annotation llmbudget.dev/burn-rate " +
					"that is not used: it is for the figures of another time"}
			}),
			now: sampled.Add(time.Minute), unused: "not used",
		},
		{
			name: "stale spend projects nothing",
			in: burning("99", "120", func(b *api.LLMCostBudget, _ *spend.Reading) {
				b.Spec.CostSource.MaxAge = "1m"
			}),
			now: sampled.Add(2 * time.Minute), unused: "the spend is stale",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := evaluate.Evaluate(at(tc.in, tc.now))
			require.NotNil(t, r.Status.Projection)
			assert.Equal(t, tc.blocks, r.Status.Enforcement.Blocking)
			if tc.reach == nil {
				assert.Nil(t, r.Status.Projection.LimitReachedAt)
			} else if assert.NotNil(t, r.Status.Projection.LimitReachedAt) {
				assert.Equal(t, *tc.reach, r.Status.Projection.LimitReachedAt.Time)
			}
			assert.Contains(t, r.Status.Projection.Unused, tc.unused)
		})
	}
}

func TestAWarnModeBudgetWouldBlockOnItsProjection(t *testing.T) {
	in := burning("99", "120", func(b *api.LLMCostBudget, _ *spend.Reading) {
		b.Spec.Enforcement.Mode = api.ModeWarn
	})
	r := evaluate.Evaluate(at(in, sampled.Add(time.Minute)))
	assert.True(t, r.Status.Enforcement.Blocking)
	assert.Equal(t, evaluate.ReasonWouldBlockProjected, condition(t, r.Status, api.ConditionBlocking).Reason)
}

func TestAProjectedBlockLiftsWhenLaterFiguresProjectTheLimitFurtherOff(t *testing.T) {
	blocked := evaluate.Evaluate(at(burning("99", "120"), sampled.Add(time.Minute)))
	require.True(t, blocked.Status.Enforcement.Blocking)
	// The burn stopped: the next figures, 15 s later, hold the same spend and a rate of zero.
	next := burning("99.5", "0", func(_ *api.LLMCostBudget, r *spend.Reading) {
		r.Rate.SampledAt, r.Stamp.AsOf = sampled.Add(75*time.Second), sampled.Add(80*time.Second)
	})
	next.Budget.Status = &blocked.Status
	r := evaluate.Evaluate(at(next, sampled.Add(90*time.Second)))
	assert.False(t, r.Status.Enforcement.Blocking)
	var reasons []string
	for _, a := range r.Announcements {
		reasons = append(reasons, a.Reason)
	}
	assert.Contains(t, reasons, evaluate.ReasonUnblocked)
}

func TestAMeasuredCrossingAfterAProjectedOneKeepsTheBlockAndItsStart(t *testing.T) {
	blocked := evaluate.Evaluate(at(burning("99", "120"), sampled.Add(time.Minute)))
	measured := burning("101", "120", func(_ *api.LLMCostBudget, r *spend.Reading) {
		r.Rate.SampledAt, r.Stamp.AsOf = sampled.Add(75*time.Second), sampled.Add(80*time.Second)
	})
	measured.Budget.Status = &blocked.Status
	r := evaluate.Evaluate(at(measured, sampled.Add(90*time.Second)))
	require.True(t, r.Status.Enforcement.Blocking)
	assert.False(t, r.Status.Enforcement.Projected)
	assert.NotNil(t, r.Status.Enforcement.BlockedOn)
	blocking := condition(t, r.Status, api.ConditionBlocking)
	assert.Equal(t, evaluate.ReasonBlocking, blocking.Reason)
	assert.Equal(t, sampled.Add(30*time.Second), blocking.LastTransitionTime.Time)
	assert.Equal(t, &api.OvershootStatus{USD: "1.00", Percent: "1.00"}, r.Status.Overshoot)
}

func TestAProjectionAcrossADaylightSavingChangeCountsRealTime(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	// 2026-10-25 03:00 CEST became 02:00 CET: a Daily period that day is 25 hours long.
	from := time.Date(2026, 10, 25, 0, 0, 0, 0, berlin)
	in := burning("2", "4", func(b *api.LLMCostBudget, r *spend.Reading) {
		b.Spec.Period = api.Period{Type: api.Daily, TimeZone: "Europe/Berlin"}
		r.Rate.SampledAt, r.Stamp.AsOf = from, from
	})
	in.Window = in.Budget.Spec.PeriodSpec().Containing(from)
	require.Equal(t, 25*time.Hour, in.Window.Duration())
	r := evaluate.Evaluate(at(in, from.Add(time.Minute)))
	require.NotNil(t, r.Status.Projection.LimitReachedAt)
	assert.True(t, from.Add(24*time.Hour+30*time.Minute).Equal(r.Status.Projection.LimitReachedAt.Time),
		"98 USD at 4 USD/h is 24.5 hours of real time: 23:30 on the day of 25 hours, still in its period")
}

// FuzzAProjectionNeverBlocksEarly checks, for any figures and rate, that a projected block comes only once the
// spend at the rate has reached the limit since the sample, and only within ProjectFor of it.
func FuzzAProjectionNeverBlocksEarly(f *testing.F) {
	f.Add(int64(92_000_000_000), int64(120_000_000_000), int64(250))
	f.Add(int64(99_999_999_999), int64(1), int64(1))
	f.Add(int64(0), int64(9_223_372_036_854_775_807), int64(0))
	f.Fuzz(func(t *testing.T, spentNanos, rateNanos, afterSeconds int64) {
		if spentNanos < 0 || rateNanos < 0 || afterSeconds < 0 || afterSeconds > 1<<20 {
			return
		}
		in := burning("0", "0", func(_ *api.LLMCostBudget, r *spend.Reading) {
			r.Usage.CostUSD, r.Rate.USDPerHour = money.FromNanos(spentNanos), money.FromNanos(rateNanos)
		})
		elapsed := time.Duration(afterSeconds) * time.Second
		res := evaluate.Evaluate(at(in, sampled.Add(elapsed)))
		enf := res.Status.Enforcement
		if !enf.Blocking || !enf.Projected {
			return
		}
		require.Less(t, elapsed, evaluate.ProjectFor)
		// spent + rate * elapsed >= limit, in nanos of a dollar times nanoseconds per hour.
		reached := new(big.Int).Mul(big.NewInt(rateNanos), big.NewInt(int64(elapsed)))
		reached.Add(reached, new(big.Int).Mul(big.NewInt(spentNanos), big.NewInt(int64(time.Hour))))
		limit := new(big.Int).Mul(big.NewInt(100_000_000_000), big.NewInt(int64(time.Hour)))
		require.GreaterOrEqual(t, reached.Cmp(limit), 0, "blocked at %s before the projection reaches the limit",
			elapsed)
	})
}

func TestAProjectedBlockThatLapsesIsLiftedAtItsBoundNotAtTheSync(t *testing.T) {
	in := burning("99", "120")
	blocked := evaluate.Evaluate(at(in, sampled.Add(time.Minute)))
	require.True(t, blocked.Status.Enforcement.Blocking)
	in.Budget.Status = &blocked.Status
	bound := sampled.Add(evaluate.ProjectFor)
	for _, late := range []time.Duration{0, time.Second, time.Minute} {
		r := evaluate.Evaluate(at(in, bound.Add(late)))
		assert.False(t, r.Status.Enforcement.Blocking)
		assert.Equal(t, bound, condition(t, r.Status, api.ConditionBlocking).LastTransitionTime.Time,
			"%s past the bound: the lift is dated at the bound", late)
		for _, a := range r.Announcements {
			if a.Reason == evaluate.ReasonUnblocked {
				assert.Equal(t, bound, a.At)
			}
		}
	}
}
