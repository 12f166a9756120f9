package v1alpha1

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-playground/validator/v10"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/llmbudget/llmbudget/internal/period"
)

// rule is a validation of one field that the validator's own tags do not have: a `validate` tag names it, and its
// message is the one the CRD's CEL twin (the marker beside the same tag) gives.
type rule struct {
	valid   func(string) bool
	message string
}

// rules are the custom tags, registered on the validator under their names.
var rules = map[string]rule{
	"decimal": {func(s string) bool { return CheckLimit(s) == nil },
		"must be a decimal greater than 0 with at most 6 decimals (and at most 9 digits before the point)"},
	"iana_zone": {func(s string) bool { _, err := period.LoadLocation(s); return err == nil },
		"must be an IANA time zone, for example Europe/Berlin"},
	"model_name": {ValidModelName,
		"must be a model name: 1-253 printable characters without spaces or quotes"},
	"configmap_name": {func(s string) bool { return valid(validation.IsDNS1123Subdomain(s)) },
		"must be a ConfigMap name (lower-case DNS subdomain)"},
	"configmap_key": {func(s string) bool { return valid(validation.IsConfigMapKey(s)) },
		"must be a valid ConfigMap key (letters, digits, '-', '_', '.')"},
	"label_value": {func(s string) bool { return valid(validation.IsValidLabelValue(s)) },
		"must be a label value (at most 63 letters, digits, '-', '_', '.')"},
	"namespace_name": {func(s string) bool { return valid(validation.IsDNS1123Label(s)) },
		"must be a namespace name (lower-case DNS label)"},
	"resource_name": {validResourceName,
		"must be <plural> or <plural>.<group> in lower case, for example jobs.batch"},
	"max_age": {validMaxAge,
		"must be a duration of whole hours, minutes or seconds from 1m to 744h (31 days), like 15m or 1h30m"},
	"step": {validStep,
		"must be one number and unit (ms, s or m) between 1s and 15m that divides 15m, like 15s or 1m"},
	"prom_label": {ValidLabelName,
		"must be a Prometheus label name (letters, digits and '_', not starting with a digit)"},
	"promql_series": {ValidSeries,
		"must be a PromQL series selector: a metric name and optional label matchers in braces"},
	"promql_matcher": {ValidMatcher,
		"must be a PromQL label matcher: a label name, one of = != =~ !~, and a double-quoted value"},
}

// fields is the validator of the spec's per-field rules, the `validate` tags beside the CRD's markers. It names a
// field by its JSON name, so that a field.Path reads as the API server's.
var fields = newValidator()

func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	for tag, r := range rules {
		err := v.RegisterValidation(tag, func(fl validator.FieldLevel) bool { return r.valid(fl.Field().String()) })
		if err != nil {
			panic(fmt.Sprintf("register validation %s: %v", tag, err)) // a tag name the validator refuses: a typo
		}
	}
	return v
}

// validateFields checks v's `validate` tags, and those of the structs below it, reporting each broken rule at path
// (v's own path) as the CRD reports it.
func validateFields(v any, path *field.Path) field.ErrorList {
	err := fields.Struct(v)
	var broken validator.ValidationErrors
	if !errors.As(err, &broken) {
		if err != nil {
			return field.ErrorList{field.InternalError(path, err)}
		}
		return nil
	}
	errs := make(field.ErrorList, 0, len(broken))
	for _, fe := range broken {
		errs = append(errs, fieldError(fe, path))
	}
	// The validator walks a map in Go's random order; the API server and the hook's output name its keys in order.
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		pa, _, inMapA := strings.Cut(a.Field, "[")
		pb, _, inMapB := strings.Cut(b.Field, "[")
		if inMapA && inMapB && pa == pb && !isIndex(a.Field[len(pa):]) && !isIndex(b.Field[len(pb):]) {
			return strings.Compare(a.Field, b.Field)
		}
		return 0
	})
	return errs
}

// isIndex reports whether a path's suffix starts with a list index, like "[0]", rather than a map key.
func isIndex(suffix string) bool {
	end := strings.IndexByte(suffix, ']')
	if end < 0 {
		return false
	}
	_, err := strconv.Atoi(suffix[1:end])
	return err == nil
}

// fieldError is one broken tag as a field.Error of the type the API server gives for the CRD's twin of the tag.
func fieldError(fe validator.FieldError, root *field.Path) *field.Error {
	path := childPath(root, fe.Namespace())
	value := fe.Value()
	if v := reflect.ValueOf(value); v.Kind() == reflect.Pointer && !v.IsNil() {
		value = v.Elem().Interface()
	}
	switch tag := fe.Tag(); {
	case tag == "required":
		return field.Required(path, "")
	case tag == "oneof":
		return field.NotSupported(path, value, strings.Fields(fe.Param()))
	case tag == "max" && (fe.Kind() == reflect.Slice || fe.Kind() == reflect.Map):
		n, _ := strconv.Atoi(fe.Param())
		return field.TooMany(path, reflect.ValueOf(fe.Value()).Len(), n)
	case tag == "max" && fe.Kind() == reflect.String:
		n, _ := strconv.Atoi(fe.Param())
		return field.TooLong(path, "", n)
	case tag == "min":
		return field.Invalid(path, value, "must be greater than or equal to "+fe.Param())
	case tag == "max":
		return field.Invalid(path, value, "must be less than or equal to "+fe.Param())
	default:
		if r, ok := rules[tag]; ok {
			return field.Invalid(path, value, r.message)
		}
		return field.Invalid(path, value, "fails the rule "+tag)
	}
}

// childPath turns a validator namespace ("Spec.thresholds[0].percent", the root struct's Go name first) into the
// field.Path below root it names. A map key may hold dots and brackets: it ends at the "]" that ends the namespace
// or comes before "." or "[".
func childPath(root *field.Path, namespace string) *field.Path {
	path := root
	_, rest, _ := strings.Cut(namespace, ".") // the root's own name
	for rest != "" {
		if rest[0] == '.' {
			rest = rest[1:]
			continue
		}
		if rest[0] != '[' {
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			path, rest = path.Child(rest[:end]), rest[end:]
			continue
		}
		end := 1
		for end < len(rest) && !closesKey(rest, end) {
			end++
		}
		inner := rest[1:min(end, len(rest))]
		if n, err := strconv.Atoi(inner); err == nil {
			path = path.Index(n)
		} else {
			path = path.Key(inner)
		}
		rest = rest[min(end+1, len(rest)):]
	}
	return path
}

// closesKey reports whether rest[i] is the "]" that ends a bracket: the namespace's end, or before "." or "[".
func closesKey(rest string, i int) bool {
	return rest[i] == ']' && (i+1 == len(rest) || rest[i+1] == '.' || rest[i+1] == '[')
}

// validMaxAge is costSource.maxAge's rule: Go duration units h, m and s with whole numbers, as in 15m or 1h30m,
// between MinMaxAge and MaxMaxAge. Fractions and sub-second units say nothing a minute-bounded age needs.
func validMaxAge(s string) bool {
	if !maxAgeGrammar.MatchString(s) {
		return false
	}
	d, err := time.ParseDuration(s)
	return err == nil && d >= MinMaxAge && d <= MaxMaxAge
}

var maxAgeGrammar = regexp.MustCompile(`^([0-9]{1,6}(h|m|s))+$`)

// validStep is costSource.prometheus.step's rule: one number and unit, at least a second, dividing 15 minutes.
func validStep(s string) bool {
	if !stepGrammar.MatchString(s) {
		return false
	}
	d, err := time.ParseDuration(s)
	return err == nil && d >= time.Second && StepDivides%d == 0
}

// validResourceName is lower-case `<plural>` or `<plural>.<group>`, as a quota's count/<resource> expects.
func validResourceName(s string) bool {
	plural, group, hasGroup := strings.Cut(s, ".")
	return valid(validation.IsDNS1123Label(plural)) && (!hasGroup || valid(validation.IsDNS1123Subdomain(group)))
}

// valid reads apimachinery's validation functions, which list what is wrong: nothing is.
func valid(problems []string) bool { return len(problems) == 0 }
