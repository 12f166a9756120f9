package v1alpha1

import (
	"maps"
	"regexp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaults and bounds of costSource.prometheus.
const (
	DefaultStep      = 15 * time.Second
	DefaultPricesKey = "prices.yaml"
	// StepDivides is what every step divides, so that steps fall on every period's and day's boundaries.
	StepDivides = 15 * time.Minute

	maxSelectorLength = 1024 // a series selector or an extra matcher
	maxLabelValue     = 1024 // a selector field's value, matched exactly
	maxMatchers       = 16   // extra matchers, and pod labels
)

// The grammar of the PromQL the stanza holds, the same regular expressions as the CRD's CEL rules (both RE2): a
// label matcher is `name op "value"` with a double-quoted value, a series selector a metric name with optional
// matchers in braces.
const (
	labelNameRE = `[a-zA-Z_][a-zA-Z0-9_]*`
	matcherRE   = labelNameRE + `\s*(=~|!~|!=|=)\s*"([^"\\]|\\.)*"`
	seriesRE    = `[a-zA-Z_:][a-zA-Z0-9_:]*(\{\s*(` + matcherRE + `(\s*,\s*` + matcherRE + `)*\s*,?)?\s*\})?`
	stepRE      = `[1-9][0-9]{0,5}(ms|s|m)`
)

var (
	labelNameGrammar = regexp.MustCompile(`^` + labelNameRE + `$`)
	matcherGrammar   = regexp.MustCompile(`^` + matcherRE + `$`)
	seriesGrammar    = regexp.MustCompile(`^` + seriesRE + `$`)
	stepGrammar      = regexp.MustCompile(`^` + stepRE + `$`)
)

// The CRD's messages for the stanza's rules.
const (
	msgPrometheusCluster = "not used by " + ClusterKind + ": it sums the spend sources of its namespaces, " +
		"each written for its LLMCostBudget"
	msgSourceOrSeries = "costSource.prometheus needs exactly one of source and series"
	msgSelectorNeeded = "costSource.prometheus.selector is required with a source: name the team, key, namespace, " +
		"pod labels or service whose spend this is, or write {} for every series of the exporter"
	msgSelectorSeries = "costSource.prometheus.selector narrows a source's series; " +
		"write the matchers of your own series into them"
	msgSeriesEmpty  = "costSource.prometheus.series needs at least one of cost, input and output"
	msgSeries       = `must be a PromQL series selector: a metric name and optional label matchers in braces`
	msgMatcher      = `must be a PromQL label matcher: a label name, one of = != =~ !~, and a double-quoted value`
	msgLabelName    = "must be a Prometheus label name (letters, digits and '_', not starting with a digit)"
	msgPricesNeeded = "costSource.prometheus.prices is required when the source counts tokens only " +
		"(vllm, otel-genai, or series without cost)"
	msgPricesUnused = "costSource.prometheus.prices is only used when the source counts tokens only " +
		"(vllm, otel-genai, or series without cost)"
	msgStep      = "must be one number and unit (ms, s or m) between 1s and 15m that divides 15m, like 15s or 1m"
	msgNamespace = "must be a namespace name (lower-case DNS label)"
)

// TokensOnly reports whether the source has no cost counter, so that its tokens are priced from a table.
func (p *PrometheusSource) TokensOnly() bool {
	if p.Series != nil {
		return p.Series.Cost == ""
	}
	return p.Source == PresetVLLM || p.Source == PresetOTelGenAI
}

// StepDuration is the evaluation step: Step, or DefaultStep when unset. It is valid when the stanza is.
func (p *PrometheusSource) StepDuration() time.Duration {
	if p.Step == "" {
		return DefaultStep
	}
	d, _ := time.ParseDuration(p.Step)
	return d
}

// ValidMatcher reports whether s is a PromQL label matcher in the grammar the CRD admits, like env="prod".
func ValidMatcher(s string) bool { return len(s) <= maxSelectorLength && matcherGrammar.MatchString(s) }

// ValidSeries reports whether s is a series selector in the grammar the CRD admits, like cost_total{env="prod"}.
func ValidSeries(s string) bool { return len(s) <= maxSelectorLength && seriesGrammar.MatchString(s) }

// ValidLabelName reports whether s is a Prometheus label name in the classic grammar, which needs no quoting.
func ValidLabelName(s string) bool { return labelNameGrammar.MatchString(s) }

func (p *PrometheusSource) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (p.Source == "") == (p.Series == nil) {
		errs = append(errs, field.Required(path, msgSourceOrSeries))
	}
	if p.Source != "" {
		errs = append(errs, enum(path.Child("source"), p.Source, PresetLiteLLM, PresetVLLM, PresetOTelGenAI)...)
	}
	errs = append(errs, p.Series.validate(path.Child("series"))...)
	sel := path.Child("selector")
	switch {
	case p.Source != "" && p.Selector == nil:
		errs = append(errs, field.Required(sel, msgSelectorNeeded))
	case p.Series != nil && p.Selector != nil:
		errs = append(errs, field.Forbidden(sel, msgSelectorSeries))
	}
	errs = append(errs, p.Selector.validate(sel)...)
	switch prices := path.Child("prices"); {
	case p.Source == "" && p.Series == nil:
	case p.TokensOnly() && p.Prices == nil:
		errs = append(errs, field.Required(prices, msgPricesNeeded))
	case !p.TokensOnly() && p.Prices != nil:
		errs = append(errs, field.Forbidden(prices, msgPricesUnused))
	}
	errs = append(errs, p.Prices.validate(path.Child("prices"))...)
	if p.Step != "" && !validStep(p.Step) {
		errs = append(errs, field.Invalid(path.Child("step"), p.Step, msgStep))
	}
	return errs
}

// validStep is the CRD's rule: one number and unit, at least a second, dividing 15 minutes.
func validStep(s string) bool {
	if !stepGrammar.MatchString(s) {
		return false
	}
	d, err := time.ParseDuration(s)
	return err == nil && d >= time.Second && StepDivides%d == 0
}

func (s *PrometheusSeries) validate(path *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	if s.Cost == "" && s.Input == "" && s.Output == "" {
		errs = append(errs, field.Required(path, msgSeriesEmpty))
	}
	for _, m := range []struct{ name, value string }{{"cost", s.Cost}, {"input", s.Input}, {"output", s.Output}} {
		switch {
		case m.value == "":
		case len(m.value) > maxSelectorLength:
			errs = append(errs, field.TooLong(path.Child(m.name), "", maxSelectorLength))
		case !ValidSeries(m.value):
			errs = append(errs, field.Invalid(path.Child(m.name), m.value, msgSeries))
		}
	}
	if s.ModelLabel != "" && !ValidLabelName(s.ModelLabel) {
		errs = append(errs, field.Invalid(path.Child("modelLabel"), s.ModelLabel, msgLabelName))
	}
	return errs
}

func (s *PrometheusSelector) validate(path *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	for _, f := range []struct{ name, value string }{
		{"team", s.Team}, {"key", s.Key}, {"namespace", s.Namespace}, {"service", s.Service},
	} {
		if len(f.value) > maxLabelValue {
			errs = append(errs, field.TooLong(path.Child(f.name), "", maxLabelValue))
		}
	}
	labels := path.Child("podLabels")
	if len(s.PodLabels) > maxMatchers {
		errs = append(errs, field.TooMany(labels, len(s.PodLabels), maxMatchers))
	}
	for _, k := range slices.Sorted(maps.Keys(s.PodLabels)) {
		if !ValidLabelName(k) {
			errs = append(errs, field.Invalid(labels.Key(k), k, msgLabelName))
		}
		if len(s.PodLabels[k]) > maxLabelValue {
			errs = append(errs, field.TooLong(labels.Key(k), "", maxLabelValue))
		}
	}
	match := path.Child("match")
	if len(s.Match) > maxMatchers {
		errs = append(errs, field.TooMany(match, len(s.Match), maxMatchers))
	}
	for i, m := range s.Match {
		if len(m) > maxSelectorLength {
			errs = append(errs, field.TooLong(match.Index(i), "", maxSelectorLength))
		} else if !ValidMatcher(m) {
			errs = append(errs, field.Invalid(match.Index(i), m, msgMatcher))
		}
	}
	return errs
}

func (r *PriceTableRef) validate(path *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if r.Namespace != "" && !valid(validation.IsDNS1123Label(r.Namespace)) {
		errs = append(errs, field.Invalid(path.Child("namespace"), r.Namespace, msgNamespace))
	}
	switch name := path.Child("configMapName"); {
	case r.ConfigMapName == "":
		errs = append(errs, field.Required(name, ""))
	case !valid(validation.IsDNS1123Subdomain(r.ConfigMapName)):
		errs = append(errs, field.Invalid(name, r.ConfigMapName, msgConfigMapName))
	}
	if r.Key != "" && !valid(validation.IsConfigMapKey(r.Key)) {
		errs = append(errs, field.Invalid(path.Child("key"), r.Key, msgConfigMapKey))
	}
	return errs
}

// PricesKey is the key of the price table: Key, or DefaultPricesKey when unset.
func (r *PriceTableRef) PricesKey() string {
	if r.Key == "" {
		return DefaultPricesKey
	}
	return r.Key
}
