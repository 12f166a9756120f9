package source_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

var rateStamp = spend.Stamp{Source: "ConfigMap team-ml/llm-spend", AsOf: time.Date(2026, 12, 6, 6, 0, 10, 0, time.UTC)}

func TestABurnRateIsUsedOnlyBesideItsOwnFigures(t *testing.T) {
	for _, tc := range []struct {
		name, annotation string
		stamp            spend.Stamp
		unused           string // a part of Unused; empty when the rate is used
	}{
		{name: "the writer's rate for these figures is used",
			annotation: `{"asOf":"2026-12-06T06:00:10Z","sampledAt":"2026-12-06T06:00:03.5Z","window":"1m0s",` +
				`"usdPerHour":"12.5","models":{"gpt-4o":"10"}}`},
		{name: "a rate left from earlier figures is not",
			annotation: `{"asOf":"2026-12-06T05:59:55Z","sampledAt":"2026-12-06T05:59:50Z","window":"1m0s",` +
				`"usdPerHour":"12.5"}`,
			unused: "it is for the figures of 2026-12-06T05:59:55Z, not for these (llmbudget.dev/spend-as-of " +
				"2026-12-06T06:00:10Z)"},
		{name: "a rate beside figures without a stamp is not",
			annotation: `{"asOf":"2026-12-06T06:00:10Z","sampledAt":"2026-12-06T06:00:03Z","window":"1m","usdPerHour":"1"}`,
			stamp:      spend.Stamp{Source: "ConfigMap team-ml/llm-spend", Problem: "has no annotation"},
			unused:     "absent or unreadable"},
		{name: "a sample after its figures is not",
			annotation: `{"asOf":"2026-12-06T06:00:10Z","sampledAt":"2026-12-06T06:00:12Z","window":"1m","usdPerHour":"1"}`,
			unused:     "is after its figures' time"},
		{name: "a window past an hour is not",
			annotation: `{"asOf":"2026-12-06T06:00:10Z","sampledAt":"2026-12-06T06:00:03Z","window":"2h","usdPerHour":"1"}`,
			unused:     `window "2h" is not a duration from 0 to 1h0m0s`},
		{name: "a negative rate is not",
			annotation: `{"asOf":"2026-12-06T06:00:10Z","sampledAt":"2026-12-06T06:00:03Z","window":"1m","usdPerHour":"-1"}`,
			unused:     `usdPerHour: "-1" is negative`},
		{name: "an unknown field is not",
			annotation: `{"asOf":"2026-12-06T06:00:10Z","sampledAt":"2026-12-06T06:00:03Z","window":"1m","usdPerHour":"1",` +
				`"boost":true}`,
			unused: `unknown field "boost"`},
		{name: "a model name with a space is not",
			annotation: `{"asOf":"2026-12-06T06:00:10Z","sampledAt":"2026-12-06T06:00:03Z","window":"1m","usdPerHour":"1",` +
				`"models":{"a b":"1"}}`,
			unused: `models["a b"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stamp := tc.stamp
			if stamp.Source == "" {
				stamp = rateStamp
			}
			r := source.RateOf(stamp.Source, map[string]string{api.AnnotationBurnRate: tc.annotation}, stamp)
			require.NotNil(t, r)
			if tc.unused != "" {
				assert.Contains(t, r.Unused, tc.unused)
				assert.Equal(t, spend.Rate{Unused: r.Unused}, *r, "an unused rate says nothing else")
				return
			}
			assert.Empty(t, r.Unused)
			assert.Equal(t, "12.50", r.USDPerHour.String())
			assert.Equal(t, time.Minute, r.Window)
			assert.Equal(t, time.Date(2026, 12, 6, 6, 0, 3, 500_000_000, time.UTC), r.SampledAt)
			assert.Equal(t, "10.00", r.Models["gpt-4o"].String())
		})
	}
}

func TestASourceWithoutABurnRateSaysNone(t *testing.T) {
	assert.Nil(t, source.RateOf("ConfigMap team-ml/llm-spend", map[string]string{}, rateStamp))
}

// FuzzRateOf checks, for any annotation, that a rate is either unused with a reason, or within its bounds and no
// later than its figures.
func FuzzRateOf(f *testing.F) {
	f.Add(`{"asOf":"2026-12-06T06:00:10Z","sampledAt":"2026-12-06T06:00:03.5Z","window":"1m0s","usdPerHour":"12.5"}`)
	f.Add(`{"asOf":"2026-12-06T06:00:10Z","sampledAt":"2026-12-06T06:00:11Z","window":"1h","usdPerHour":"0",` +
		`"models":{"m":"1"}}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, annotation string) {
		r := source.RateOf("ConfigMap a/b", map[string]string{api.AnnotationBurnRate: annotation}, rateStamp)
		require.NotNil(t, r)
		if r.Unused != "" {
			return
		}
		assert.Positive(t, r.Window)
		assert.LessOrEqual(t, r.Window, time.Hour)
		assert.GreaterOrEqual(t, r.USDPerHour.Sign(), 0)
		assert.LessOrEqual(t, len(r.Models), 20)
		assert.False(t, r.SampledAt.After(rateStamp.AsOf.Add(time.Second)))
	})
}

func TestSummedBurnRatesProjectFromTheirRateWeightedSample(t *testing.T) {
	at := time.Date(2026, 12, 6, 6, 0, 0, 0, time.UTC)
	rate := func(usd string, sampled time.Time, models map[string]string) *spend.Rate {
		r := &spend.Rate{SampledAt: sampled, Window: time.Minute, USDPerHour: must(money.Parse(usd))}
		for name, v := range models {
			if r.Models == nil {
				r.Models = map[string]money.Amount{}
			}
			r.Models[name] = must(money.Parse(v))
		}
		return r
	}
	for _, tc := range []struct {
		name  string
		rates []*spend.Rate
		want  *spend.Rate
	}{
		{name: "no source states a rate", rates: nil, want: nil},
		{
			name: "100 USD/h sampled at 0 s and 300 USD/h at 4 s burn 400 USD/h from 3 s",
			rates: []*spend.Rate{rate("100", at, map[string]string{"m": "10"}),
				rate("300", at.Add(4*time.Second), map[string]string{"m": "20"})},
			want: rate("400", at.Add(3*time.Second), map[string]string{"m": "30"}),
		},
		{
			name:  "a source burning nothing weighs nothing",
			rates: []*spend.Rate{rate("0", at.Add(time.Minute), nil), rate("60", at, nil)},
			want:  rate("60", at, nil),
		},
		{
			name:  "an unused rate makes the sum unused",
			rates: []*spend.Rate{rate("60", at, nil), {Unused: "ConfigMap b/s has annotation ... that is not used"}},
			want:  &spend.Rate{Unused: "ConfigMap b/s has annotation ... that is not used"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, source.SumRates(tc.rates))
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
