package source

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/text"
)

// The bounds of a burn rate a source may state: a window no longer than the writer could have meant (its rate
// would say nothing of the burn now), and no more models than a budget can limit.
const (
	maxRateWindow = time.Hour
	maxRateModels = 20
)

// RateOf reads the burn rate of the spend source named source from its annotations, for the figures stamp
// dates: nil when it states none, and a Rate whose Unused says why when it cannot be used. A rate is used only
// beside the figures it was measured with (its asOf is their stamp's), and only from a sample no later than
// that stamp: a rate left from other figures, or a sample dated ahead of them, would project from nothing read.
func RateOf(source string, annotations map[string]string, stamp spend.Stamp) *spend.Rate {
	v, ok := annotations[api.AnnotationBurnRate]
	if !ok {
		return nil
	}
	r, err := parseRate(v, stamp)
	if err != nil {
		return &spend.Rate{Unused: fmt.Sprintf("%s has annotation %s that is not used: %v", source,
			api.AnnotationBurnRate, err)}
	}
	return r
}

func parseRate(v string, stamp spend.Stamp) (*spend.Rate, error) {
	var br api.BurnRate
	if err := decode.Strict([]byte(v), &br, ""); err != nil {
		return nil, err
	}
	asOf, err := time.Parse(time.RFC3339, br.AsOf)
	switch {
	case err != nil:
		return nil, fmt.Errorf("asOf %s is not an RFC 3339 time", text.Quote(br.AsOf))
	case stamp.AsOf.IsZero() || !asOf.Equal(stamp.AsOf):
		return nil, fmt.Errorf("it is for the figures of %s, not for these (%s %s)", br.AsOf,
			api.AnnotationSpendAsOf, stampText(stamp))
	}
	sampled, err := time.Parse(time.RFC3339Nano, br.SampledAt)
	switch {
	case err != nil:
		return nil, fmt.Errorf("sampledAt %s is not an RFC 3339 time", text.Quote(br.SampledAt))
	case sampled.After(asOf.Add(time.Second)): // asOf is truncated to the second
		return nil, fmt.Errorf("sampledAt %s is after its figures' time %s", br.SampledAt, br.AsOf)
	}
	window, err := time.ParseDuration(br.Window)
	if err != nil || window <= 0 || window > maxRateWindow {
		return nil, fmt.Errorf("window %s is not a duration from 0 to %s", text.Quote(br.Window), maxRateWindow)
	}
	r := &spend.Rate{SampledAt: sampled, Window: window}
	if r.USDPerHour, err = money.Parse(br.USDPerHour); err != nil {
		return nil, fmt.Errorf("usdPerHour: %w", err)
	}
	if len(br.Models) > maxRateModels {
		return nil, fmt.Errorf("models: %d models, more than the %d a budget limits", len(br.Models), maxRateModels)
	}
	for _, name := range slices.Sorted(maps.Keys(br.Models)) {
		rate, err := money.Parse(br.Models[name])
		if err != nil || !api.ValidModelName(name) {
			return nil, fmt.Errorf("models[%s]: not a model name and a rate in USD per hour", text.Quote(name))
		}
		if r.Models == nil {
			r.Models = map[string]money.Amount{}
		}
		r.Models[name] = rate
	}
	return r, nil
}

func stampText(s spend.Stamp) string {
	if s.AsOf.IsZero() {
		return "absent or unreadable"
	}
	return s.AsOf.UTC().Format(time.RFC3339)
}

// SumRates is the burn rate of spend summed over sources, each stating its own: their rates added, by model too,
// projected from their rate-weighted sample time, the instant from which the summed rate, run alone, gives the
// sum of each source's own projection. A source without a rate adds nothing (it may be one no writer keeps: its
// spend is still measured), and one whose rate is unused makes the sum unused, naming it. nil without any.
func SumRates(rates []*spend.Rate) *spend.Rate {
	var sum spend.Rate
	weighted := new(big.Int) // sum of rate x sample time, in nano-USD per hour x Unix nanoseconds
	for _, r := range rates {
		switch {
		case r.Unused != "":
			return &spend.Rate{Unused: r.Unused}
		case r.Window > sum.Window:
			sum.Window = r.Window
		}
		sum.USDPerHour = sum.USDPerHour.Add(r.USDPerHour)
		weighted.Add(weighted, new(big.Int).Mul(big.NewInt(r.USDPerHour.Nanos()), big.NewInt(r.SampledAt.UnixNano())))
		for name, m := range r.Models {
			if sum.Models == nil {
				sum.Models = map[string]money.Amount{}
			}
			sum.Models[name] = sum.Models[name].Add(m)
		}
		if sum.SampledAt.IsZero() || r.SampledAt.After(sum.SampledAt) {
			sum.SampledAt = r.SampledAt // the latest, unless the rates weigh it otherwise
		}
	}
	if len(rates) == 0 {
		return nil
	}
	if total := sum.USDPerHour.Nanos(); total > 0 {
		sum.SampledAt = time.Unix(0, new(big.Int).Quo(weighted, big.NewInt(total)).Int64()).UTC()
	}
	return &sum
}
