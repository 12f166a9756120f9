package v1alpha1

import (
	"cmp"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/go-playground/validator/v10"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

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
)

// Default fills every unset field with the default the CRD applies at admission; the hook applies them again so that
// objects stored before a default existed evaluate the same way.
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

// PeriodSpec is the calendar of a defaulted spec that passed Validate (which loaded its zone): the one calendar the
// hooks and llmbudget spend share.
func (s *Spec) PeriodSpec() period.Spec {
	loc, _ := period.LoadLocation(s.Period.TimeZone)
	return period.Spec{Kind: s.Period.Type, StartDay: int(*s.Period.StartDay), Location: loc}
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

// FieldError is one broken rule, named by the field's JSON path.
type FieldError struct {
	Path    string
	Message string
}

func (e FieldError) Error() string { return e.Path + ": " + e.Message }

// ValidationError lists every broken rule of a spec, in a stable order.
type ValidationError []FieldError

func (e ValidationError) Error() string {
	parts := make([]string, len(e))
	for i, fe := range e {
		parts[i] = fe.Error()
	}
	return strings.Join(parts, "; ")
}

var validate = func() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		return name
	})
	// The tags this package adds, on string fields; message words their failures.
	for tag, valid := range map[string]func(string) bool{
		"usd":          func(s string) bool { return CheckLimit(s) == nil },
		"dnssubdomain": func(s string) bool { return len(validation.IsDNS1123Subdomain(s)) == 0 },
		"configmapkey": func(s string) bool { return len(validation.IsConfigMapKey(s)) == 0 },
		"labelvalue":   func(s string) bool { return len(validation.IsValidLabelValue(s)) == 0 },
		"modelname":    ValidModelName,
		"timezone": func(s string) bool {
			_, err := period.LoadLocation(s)
			return err == nil
		},
		// Lower-case `<plural>` or `<plural>.<group>`, as a quota's count/<resource> expects.
		"resourcename": func(s string) bool {
			plural, group, hasGroup := strings.Cut(s, ".")
			return len(validation.IsDNS1123Label(plural)) == 0 && (!hasGroup || len(validation.IsDNS1123Subdomain(group)) == 0)
		},
	} {
		if err := v.RegisterValidation(tag, func(fl validator.FieldLevel) bool { return valid(fl.Field().String()) }); err != nil {
			panic(err)
		}
	}
	return v
}()

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

// Validate checks a defaulted LLMCostBudget spec against every API rule; its ValidationError names each broken field
// as spec.<path>.
func (s *Spec) Validate() error {
	var errs ValidationError
	if s.NamespaceSelector != nil {
		errs = append(errs, FieldError{"spec.namespaceSelector", "is only for " + ClusterKind})
	}
	if s.CostSource.SpendSource != "" {
		errs = append(errs, FieldError{"spec.costSource.spendSource", "is only for " + ClusterKind + "; name the ConfigMap in configMapName"})
	}
	return s.validate(errs)
}

// ValidateCluster is Validate for a ClusterLLMCostBudget spec: it needs a valid namespaceSelector and a
// spendSource instead of a configMapName, and refuses scope Labelled (the budget label names a team budget).
func (s *Spec) ValidateCluster() error {
	var errs ValidationError
	if s.NamespaceSelector == nil {
		errs = append(errs, FieldError{"spec.namespaceSelector", "is required"})
	} else if _, err := metav1.LabelSelectorAsSelector(s.NamespaceSelector); err != nil {
		errs = append(errs, FieldError{"spec.namespaceSelector", err.Error()})
	}
	if s.CostSource.ConfigMapName != "" {
		errs = append(errs, FieldError{"spec.costSource.configMapName", "is not used by " + ClusterKind + "; set spendSource, the value of the label " + LabelSpendSource})
	}
	if s.Enforcement.Scope == ScopeLabelled {
		errs = append(errs, FieldError{"spec.enforcement.scope", "must be Namespace for " + ClusterKind})
	}
	return s.validate(errs)
}

// validate lists the broken rules common to both kinds, then the kind's own.
func (s *Spec) validate(kindErrs ValidationError) error {
	var errs ValidationError
	// Struct returns an error other than ValidationErrors only when given a non-struct.
	verrs, _ := validate.Struct(s).(validator.ValidationErrors)
	for _, fe := range verrs {
		// The validator's namespace starts with the type's name: "Spec.period.startDay".
		errs = append(errs, FieldError{"spec" + strings.TrimPrefix(fe.Namespace(), "Spec"), s.message(fe)})
	}
	// The rules that relate two fields.
	if s.LimitUSD == nil && !s.TokenLimits.HasTokenLimit() {
		errs = append(errs, FieldError{"spec.limitUSD", "is required unless a tokenLimits field is set"})
	}
	if d := s.Period.StartDay; d != nil {
		last, want := period.StartDayRange(s.Period.Type)
		if last == 0 { // ignored for Daily, but the CRD bounds it all the same
			last, want = period.StartDayRange(period.Monthly)
		}
		if *d < 1 || int(*d) > last {
			errs = append(errs, FieldError{"spec.period.startDay", fmt.Sprintf("must be %s for %s, got %d", want, s.Period.Type, *d)})
		}
	}
	seen := make(map[Threshold]int, len(s.Thresholds))
	for i, t := range s.Thresholds {
		if j, dup := seen[t]; dup {
			errs = append(errs, FieldError{fmt.Sprintf("spec.thresholds[%d]", i), fmt.Sprintf("duplicates spec.thresholds[%d] (%d%% %s)", j, t.Percent, t.Basis)})
		}
		seen[t] = i
	}
	models := make(map[string]int, len(s.ModelLimits))
	for i, m := range s.ModelLimits {
		if j, dup := models[m.Model]; dup && m.Model != "" {
			errs = append(errs, FieldError{fmt.Sprintf("spec.modelLimits[%d].model", i), fmt.Sprintf("%q duplicates spec.modelLimits[%d]", m.Model, j)})
		}
		models[m.Model] = i
		if m.LimitUSD == nil && !m.TokenLimits.HasTokenLimit() {
			errs = append(errs, FieldError{fmt.Sprintf("spec.modelLimits[%d]", i), "needs limitUSD or a tokenLimits field"})
		}
	}
	if s.Enforcement.Scope == ScopeLabelled && s.Enforcement.Gate != GatePolicy {
		// A ResourceQuota counts every object of a kind: it cannot tell labels apart.
		errs = append(errs, FieldError{"spec.enforcement.scope", fmt.Sprintf("Labelled needs gate Policy (a ResourceQuota cannot select by label), got gate %s", s.Enforcement.Gate)})
	}
	if s.CostSource.KeyPrefix != "" && s.CostSource.Format != DailyLedger {
		errs = append(errs, FieldError{"spec.costSource.keyPrefix", "is only used with format DailyLedger"})
	}
	if n := len(s.CostSource.KeyPrefix); n > MaxKeyPrefixLength {
		errs = append(errs, FieldError{"spec.costSource.keyPrefix", fmt.Sprintf("must be at most %d characters, got %d", MaxKeyPrefixLength, n)})
	}
	// The rules the CRD's list type and item length make on enforcement.resources: no resource twice, none too long
	// for a quota.
	if s.Enforcement.Action == BlockNewWorkloads && s.Enforcement.Resources != nil && len(s.Enforcement.Resources) == 0 {
		// An absent list is the validator's required_if; an empty one is this.
		errs = append(errs, FieldError{"spec.enforcement.resources", "must list at least one resource when action is BlockNewWorkloads"})
	}
	resources := make(map[string]int, len(s.Enforcement.Resources))
	for i, r := range s.Enforcement.Resources {
		path := fmt.Sprintf("spec.enforcement.resources[%d]", i)
		if len(r) > MaxResourceNameLength {
			errs = append(errs, FieldError{path, fmt.Sprintf("must be at most %d characters, got %d", MaxResourceNameLength, len(r))})
		}
		if j, dup := resources[r]; dup {
			errs = append(errs, FieldError{path, fmt.Sprintf("%q duplicates spec.enforcement.resources[%d]", r, j)})
		}
		resources[r] = i
	}
	errs = append(errs, kindErrs...)
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func (s *Spec) message(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required", "required_without":
		return "is required"
	case "required_if":
		field, value, _ := strings.Cut(fe.Param(), " ")
		return fmt.Sprintf("is required when %s is %s", strings.ToLower(field[:1])+field[1:], value)
	case "min", "max":
		bound := map[string]string{"min": "at least", "max": "at most"}[fe.Tag()]
		if fe.Kind() == reflect.Slice {
			return fmt.Sprintf("must have %s %s items", bound, fe.Param())
		}
		return fmt.Sprintf("must be %s %s", bound, fe.Param())
	case "oneof":
		return fmt.Sprintf("%q is not one of %s", fmt.Sprint(fe.Value()), strings.ReplaceAll(fe.Param(), " ", ", "))
	case "usd":
		return fmt.Sprintf("must be a decimal greater than 0 with at most %d decimals: %v", LimitDecimals, CheckLimit(fmt.Sprint(fe.Value())))
	case "timezone":
		_, err := period.LoadLocation(fmt.Sprint(fe.Value()))
		return fmt.Sprintf("must be an IANA time zone: %v", err)
	case "dnssubdomain":
		return fmt.Sprintf("%q must be a ConfigMap name (lower-case DNS subdomain)", fe.Value())
	case "configmapkey":
		return fmt.Sprintf("%q must be a valid ConfigMap key (letters, digits, '-', '_', '.')", fe.Value())
	case "labelvalue":
		return fmt.Sprintf("%q must be a label value (at most 63 letters, digits, '-', '_', '.')", fe.Value())
	case "modelname":
		return fmt.Sprintf("%q must be a model name: 1-%d printable characters without spaces or quotes", fe.Value(), MaxModelNameLength)
	case "resourcename":
		return fmt.Sprintf("%q must be <plural> or <plural>.<group> in lower case, for example jobs.batch", fe.Value())
	}
	return fmt.Sprintf("fails rule %q", fe.Tag())
}
