package promspend_test

import (
	"testing"
	"time"

	prommodel "github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/promspend"
)

func litellm(t *testing.T) promspend.Source {
	t.Helper()
	src, err := promspend.Preset("litellm", promspend.Selection{Team: "ml"})
	require.NoError(t, err)
	return src
}

func TestARatePlanLooksBackItsWindowFromTheFiguresEnd(t *testing.T) {
	for _, tc := range []struct {
		name       string
		now        string
		window     time.Duration
		ok         bool
		start, end string
	}{
		{name: "a minute back from the last whole step", now: "2026-11-20T12:00:07Z", window: time.Minute, ok: true,
			start: "2026-11-20T11:59:00Z", end: "2026-11-20T12:00:00Z"},
		{name: "no further back than the period's start", now: "2026-11-01T00:00:30Z", window: time.Minute, ok: true,
			start: "2026-11-01T00:00:00Z", end: "2026-11-01T00:00:30Z"},
		{name: "nothing in the period's first step", now: "2026-11-01T00:00:10Z", window: time.Minute},
		{name: "nothing for a window that is not whole steps", now: "2026-11-20T12:00:07Z", window: 20 * time.Second},
		{name: "nothing for no window", now: "2026-11-20T12:00:07Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := promspend.NewPlan(budget(api.Monthly, "UTC", 1, api.Total), at(tc.now), litellm(t), 15*time.Second)
			require.NoError(t, err)
			rp, ok := p.RatePlan(tc.window)
			require.Equal(t, tc.ok, ok)
			if !ok {
				return
			}
			require.Len(t, rp.Windows, 1)
			assert.Equal(t, at(tc.start), rp.Windows[0].Start.UTC())
			assert.Equal(t, at(tc.end), rp.Windows[0].End.UTC())
			last := rp.Queries[len(rp.Queries)-1]
			assert.Equal(t, promspend.Sample, last.Measure)
			assert.Contains(t, last.PromQL, `max(timestamp(litellm_spend_metric_total{team="ml"} @ `)
		})
	}
}

func TestTheBurnRateIsTheWindowsGrowthPerHourFromItsLatestSample(t *testing.T) {
	p, err := promspend.NewPlan(budget(api.Monthly, "UTC", 1, api.Total), at("2026-11-20T12:00:07Z"), litellm(t),
		15*time.Second)
	require.NoError(t, err)
	rp, ok := p.RatePlan(time.Minute)
	require.True(t, ok)
	answers := make([]prommodel.Vector, len(rp.Queries))
	for i, q := range rp.Queries {
		switch q.Measure {
		case promspend.Cost:
			answers[i] = prommodel.Vector{
				{Metric: prommodel.Metric{"model": "gpt-4o"}, Value: 1.5},
				{Metric: prommodel.Metric{"model": "mini"}, Value: 0.5},
			}
		case promspend.Sample:
			answers[i] = prommodel.Vector{{Value: prommodel.SampleValue(at("2026-11-20T11:59:58Z").Unix()) + 0.25}}
		}
	}
	br, err := rp.BurnRate(answers, nil, []string{"gpt-4o", "other"})
	require.NoError(t, err)
	assert.Equal(t, &api.BurnRate{
		AsOf: "2026-11-20T12:00:07Z", SampledAt: "2026-11-20T11:59:58.25Z", Window: "1m0s", USDPerHour: "120.00",
		Models: map[string]string{"gpt-4o": "90.00", "other": "0.00"},
	}, br)
	assert.True(t, br.Burning())

	answers[len(answers)-1] = nil
	br, err = rp.BurnRate(answers, nil, nil)
	require.NoError(t, err)
	assert.Nil(t, br, "without a sample there is nothing to project from")
}

func TestABurnRateOfZeroIsNotBurning(t *testing.T) {
	assert.False(t, api.BurnRate{USDPerHour: "0.00", Models: map[string]string{"m": "0"}}.Burning())
	assert.True(t, api.BurnRate{USDPerHour: "0.00", Models: map[string]string{"m": "0.000000001"}}.Burning())
}
