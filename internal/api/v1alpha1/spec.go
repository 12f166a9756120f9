package v1alpha1

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
)

// Defaults and bounds that other packages need by name; Default applies these defaults and all the others.
const (
	MaxNamespaces = 50 // the most namespaces status.namespaces lists
	MaxHistory    = 12 // the most finished periods status.history keeps

	DefaultTimeZone            = "UTC"
	DefaultWarnThreshold int32 = 80
	OverBudgetThreshold  int32 = 100

	LimitDecimals = 6 // the most decimals spec.limitUSD may carry
	// MaxResourceNameLength is the longest enforcement resource: quota keys allow 63 characters after "count/".
	MaxResourceNameLength = 63
	// MaxKeyPrefixLength leaves room in a 253-character ConfigMap key for the date DailyLedger appends, "-2026-11-20".
	MaxKeyPrefixLength = 242

	// DefaultMaxAge is costSource.maxAge of a budget with costSource.prometheus: three runs of the spend writer's
	// default 5-minute schedule, so that one failed or late run is no alarm and three are.
	DefaultMaxAge = "15m"
	// MinMaxAge and MaxMaxAge bound costSource.maxAge: below a minute, a writer's ordinary latency would read as
	// stale; past 31 days, no period's figures can be that old and still be of the period.
	MinMaxAge = time.Minute
	MaxMaxAge = 31 * 24 * time.Hour
	// maxAgeLength bounds costSource.maxAge's text: within it, the grammar cannot overflow a time.Duration.
	maxAgeLength = 16
)

// maxAgeGrammar is the CRD's grammar of costSource.maxAge: Go duration units h, m and s with whole numbers, as in
// 15m or 1h30m. Fractions and sub-second units say nothing a minute-bounded age needs.
var maxAgeGrammar = regexp.MustCompile(`^([0-9]{1,6}(h|m|s))+$`)

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

// validMaxAge is the CRD's rule for costSource.maxAge: its grammar, and between MinMaxAge and MaxMaxAge.
func validMaxAge(s string) bool {
	if !maxAgeGrammar.MatchString(s) {
		return false
	}
	d, err := time.ParseDuration(s)
	return err == nil && d >= MinMaxAge && d <= MaxMaxAge
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

// The CRD's own messages for its rules, so that the hook and the API server word a broken rule alike.
const (
	msgLimit         = "must be a decimal greater than 0 with at most 6 decimals (and at most 9 digits before the point)"
	msgNoLimit       = "spec.limitUSD is required unless spec.tokenLimits sets input, output or total"
	msgModelNoLimit  = "each modelLimits entry needs limitUSD or a tokenLimits field"
	msgTimeZone      = "must be an IANA time zone, for example Europe/Berlin"
	msgWeeklyDay     = "period.startDay must be between 1 (Monday) and 7 (Sunday) when period.type is Weekly"
	msgModelName     = "must be a model name: 1-253 printable characters without spaces or quotes"
	msgConfigMapName = "must be a ConfigMap name (lower-case DNS subdomain)"
	msgConfigMapKey  = "must be a valid ConfigMap key (letters, digits, '-', '_', '.')"
	msgLabelValue    = "must be a label value (at most 63 letters, digits, '-', '_', '.')"
	msgResourceName  = "must be <plural> or <plural>.<group> in lower case, for example jobs.batch"
	msgKeyRequired   = "costSource.key is required when costSource.format is Total"
	msgKeyPrefix     = "costSource.keyPrefix is only allowed when costSource.format is DailyLedger"
	// A TaskRecords source is its selector: a ConfigMap's fields beside it would be read by nothing.
	msgNotForRecords = " is not used when costSource.format is TaskRecords: " +
		"the spend is the usage of the TaskRecords costSource.selector matches"
	msgMaxAgeRecords = "costSource.maxAge is not used when costSource.format is TaskRecords: TaskRecords are read " +
		"as they are, and carry no " + AnnotationSpendAsOf + " stamp to age"
	msgMaxAge = "must be a duration of whole hours, minutes or seconds from 1m to 744h (31 days), " +
		"like 15m or 1h30m"
	msgSelectorRequired      = "costSource.selector is required when costSource.format is TaskRecords"
	msgSelectorOnly          = "costSource.selector is only allowed when costSource.format is TaskRecords"
	msgConfigMapNameRequired = "costSource.configMapName is required unless costSource.format is TaskRecords"
	msgSpendSourceRequired   = "costSource.spendSource is required unless costSource.format is TaskRecords"
	msgResources             = "enforcement.resources must list at least one resource " +
		"when enforcement.action is BlockNewWorkloads"
	msgLabelledScope = "enforcement.scope Labelled needs enforcement.gate Policy: " +
		"a ResourceQuota counts every object of a kind and cannot select by label"
)

// The most items the CRD admits in each list.
const (
	maxThresholds  = 10
	maxModelLimits = 20
	maxResources   = 20
)

// Validate checks a defaulted LLMCostBudget spec against every API rule; each error names its field as
// spec.<path>, in the order of the spec's fields, as the API server would.
func (s *Spec) Validate() field.ErrorList {
	path := field.NewPath("spec")
	var errs field.ErrorList
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
	errs := validateSelector(s.NamespaceSelector.Meta(), path.Child("namespaceSelector"))
	errs = append(errs, s.validate(path)...)
	src := path.Child("costSource")
	if s.CostSource.ConfigMapName != "" && s.CostSource.Format != TaskRecords {
		errs = append(errs, field.Forbidden(src.Child("configMapName"),
			"not used by "+ClusterKind+"; set spendSource, the value of the label "+LabelSpendSource))
	}
	switch {
	case s.CostSource.Format == TaskRecords:
		// The common rules refuse a spendSource beside TaskRecords.
	case s.CostSource.SpendSource == "":
		errs = append(errs, field.Required(src.Child("spendSource"), msgSpendSourceRequired))
	case !valid(validation.IsValidLabelValue(s.CostSource.SpendSource)):
		errs = append(errs, field.Invalid(src.Child("spendSource"), s.CostSource.SpendSource, msgLabelValue))
	}
	if s.CostSource.Prometheus != nil {
		errs = append(errs, field.Forbidden(src.Child("prometheus"), msgPrometheusCluster))
	}
	if s.Enforcement.Scope == ScopeLabelled { // the common rules admit it, the cluster kind does not
		errs = append(errs, enum(path.Child("enforcement", "scope"), s.Enforcement.Scope, ScopeNamespace)...)
	}
	return errs
}

// validateSelector checks a cluster budget's namespaceSelector as the API server checks a label selector, and as
// the hooks read it.
func validateSelector(sel *metav1.LabelSelector, path *field.Path) field.ErrorList {
	if sel == nil {
		return field.ErrorList{field.Required(path, "")}
	}
	errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil && len(errs) == 0 {
		errs = append(errs, field.Invalid(path, sel, err.Error()))
	}
	return errs
}

// validate lists the broken rules common to both kinds, field by field.
func (s *Spec) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.LimitUSD != nil {
		errs = append(errs, validateLimit(*s.LimitUSD, path.Child("limitUSD"))...)
	} else if !s.TokenLimits.HasTokenLimit() {
		errs = append(errs, field.Required(path.Child("limitUSD"), msgNoLimit))
	}
	errs = append(errs, s.Period.validate(path.Child("period"))...)
	if w := s.WarnThresholdPercent; w == nil {
		errs = append(errs, field.Required(path.Child("warnThresholdPercent"), ""))
	} else {
		errs = append(errs, inRange(int64(*w), 1, 100, path.Child("warnThresholdPercent"))...)
	}
	errs = append(errs, validateThresholds(s.Thresholds, path.Child("thresholds"))...)
	errs = append(errs, s.TokenLimits.validate(path.Child("tokenLimits"))...)
	errs = append(errs, validateModelLimits(s.ModelLimits, path.Child("modelLimits"))...)
	errs = append(errs, s.CostSource.validate(path.Child("costSource"))...)
	errs = append(errs, s.Enforcement.validate(path.Child("enforcement"))...)
	return errs
}

func validateLimit(limit string, path *field.Path) field.ErrorList {
	if CheckLimit(limit) != nil {
		return field.ErrorList{field.Invalid(path, limit, msgLimit)}
	}
	return nil
}

// inRange is the CRD's minimum and maximum of an integer field.
func inRange(v, lo, hi int64, path *field.Path) field.ErrorList {
	switch {
	case v < lo:
		return field.ErrorList{field.Invalid(path, v, fmt.Sprintf("must be greater than or equal to %d", lo))}
	case v > hi:
		return field.ErrorList{field.Invalid(path, v, fmt.Sprintf("must be less than or equal to %d", hi))}
	}
	return nil
}

func (p Period) validate(path *field.Path) field.ErrorList {
	errs := enum(path.Child("type"), p.Type, Daily, Weekly, Monthly)
	if _, err := period.LoadLocation(p.TimeZone); err != nil {
		errs = append(errs, field.Invalid(path.Child("timeZone"), p.TimeZone, msgTimeZone))
	}
	if d := p.StartDay; d != nil {
		// The CRD bounds the day by the longest calendar, Monthly's, even for Daily, which ignores it.
		last, _ := period.StartDayRange(period.Monthly)
		errs = append(errs, inRange(int64(*d), 1, int64(last), path.Child("startDay"))...)
		if week, _ := period.StartDayRange(period.Weekly); p.Type == Weekly && *d > int32(week) && *d <= int32(last) {
			errs = append(errs, field.Invalid(path.Child("startDay"), *d, msgWeeklyDay))
		}
	}
	return errs
}

func validateThresholds(ts []Threshold, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(ts) > maxThresholds {
		errs = append(errs, field.TooMany(path, len(ts), maxThresholds))
	}
	seen := make(map[Threshold]bool, len(ts))
	for i, t := range ts {
		item := path.Index(i)
		errs = append(errs, inRange(int64(t.Percent), 1, 1000, item.Child("percent"))...)
		errs = append(errs, enum(item.Child("basis"), t.Basis, Actual, Forecasted)...)
		if seen[t] {
			errs = append(errs, field.Duplicate(item, t))
		}
		seen[t] = true
	}
	return errs
}

func (t *TokenLimits) validate(path *field.Path) field.ErrorList {
	if t == nil {
		return nil
	}
	var errs field.ErrorList
	for _, l := range []struct {
		name  string
		value *int64
	}{{"input", t.Input}, {"output", t.Output}, {"total", t.Total}} {
		if l.value != nil && *l.value < 0 {
			errs = append(errs, field.Invalid(path.Child(l.name), *l.value, "must be greater than or equal to 0"))
		}
	}
	return errs
}

func validateModelLimits(ms []ModelLimit, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(ms) > maxModelLimits {
		errs = append(errs, field.TooMany(path, len(ms), maxModelLimits))
	}
	seen := make(map[string]bool, len(ms))
	for i, m := range ms {
		item := path.Index(i)
		switch {
		case m.Model == "":
			errs = append(errs, field.Required(item.Child("model"), ""))
		case !ValidModelName(m.Model):
			errs = append(errs, field.Invalid(item.Child("model"), m.Model, msgModelName))
		case seen[m.Model]:
			// The list is a map keyed by model: the API server names the entry and its key.
			errs = append(errs, field.Duplicate(item, map[string]string{"model": m.Model}))
		}
		seen[m.Model] = true
		if m.LimitUSD != nil {
			errs = append(errs, validateLimit(*m.LimitUSD, item.Child("limitUSD"))...)
		} else if !m.TokenLimits.HasTokenLimit() {
			errs = append(errs, field.Required(item, msgModelNoLimit))
		}
		errs = append(errs, m.TokenLimits.validate(item.Child("tokenLimits"))...)
	}
	return errs
}

// validate checks what both kinds' cost sources share; which of configMapName and spendSource is set is the kind's,
// except that format TaskRecords reads neither: it needs a selector and refuses the ConfigMap's fields.
func (c CostSource) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	records := c.Format == TaskRecords
	switch {
	case c.ConfigMapName != "" && records:
		errs = append(errs, field.Forbidden(path.Child("configMapName"), "costSource.configMapName"+msgNotForRecords))
	case c.ConfigMapName != "" && !valid(validation.IsDNS1123Subdomain(c.ConfigMapName)):
		errs = append(errs, field.Invalid(path.Child("configMapName"), c.ConfigMapName, msgConfigMapName))
	}
	if c.SpendSource != "" && records {
		errs = append(errs, field.Forbidden(path.Child("spendSource"), "costSource.spendSource"+msgNotForRecords))
	}
	errs = append(errs, enum(path.Child("format"), c.Format, Total, DailyLedger, TaskRecords)...)
	switch {
	case c.Key != "" && records:
		errs = append(errs, field.Forbidden(path.Child("key"), "costSource.key"+msgNotForRecords))
	case c.Key == "" && c.Format == Total:
		errs = append(errs, field.Required(path.Child("key"), msgKeyRequired))
	case c.Key != "" && !valid(validation.IsConfigMapKey(c.Key)):
		errs = append(errs, field.Invalid(path.Child("key"), c.Key, msgConfigMapKey))
	}
	prefix := path.Child("keyPrefix")
	switch {
	case c.KeyPrefix == "":
	case c.Format != DailyLedger:
		errs = append(errs, field.Forbidden(prefix, msgKeyPrefix))
	case len(c.KeyPrefix) > MaxKeyPrefixLength:
		errs = append(errs, field.TooLong(prefix, c.KeyPrefix, MaxKeyPrefixLength))
	case !valid(validation.IsConfigMapKey(c.KeyPrefix)):
		errs = append(errs, field.Invalid(prefix, c.KeyPrefix, msgConfigMapKey))
	}
	switch age := path.Child("maxAge"); {
	case c.MaxAge == "":
	case records:
		errs = append(errs, field.Forbidden(age, msgMaxAgeRecords))
	case len(c.MaxAge) > maxAgeLength:
		errs = append(errs, field.TooLong(age, "", maxAgeLength))
	case !validMaxAge(c.MaxAge):
		errs = append(errs, field.Invalid(age, c.MaxAge, msgMaxAge))
	}
	if c.Prometheus != nil && records {
		errs = append(errs, field.Forbidden(path.Child("prometheus"), "costSource.prometheus"+msgNotForRecords))
	} else if c.Prometheus != nil {
		errs = append(errs, c.Prometheus.validate(path.Child("prometheus"))...)
	}
	sel := path.Child("selector")
	switch {
	case records && c.Selector == nil:
		errs = append(errs, field.Required(sel, msgSelectorRequired))
	case records:
		errs = append(errs, validateSelector(c.Selector.Meta(), sel)...)
	case c.Selector != nil:
		errs = append(errs, field.Forbidden(sel, msgSelectorOnly))
	}
	return errs
}

func (e Enforcement) validate(path *field.Path) field.ErrorList {
	errs := enum(path.Child("action"), e.Action, ActionNone, BlockNewWorkloads)
	errs = append(errs, validateResources(e, path.Child("resources"))...)
	errs = append(errs, enum(path.Child("failurePolicy"), e.FailurePolicy, FailOpen, FailClosed)...)
	errs = append(errs, enum(path.Child("gate"), e.Gate, GatePolicy, GateQuota, GateBoth)...)
	errs = append(errs, enum(path.Child("scope"), e.Scope, ScopeNamespace, ScopeLabelled)...)
	errs = append(errs, enum(path.Child("mode"), e.Mode, ModeDeny, ModeWarn)...)
	if e.Scope == ScopeLabelled && e.Gate != GatePolicy {
		errs = append(errs, field.Invalid(path.Child("scope"), e.Scope, msgLabelledScope))
	}
	return errs
}

// validateResources checks enforcement.resources as the CRD's set of quota resource names: none twice, none too
// long for a quota's count/<resource> key.
func validateResources(e Enforcement, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if e.Action == BlockNewWorkloads && len(e.Resources) == 0 {
		errs = append(errs, field.Required(path, msgResources))
	}
	if len(e.Resources) > maxResources {
		errs = append(errs, field.TooMany(path, len(e.Resources), maxResources))
	}
	seen := make(map[string]bool, len(e.Resources))
	for i, r := range e.Resources {
		item := path.Index(i)
		switch {
		case len(r) > MaxResourceNameLength:
			errs = append(errs, field.TooLong(item, r, MaxResourceNameLength))
		case !validResourceName(r):
			errs = append(errs, field.Invalid(item, r, msgResourceName))
		case seen[r]:
			errs = append(errs, field.Duplicate(item, r))
		}
		seen[r] = true
	}
	return errs
}

// validResourceName is lower-case `<plural>` or `<plural>.<group>`, as a quota's count/<resource> expects.
func validResourceName(s string) bool {
	plural, group, hasGroup := strings.Cut(s, ".")
	return valid(validation.IsDNS1123Label(plural)) && (!hasGroup || valid(validation.IsDNS1123Subdomain(group)))
}

// valid reads apimachinery's validation functions, which list what is wrong: nothing is.
func valid(problems []string) bool { return len(problems) == 0 }

// enum is the CRD's enum of a string field: value must be one of allowed.
func enum[T ~string](path *field.Path, value T, allowed ...T) field.ErrorList {
	if slices.Contains(allowed, value) {
		return nil
	}
	return field.ErrorList{field.NotSupported(path, value, allowed)}
}
