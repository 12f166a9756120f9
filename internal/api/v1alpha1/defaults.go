package v1alpha1

import (
	"cmp"

	"github.com/llmbudget/llmbudget/internal/period"
)

// Defaults other packages need by name; Default applies these and the rest.
const (
	DefaultTimeZone            = "UTC"
	DefaultWarnThreshold int32 = 80
	OverBudgetThreshold  int32 = 100
)

// Default fills every unset field with the default the CRD applies at
// admission; the hook applies them again so that objects stored before a
// default existed evaluate the same way.
func (s *Spec) Default() {
	s.Period.Type = cmp.Or(s.Period.Type, Monthly)
	s.Period.TimeZone = cmp.Or(s.Period.TimeZone, DefaultTimeZone)
	s.Period.StartDay = cmp.Or(s.Period.StartDay, new(int32(1)))
	s.WarnThresholdPercent = cmp.Or(s.WarnThresholdPercent, new(DefaultWarnThreshold))
	for i := range s.Thresholds {
		s.Thresholds[i].Basis = cmp.Or(s.Thresholds[i].Basis, Actual)
	}
	s.CostSource.Format = cmp.Or(s.CostSource.Format, Total)
	s.Enforcement.Action = cmp.Or(s.Enforcement.Action, ActionNone)
	s.Enforcement.FailurePolicy = cmp.Or(s.Enforcement.FailurePolicy, FailOpen)
	s.Enforcement.Gate = cmp.Or(s.Enforcement.Gate, GatePolicy)
	s.Enforcement.Scope = cmp.Or(s.Enforcement.Scope, ScopeNamespace)
}

// PeriodSpec is the calendar of a defaulted spec that passed Validate (which
// loaded its zone): the one calendar the hooks and llmbudget spend share.
func (s *Spec) PeriodSpec() period.Spec {
	loc, _ := period.LoadLocation(s.Period.TimeZone)
	return period.Spec{Kind: period.Kind(s.Period.Type), StartDay: int(*s.Period.StartDay), Location: loc}
}

// EffectiveThresholds is spec.thresholds, or when none are listed the warning
// threshold and 100%, both on Actual spend.
func (s *Spec) EffectiveThresholds() []Threshold {
	if len(s.Thresholds) > 0 {
		return s.Thresholds
	}
	warn := *cmp.Or(s.WarnThresholdPercent, new(DefaultWarnThreshold))
	if warn == OverBudgetThreshold {
		return []Threshold{{Percent: OverBudgetThreshold, Basis: Actual}}
	}
	return []Threshold{{Percent: warn, Basis: Actual}, {Percent: OverBudgetThreshold, Basis: Actual}}
}

// HasTokenLimit reports whether any token limit is set.
func (t *TokenLimits) HasTokenLimit() bool {
	return t != nil && (t.Input != nil || t.Output != nil || t.Total != nil)
}

// Gates lists the gates g puts in force: Policy, Quota, or both.
func (g Gate) Gates() []Gate {
	if g == GateBoth {
		return []Gate{GatePolicy, GateQuota}
	}
	return []Gate{g}
}
