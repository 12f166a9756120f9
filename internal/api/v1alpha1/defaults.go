package v1alpha1

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
	if s.Period.Type == "" {
		s.Period.Type = DefaultPeriodType
	}
	if s.Period.TimeZone == "" {
		s.Period.TimeZone = DefaultTimeZone
	}
	if s.Period.StartDay == nil {
		d := DefaultStartDay
		s.Period.StartDay = &d
	}
	if s.WarnThresholdPercent == nil {
		w := DefaultWarnThreshold
		s.WarnThresholdPercent = &w
	}
	for i := range s.Thresholds {
		if s.Thresholds[i].Basis == "" {
			s.Thresholds[i].Basis = Actual
		}
	}
	if s.CostSource.Format == "" {
		s.CostSource.Format = DefaultSourceFormat
	}
	if s.Enforcement.Action == "" {
		s.Enforcement.Action = DefaultAction
	}
	if s.Enforcement.FailurePolicy == "" {
		s.Enforcement.FailurePolicy = DefaultFailurePolicy
	}
	if s.Enforcement.Gate == "" {
		s.Enforcement.Gate = DefaultGate
	}
	if s.Enforcement.Scope == "" {
		s.Enforcement.Scope = DefaultScope
	}
}

// EffectiveThresholds is spec.thresholds, or when none are listed the warning
// threshold and 100%, both on Actual spend.
func (s *Spec) EffectiveThresholds() []Threshold {
	if len(s.Thresholds) > 0 {
		return s.Thresholds
	}
	warn := DefaultWarnThreshold
	if s.WarnThresholdPercent != nil {
		warn = *s.WarnThresholdPercent
	}
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
