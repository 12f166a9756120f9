package promspend_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	prommodel "github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/promspend"
)

// partAnswers gives each query of plan the growth of its part: settled or after the mark.
func partAnswers(plan promspend.Plan, settled, open map[string]float64) []prommodel.Vector {
	answers := make([]prommodel.Vector, len(plan.Queries))
	for i, q := range plan.Queries {
		g := open
		if q.Settled {
			g = settled
		}
		if q.Measure != promspend.Cost {
			g = map[string]float64{"gpt-4o": 1000 * g["gpt-4o"]}
		}
		answers[i] = byModel("model", g)
	}
	return answers
}

func TestAResumedPlanAsksOnlyForWhatCameAfterItsCheckpointAndAddsItUp(t *testing.T) {
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "ml"})
	require.NoError(t, err)
	spec := budget(api.Monthly, "UTC", 1, api.Total)
	step := 15 * time.Second

	// The first run of the period: the whole period, in two parts around a mark 10 minutes back.
	first, err := promspend.NewPlan(spec, at("2026-12-03T12:00:07Z"), src, step)
	require.NoError(t, err)
	first = first.Resume(nil, 10*time.Minute)
	require.Len(t, first.Queries, 6, "3 measures, 2 parts")
	assert.Equal(t, growthOf(src.Series[promspend.Cost], "model", "2d11h49m59s999ms", "15s",
		at("2026-12-03T11:50:00Z").UnixMilli()), first.Queries[0].PromQL, "settled: period start to the mark")
	assert.True(t, first.Queries[0].Settled)
	assert.Equal(t, growthOf(src.Series[promspend.Cost], "model", "9m59s999ms", "15s",
		at("2026-12-03T12:00:00Z").UnixMilli()), first.Queries[3].PromQL, "open: the mark to the last whole step")
	answers := partAnswers(first, map[string]float64{"gpt-4o": 2.5}, map[string]float64{"gpt-4o": 0.25})
	figures, err := first.Figures(answers, nil)
	require.NoError(t, err)
	assert.Equal(t, "2.75", figures["total"].CostUSD)
	assert.Equal(t, int64(2750), figures["total"].InputTokens)
	cp := first.Next(answers)
	require.NotNil(t, cp)
	assert.Equal(t, at("2026-12-03T11:50:00Z"), cp.At.UTC())
	assert.Equal(t, map[string]float64{"gpt-4o": 2.5}, cp.Growth[promspend.Cost])

	// Five minutes on: only the 5 minutes since the checkpoint are settled, and the last 10 are asked again.
	next, err := promspend.NewPlan(spec, at("2026-12-03T12:05:03Z"), src, step)
	require.NoError(t, err)
	next = next.Resume(cp, 10*time.Minute)
	require.Same(t, cp, next.Resumed())
	assert.Equal(t, growthOf(src.Series[promspend.Cost], "model", "4m59s999ms", "15s",
		at("2026-12-03T11:55:00Z").UnixMilli()), next.Queries[0].PromQL)
	answers = partAnswers(next, map[string]float64{"gpt-4o": 0.125}, map[string]float64{"gpt-4o": 0.5})
	figures, err = next.Figures(answers, nil)
	require.NoError(t, err)
	assert.Equal(t, "3.125", figures["total"].CostUSD, "checkpoint 2.5, settled 0.125, open 0.5")
	assert.Equal(t, map[string]float64{"gpt-4o": 2.625}, next.Next(answers).Growth[promspend.Cost])
	assert.Equal(t, map[string]float64{"gpt-4o": 2.5}, cp.Growth[promspend.Cost], "the checkpoint read is not changed")
}

func TestACheckpointOfAnotherPeriodSourceOrStepIsNotResumed(t *testing.T) {
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "ml"})
	require.NoError(t, err)
	other, err := promspend.Preset("litellm", promspend.Selection{Team: "web"})
	require.NoError(t, err)
	spec := budget(api.Monthly, "UTC", 1, api.Total)
	now := at("2026-12-03T12:00:07Z")
	good := func() *promspend.Checkpoint {
		return &promspend.Checkpoint{PeriodStart: at("2026-12-01T00:00:00Z"), At: at("2026-12-03T11:00:00Z"),
			Step: "15s", Source: src.Fingerprint(),
			Growth: map[promspend.Measure]map[string]float64{promspend.Cost: {"gpt-4o": 1}}}
	}
	cases := []struct {
		name string
		edit func(*promspend.Checkpoint)
		ok   bool
	}{
		{"one of this period, source and step", func(*promspend.Checkpoint) {}, true},
		{"one of the previous period", func(c *promspend.Checkpoint) { c.PeriodStart = at("2026-11-01T00:00:00Z") }, false},
		{"one of another source", func(c *promspend.Checkpoint) { c.Source = other.Fingerprint() }, false},
		{"one of another step", func(c *promspend.Checkpoint) { c.Step = "30s" }, false},
		{"one past the mark", func(c *promspend.Checkpoint) { c.At = at("2026-12-03T11:55:00Z") }, false},
		{"one before the period", func(c *promspend.Checkpoint) { c.At = at("2026-11-30T23:00:00Z") }, false},
		{"one off the step", func(c *promspend.Checkpoint) { c.At = at("2026-12-03T11:00:01Z") }, false},
		{"one without growth", func(c *promspend.Checkpoint) { c.Growth = nil }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp := good()
			tc.edit(cp)
			plan, err := promspend.NewPlan(spec, now, src, 15*time.Second)
			require.NoError(t, err)
			plan = plan.Resume(cp, 10*time.Minute)
			if !tc.ok {
				assert.Nil(t, plan.Resumed())
				assert.Contains(t, plan.Queries[0].PromQL, "[2d11h49m59s999ms:15s]", "the whole period again")
				return
			}
			assert.Same(t, cp, plan.Resumed())
			assert.Contains(t, plan.Queries[0].PromQL, "[49m59s999ms:15s]")
		})
	}
}

func TestResumeLeavesALedgerAYoungPeriodAndNoSettleAsTheyAre(t *testing.T) {
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "ml"})
	require.NoError(t, err)
	cases := []struct {
		name   string
		spec   api.Spec
		now    string
		settle time.Duration
	}{
		{"a DailyLedger", budget(api.Monthly, "UTC", 1, api.DailyLedger), "2026-12-03T12:00:00Z", 10 * time.Minute},
		{"a period younger than settle", budget(api.Monthly, "UTC", 1, api.Total), "2026-12-01T00:05:00Z",
			10 * time.Minute},
		{"no settle", budget(api.Monthly, "UTC", 1, api.Total), "2026-12-03T12:00:00Z", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := promspend.NewPlan(tc.spec, at(tc.now), src, 15*time.Second)
			require.NoError(t, err)
			resumed := plan.Resume(nil, tc.settle)
			assert.Equal(t, plan.Queries, resumed.Queries)
			assert.Nil(t, resumed.Next(make([]prommodel.Vector, len(resumed.Queries))))
		})
	}
}

func TestAnOpenWindowWithoutSeriesInEitherPartIsEmptyButOneWithACheckpointIsNot(t *testing.T) {
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "ml"})
	require.NoError(t, err)
	plan, err := promspend.NewPlan(budget(api.Monthly, "UTC", 1, api.Total), at("2026-12-03T12:00:07Z"), src,
		15*time.Second)
	require.NoError(t, err)
	_, err = plan.Resume(nil, 10*time.Minute).Figures(make([]prommodel.Vector, 6), nil)
	require.ErrorIs(t, err, promspend.ErrEmpty)

	cp := &promspend.Checkpoint{PeriodStart: at("2026-12-01T00:00:00Z"), At: at("2026-12-03T11:50:00Z"),
		Step: "15s", Source: src.Fingerprint(), Growth: map[promspend.Measure]map[string]float64{
			promspend.Cost: {"gpt-4o": 1}, promspend.Input: {"gpt-4o": 10}, promspend.Output: {"gpt-4o": 2}}}
	resumed := plan.Resume(cp, 10*time.Minute)
	require.Len(t, resumed.Queries, 3, "nothing to settle: the checkpoint is at the mark")
	figures, err := resumed.Figures(make([]prommodel.Vector, 3), nil)
	require.NoError(t, err, "an idle exporter gone since the checkpoint is not an empty period")
	assert.Equal(t, "1.00", figures["total"].CostUSD)
}

func TestACheckpointWhoseGrowthNoCounterMakesIsNotResumed(t *testing.T) {
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "ml"})
	require.NoError(t, err)
	cases := []struct {
		name   string
		growth map[promspend.Measure]map[string]float64
		err    string
	}{
		{"a negative cost", map[promspend.Measure]map[string]float64{promspend.Cost: {"gpt-4o": -8}},
			`growth["cost"]["gpt-4o"]: -8 is not a non-negative finite number`},
		{"a cost that is not a number", map[promspend.Measure]map[string]float64{promspend.Cost: {"a": math.NaN()}},
			`growth["cost"]["a"]: NaN is not a non-negative finite number`},
		{"an infinite cost", map[promspend.Measure]map[string]float64{promspend.Cost: {"a": math.Inf(1)}},
			`growth["cost"]["a"]: +Inf is not a non-negative finite number`},
		{"a negative token count", map[promspend.Measure]map[string]float64{promspend.Output: {"a": -1}},
			`growth["output"]["a"]: -1 is not a non-negative finite number`},
		{"a fractional token count", map[promspend.Measure]map[string]float64{promspend.Input: {"a": 2.5}},
			`growth["input"]["a"]: 2.5 is not a whole number of tokens from 0 to 2^53`},
		{"a token count past 2^53", map[promspend.Measure]map[string]float64{promspend.Input: {"a": 1 << 54}},
			`growth["input"]["a"]: 1.8014398509481984e+16 is not a whole number of tokens from 0 to 2^53`},
		{"a measure that is none", map[promspend.Measure]map[string]float64{"credit": {"a": 1}},
			`growth["credit"]: not a measure (cost, input or output)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp := &promspend.Checkpoint{PeriodStart: at("2026-12-01T00:00:00Z"), At: at("2026-12-03T11:00:00Z"),
				Step: "15s", Source: src.Fingerprint(), Growth: tc.growth}
			require.EqualError(t, cp.Validate(), tc.err)
			plan, err := promspend.NewPlan(budget(api.Monthly, "UTC", 1, api.Total), at("2026-12-03T12:00:07Z"),
				src, 15*time.Second)
			require.NoError(t, err)
			plan = plan.Resume(cp, 10*time.Minute)
			assert.Nil(t, plan.Resumed())
			assert.Contains(t, plan.Queries[0].PromQL, "[2d11h49m59s999ms:15s]", "the whole period again")
		})
	}
}

func TestNextKeepsNoCheckpointOfGrowthResumeWouldRefuse(t *testing.T) {
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "ml"})
	require.NoError(t, err)
	plan, err := promspend.NewPlan(budget(api.Monthly, "UTC", 1, api.Total), at("2026-12-03T12:00:07Z"), src,
		15*time.Second)
	require.NoError(t, err)
	plan = plan.Resume(nil, 10*time.Minute)
	// A broken Prometheus answering 2.5 tokens: the figures round it, but no checkpoint keeps it.
	answers := partAnswers(plan, map[string]float64{"gpt-4o": 0.0025}, map[string]float64{"gpt-4o": 1})
	_, err = plan.Figures(answers, nil)
	require.NoError(t, err)
	assert.Nil(t, plan.Next(answers))
}

// FuzzResume decodes a stored checkpoint as the spend writer does and goes on from it. Whatever it holds, nothing
// panics; a checkpoint the plan does not use leaves the figures those of the answers alone, and one it uses never
// lowers them; only one it uses can make them fail (a growth no figure can hold); and the next checkpoint, when
// there is one, is one Resume would go on from.
func FuzzResume(f *testing.F) {
	f.Add([]byte(`{"periodStart":"2026-12-01T00:00:00Z","at":"2026-12-03T11:00:00Z","step":"15s",`+
		`"source":"","growth":{"cost":{"gpt-4o":1.5},"input":{"gpt-4o":10},"output":{"gpt-4o":2}}}`), 0.25)
	f.Add([]byte(`{"growth":{"cost":{"":-1e308}}}`), 1.0)
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "ml"})
	require.NoError(f, err)
	spec := budget(api.Monthly, "UTC", 1, api.Total)
	f.Fuzz(func(t *testing.T, stored []byte, g float64) {
		var cp promspend.Checkpoint
		if json.Unmarshal(stored, &cp) != nil || !(g >= 0 && g < 1e9) {
			return
		}
		if cp.Source == "" {
			cp.Source = src.Fingerprint()
		}
		plan, err := promspend.NewPlan(spec, at("2026-12-03T12:00:07Z"), src, 15*time.Second)
		require.NoError(t, err)
		plan = plan.Resume(&cp, 10*time.Minute)
		if plan.Resumed() != nil {
			require.NoError(t, cp.Validate(), "only a checkpoint Validate accepts is resumed")
		}
		answers := partAnswers(plan, map[string]float64{"gpt-4o": g}, map[string]float64{"gpt-4o": g})
		figures, err := plan.Figures(answers, nil)
		if err != nil {
			require.NotNil(t, plan.Resumed(), "only a checkpoint's growth can make answers fail: %v", err)
			return
		}
		alone, err := promspend.NewPlan(spec, at("2026-12-03T12:00:07Z"), src, 15*time.Second)
		require.NoError(t, err)
		alone = alone.Resume(nil, 10*time.Minute)
		want, err := alone.Figures(partAnswers(alone, map[string]float64{"gpt-4o": g},
			map[string]float64{"gpt-4o": g}), nil)
		require.NoError(t, err)
		if plan.Resumed() == nil {
			require.Equal(t, want, figures)
		}
		got, err := money.Parse(figures["total"].CostUSD)
		require.NoError(t, err)
		floor, err := money.Parse(want["total"].CostUSD)
		require.NoError(t, err)
		require.GreaterOrEqual(t, got.Cmp(floor), 0, "a checkpoint never lowers the cost: %s < %s", got, floor)
		require.GreaterOrEqual(t, figures["total"].InputTokens, want["total"].InputTokens)
		require.GreaterOrEqual(t, figures["total"].OutputTokens, want["total"].OutputTokens)
		if next := plan.Next(answers); next != nil {
			require.NoError(t, next.Validate())
		}
	})
}
