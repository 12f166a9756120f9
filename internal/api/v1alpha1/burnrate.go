package v1alpha1

import "strings"

// BurnRate is the value of a spend ConfigMap's annotation AnnotationBurnRate: how fast the spend grew in the
// window before its figures, as the spend writer measured it. It is written with the figures, by the same
// writer, so that whoever cannot write the figures cannot write it either.
type BurnRate struct {
	// AsOf is the AnnotationSpendAsOf of the figures it goes with, to the second: a rate left beside other figures
	// is not used.
	AsOf string `json:"asOf"`
	// SampledAt is the latest sample the figures count (RFC 3339 with fractional seconds): the spend is projected
	// from this instant, not from AsOf, which is later by up to a scrape interval and a step.
	SampledAt string `json:"sampledAt"`
	// Window is the span the rate was measured over, a Go duration like "1m0s".
	Window string `json:"window"`
	// USDPerHour is the budget's rate of spend, a decimal of at most 6 decimals.
	USDPerHour string `json:"usdPerHour"`
	// Models is the rate of each model the budget limits in US dollars, by model name.
	Models map[string]string `json:"models,omitempty"`
}

// Burning reports whether the rate says any spend: the budget's or a model's rate is not zero.
func (b BurnRate) Burning() bool {
	zero := func(s string) bool { return strings.Trim(s, "0.") == "" }
	if !zero(b.USDPerHour) {
		return true
	}
	for _, r := range b.Models {
		if !zero(r) {
			return true
		}
	}
	return false
}
