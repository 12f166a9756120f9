package v1alpha1

import "cmp"

// Defaults the CRD applies at admission; the hook applies them again so that
// objects stored before a default existed evaluate the same way.
const (
	DefaultTimeZone            = "UTC"
	DefaultStartDay      int32 = 1
	DefaultWarnThreshold int32 = 80
	OverBudgetThreshold  int32 = 100
	DefaultPeriodType          = Monthly
	DefaultSourceFormat        = Total
	DefaultAction              = ActionNone
	DefaultFailurePolicy       = FailOpen
	DefaultGate                = GatePolicy
	DefaultScope               = ScopeNamespace
)

// Default fills every unset field with its documented default.
func (s *Spec) Default() {
	s.Period.Type = cmp.Or(s.Period.Type, DefaultPeriodType)
	s.Period.TimeZone = cmp.Or(s.Period.TimeZone, DefaultTimeZone)
	s.Period.StartDay = cmp.Or(s.Period.StartDay, new(DefaultStartDay))
	s.WarnThresholdPercent = cmp.Or(s.WarnThresholdPercent, new(DefaultWarnThreshold))
	for i := range s.Thresholds {
		s.Thresholds[i].Basis = cmp.Or(s.Thresholds[i].Basis, Actual)
	}
	s.CostSource.Format = cmp.Or(s.CostSource.Format, DefaultSourceFormat)
	s.Enforcement.Action = cmp.Or(s.Enforcement.Action, DefaultAction)
	s.Enforcement.FailurePolicy = cmp.Or(s.Enforcement.FailurePolicy, DefaultFailurePolicy)
	s.Enforcement.Gate = cmp.Or(s.Enforcement.Gate, DefaultGate)
	s.Enforcement.Scope = cmp.Or(s.Enforcement.Scope, DefaultScope)
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
