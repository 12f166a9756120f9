package v1alpha1

import (
	"cmp"
	"fmt"
	"regexp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
)

// Defaults and bounds that other packages need by name; Default applies these defaults and all the others.
const (
	MaxNamespaces = 50 // the most namespaces status.namespaces lists
	MaxHistory    = 12 // the most finished periods status.history keeps
	// MaxSelectedNamespaces is the most namespaces a ClusterLLMCostBudget may select: its status lists each one it
	// closes (status.enforcement.namespaces, up to 64 bytes a name within etcd's 1.5 MiB object) and its sync
	// answers a ResourceQuota for each, so that the answer stays in proportion to a bounded request.
	MaxSelectedNamespaces = 20_000
	// MaxQuotaNamespaces is the most namespaces a ClusterLLMCostBudget with gate Quota or Both may select: each
	// ResourceQuota comes back in every sync as Metacontroller observed it (about 2.6 KiB, with its status and
	// managedFields) beside its Namespace, and 8,000 of both fit the hook's 32 MiB list limit.
	MaxQuotaNamespaces = 8_000

	DefaultTimeZone            = "UTC"
	DefaultWarnThreshold int32 = 80
	OverBudgetThreshold  int32 = 100

	LimitDecimals = 6 // the most decimals spec.limitUSD may carry
	// MaxResourceNameLength is the longest enforcement resource: quota keys allow 63 characters after "count/".
	MaxResourceNameLength = 63
	// MaxKeyPrefixLength leaves room in a 253-character ConfigMap key for the date DailyLedger appends, "-2026-11-20".
	MaxKeyPrefixLength = 242

	// DefaultMaxAge is costSource.maxAge of a budget with costSource.prometheus: three times the 5 minutes (a third
	// of it) within which the spend writer stamps even unchanged figures, so that one missed stamp is no alarm.
	DefaultMaxAge = "15m"
	// MinMaxAge and MaxMaxAge bound costSource.maxAge: below a minute, a writer's ordinary latency would read as
	// stale; past 31 days, no period's figures can be that old and still be of the period.
	MinMaxAge = time.Minute
	MaxMaxAge = 31 * 24 * time.Hour
	// maxAgeLength bounds costSource.maxAge's text: within it, the grammar cannot overflow a time.Duration.
	maxAgeLength = 16
)

// Default fills every unset field with the default the CRD applies at admission; the hook applies them again so that
// objects stored before a default existed evaluate the same way. costSource.maxAge's default is the hook's alone.
func (s *Spec) Default() {
	s.Period.Type = cmp.Or(s.Period.Type, Monthly)
	s.Period.TimeZone = cmp.Or(s.Period.TimeZone, DefaultTimeZone)
	s.Period.StartDay = cmp.Or(s.Period.StartDay, new(int32(1)))
	s.WarnThresholdPercent = cmp.Or(s.WarnThresholdPercent, new(DefaultWarnThreshold))
	for i := range s.Thresholds {
		s.Thresholds[i].Basis = cmp.Or(s.Thresholds[i].Basis, Actual)
	}
	s.CostSource.Format = cmp.Or(s.CostSource.Format, Total)
	if s.CostSource.Prometheus != nil && s.CostSource.Format != TaskRecords {
		// The one default the CRD cannot apply, since it depends on another field: the spend writer that the
		// stanza feeds stamps each run, so its budgets can tell when it stopped.
		s.CostSource.MaxAge = cmp.Or(s.CostSource.MaxAge, DefaultMaxAge)
	}
	s.Enforcement.Action = cmp.Or(s.Enforcement.Action, ActionNone)
	s.Enforcement.FailurePolicy = cmp.Or(s.Enforcement.FailurePolicy, FailOpen)
	s.Enforcement.Gate = cmp.Or(s.Enforcement.Gate, GatePolicy)
	s.Enforcement.Scope = cmp.Or(s.Enforcement.Scope, ScopeNamespace)
	s.Enforcement.Mode = cmp.Or(s.Enforcement.Mode, ModeDeny)
	s.Enforcement.BlockOn = cmp.Or(s.Enforcement.BlockOn, BlockOnProjected)
}

// PeriodSpec is the calendar of a defaulted spec that passed Validate (which loaded its zone): the one calendar the
// hooks and llmbudget spend share.
func (s *Spec) PeriodSpec() period.Spec {
	loc, _ := period.LoadLocation(s.Period.TimeZone)
	return period.Spec{Kind: s.Period.Type, StartDay: int(*s.Period.StartDay), Location: loc}
}

// MaxAgeDuration is how old spend may be before it is stale: maxAge of a defaulted spec that passed Validate,
// or 0 when none applies.
func (c CostSource) MaxAgeDuration() time.Duration {
	d, _ := time.ParseDuration(c.MaxAge) // 0 for ""
	return d
}

// EffectiveThresholds is spec.thresholds or, if none, the warning threshold and 100%, both on Actual spend.
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

// limitGrammar is how the CRD writes a limit: no sign, no leading zeros, at most 9 digits before the point.
// A billion USD a period is far beyond any LLM budget, and sums of spend stay far inside money's int64 nano-USD.
var limitGrammar = regexp.MustCompile(`^(0|[1-9][0-9]{0,8})(\.[0-9]{1,6})?$`)

// CheckLimit reports why s is not a limit the CRD admits, or nil.
func CheckLimit(s string) error {
	a, err := money.ParseMaxDecimals(s, LimitDecimals)
	if err != nil {
		return err
	}
	if a.Sign() <= 0 {
		return fmt.Errorf("%q must be greater than 0", s)
	}
	if !limitGrammar.MatchString(s) {
		return fmt.Errorf("%q must be written without a sign or leading zeros, with at most 9 digits before the point", s)
	}
	return nil
}

// The messages of the rules that relate fields, each the message of its CEL twin in the CRD.
const (
	msgNoLimit      = "spec.limitUSD is required unless spec.tokenLimits sets input, output or total"
	msgModelNoLimit = "each modelLimits entry needs limitUSD or a tokenLimits field"
	msgWeeklyDay    = "period.startDay must be between 1 (Monday) and 7 (Sunday) when period.type is Weekly"
	msgKeyRequired  = "costSource.key is required when costSource.format is Total"
	msgKeyPrefix    = "costSource.keyPrefix is only allowed when costSource.format is DailyLedger"
	// A TaskRecords source is its selector: a ConfigMap's fields beside it would be read by nothing.
	msgNotForRecords = " is not used when costSource.format is TaskRecords: " +
		"the spend is the usage of the TaskRecords costSource.selector matches"
	msgMaxAgeRecords = "costSource.maxAge is not used when costSource.format is TaskRecords: TaskRecords are read " +
		"as they are, and carry no " + AnnotationSpendAsOf + " stamp to age"
	msgSelectorRequired      = "costSource.selector is required when costSource.format is TaskRecords"
	msgSelectorOnly          = "costSource.selector is only allowed when costSource.format is TaskRecords"
	msgConfigMapNameRequired = "costSource.configMapName is required unless costSource.format is TaskRecords"
	msgSpendSourceRequired   = "costSource.spendSource is required unless costSource.format is TaskRecords"
	msgResources             = "enforcement.resources must list at least one resource " +
		"when enforcement.action is BlockNewWorkloads"
	msgLabelledScope = "enforcement.scope Labelled needs enforcement.gate Policy: " +
		"a ResourceQuota counts every object of a kind and cannot select by label"
)

// Validate checks a defaulted LLMCostBudget spec against every API rule: the `validate` tags of its fields, then
// the rules that relate fields. Each error names its field as spec.<path>, as the API server would.
func (s *Spec) Validate() field.ErrorList {
	path := field.NewPath("spec")
	var errs field.ErrorList
	// CEL twin: crd.LLMCostBudget's rules on spec.namespaceSelector, spendSource and configMapName.
	if s.NamespaceSelector != nil {
		errs = append(errs, field.Forbidden(path.Child("namespaceSelector"), "only for "+ClusterKind))
	}
	errs = append(errs, s.validate(path)...)
	src := path.Child("costSource")
	if s.CostSource.ConfigMapName == "" && s.CostSource.Format != TaskRecords {
		errs = append(errs, field.Required(src.Child("configMapName"), msgConfigMapNameRequired))
	}
	if s.CostSource.SpendSource != "" && s.CostSource.Format != TaskRecords {
		errs = append(errs, field.Forbidden(src.Child("spendSource"),
			"only for "+ClusterKind+"; name the ConfigMap in configMapName"))
	}
	return errs
}

// ValidateCluster is Validate for a ClusterLLMCostBudget spec: it needs a valid namespaceSelector and a
// spendSource instead of a configMapName (or, with format TaskRecords, a selector of records in those namespaces),
// and refuses scope Labelled (the budget label names a team budget).
func (s *Spec) ValidateCluster() field.ErrorList {
	path := field.NewPath("spec")
	// CEL twin: crd.ClusterLLMCostBudget's rules on spec.namespaceSelector, costSource and enforcement.scope.
	errs := validateSelector(s.NamespaceSelector, path.Child("namespaceSelector"))
	errs = append(errs, s.validate(path)...)
	src := path.Child("costSource")
	if s.CostSource.ConfigMapName != "" && s.CostSource.Format != TaskRecords {
		errs = append(errs, field.Forbidden(src.Child("configMapName"),
			"not used by "+ClusterKind+"; set spendSource, the value of the label "+LabelSpendSource))
	}
	if s.CostSource.SpendSource == "" && s.CostSource.Format != TaskRecords {
		errs = append(errs, field.Required(src.Child("spendSource"), msgSpendSourceRequired))
	}
	if s.CostSource.Prometheus != nil {
		errs = append(errs, field.Forbidden(src.Child("prometheus"), msgPrometheusCluster))
	}
	if s.Enforcement.Scope == ScopeLabelled { // the common rules admit it, the cluster kind does not
		errs = append(errs, field.NotSupported(path.Child("enforcement", "scope"), s.Enforcement.Scope,
			[]string{string(ScopeNamespace)}))
	}
	return errs
}

// validateSelector checks a label selector as the API server checks one, and as the hooks read it.
func validateSelector(s *LabelSelector, path *field.Path) field.ErrorList {
	if s == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	sel := s.Meta()
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil && len(errs) == 0 {
		errs = append(errs, field.Invalid(path, sel, err.Error()))
	}
	return errs
}

// validate lists the broken rules common to both kinds: the fields' tags, then the rules that relate fields.
func (s *Spec) validate(path *field.Path) field.ErrorList {
	errs := validateFields(s, path)
	// CEL twin: the rule on spec that names spec.limitUSD.
	if s.LimitUSD == nil && !s.TokenLimits.HasTokenLimit() {
		errs = append(errs, field.Required(path.Child("limitUSD"), msgNoLimit))
	}
	errs = append(errs, s.Period.relations(path.Child("period"))...)
	errs = append(errs, duplicateThresholds(s.Thresholds, path.Child("thresholds"))...)
	errs = append(errs, modelRelations(s.ModelLimits, path.Child("modelLimits"))...)
	errs = append(errs, s.CostSource.relations(path.Child("costSource"))...)
	errs = append(errs, s.Enforcement.relations(path.Child("enforcement"))...)
	return errs
}

// relations is the CEL twin of the rule on spec.period: a weekly period starts on a weekday.
func (p Period) relations(path *field.Path) field.ErrorList {
	// The tags bound the day by the longest calendar, Monthly's; only a day inside it is worth a second message.
	week, _ := period.StartDayRange(period.Weekly)
	last, _ := period.StartDayRange(period.Monthly)
	if d := p.StartDay; d != nil && p.Type == Weekly && *d > int32(week) && *d <= int32(last) {
		return field.ErrorList{field.Invalid(path.Child("startDay"), *d, msgWeeklyDay)}
	}
	return nil
}

// duplicateThresholds is the CEL twin of the rule on spec.thresholds: no (percent, basis) pair twice.
func duplicateThresholds(ts []Threshold, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[Threshold]bool, len(ts))
	for i, t := range ts {
		if seen[t] {
			errs = append(errs, field.Duplicate(path.Index(i), t))
		}
		seen[t] = true
	}
	return errs
}

// modelRelations is the twin of spec.modelLimits' list-map key (no model twice) and of the CEL rule on each entry
// (a limit in US dollars or tokens).
func modelRelations(ms []ModelLimit, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]bool, len(ms))
	for i, m := range ms {
		item := path.Index(i)
		if m.Model != "" && seen[m.Model] {
			// The list is a map keyed by model: the API server names the entry and its key.
			errs = append(errs, field.Duplicate(item, map[string]string{"model": m.Model}))
		}
		seen[m.Model] = true
		if m.LimitUSD == nil && !m.TokenLimits.HasTokenLimit() {
			errs = append(errs, field.Required(item, msgModelNoLimit))
		}
	}
	return errs
}

// relations is the CEL twin of the rules on costSource that both kinds share: which fields a format reads. Which
// of configMapName and spendSource is set is the kind's.
func (c CostSource) relations(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	records := c.Format == TaskRecords
	for _, f := range []struct {
		name string
		set  bool
	}{{"configMapName", c.ConfigMapName != ""}, {"spendSource", c.SpendSource != ""}, {"key", c.Key != ""}} {
		if f.set && records {
			errs = append(errs, field.Forbidden(path.Child(f.name), "costSource."+f.name+msgNotForRecords))
		}
	}
	if c.Key == "" && c.Format == Total {
		errs = append(errs, field.Required(path.Child("key"), msgKeyRequired))
	}
	if c.KeyPrefix != "" && c.Format != DailyLedger {
		errs = append(errs, field.Forbidden(path.Child("keyPrefix"), msgKeyPrefix))
	}
	if c.MaxAge != "" && records {
		errs = append(errs, field.Forbidden(path.Child("maxAge"), msgMaxAgeRecords))
	}
	if c.Prometheus != nil && records {
		errs = append(errs, field.Forbidden(path.Child("prometheus"), "costSource.prometheus"+msgNotForRecords))
	} else if c.Prometheus != nil {
		errs = append(errs, c.Prometheus.relations(path.Child("prometheus"))...)
	}
	sel := path.Child("selector")
	switch {
	case records && c.Selector == nil:
		errs = append(errs, field.Required(sel, msgSelectorRequired))
	case records:
		errs = append(errs, validateSelector(c.Selector, sel)...)
	case c.Selector != nil:
		errs = append(errs, field.Forbidden(sel, msgSelectorOnly))
	}
	return errs
}

// relations is the CEL twin of the rules on spec.enforcement, and of resources' list-set type (no resource twice).
func (e Enforcement) relations(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	resources := path.Child("resources")
	if e.Action == BlockNewWorkloads && len(e.Resources) == 0 {
		errs = append(errs, field.Required(resources, msgResources))
	}
	seen := make(map[string]bool, len(e.Resources))
	for i, r := range e.Resources {
		if seen[r] {
			errs = append(errs, field.Duplicate(resources.Index(i), r))
		}
		seen[r] = true
	}
	if e.Scope == ScopeLabelled && e.Gate != GatePolicy {
		errs = append(errs, field.Invalid(path.Child("scope"), e.Scope, msgLabelledScope))
	}
	return errs
}
