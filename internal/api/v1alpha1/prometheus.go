package v1alpha1

import (
	"regexp"
	"time"

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

// The messages of the stanza's rules that relate fields, each the message of its CEL twin.
const (
	msgPrometheusCluster = "not used by " + ClusterKind + ": it sums the spend sources of its namespaces, " +
		"each written for its LLMCostBudget"
	msgSourceOrSeries = "costSource.prometheus needs exactly one of source and series"
	msgSelectorNeeded = "costSource.prometheus.selector is required with a source: name the team, key, namespace, " +
		"pod labels or service whose spend this is, or write {} for every series of the exporter"
	msgSelectorSeries = "costSource.prometheus.selector narrows a source's series; " +
		"write the matchers of your own series into them"
	msgSeriesEmpty  = "costSource.prometheus.series needs at least one of cost, input and output"
	msgPricesNeeded = "costSource.prometheus.prices is required when the source counts tokens only " +
		"(vllm, otel-genai, or series without cost)"
	msgPricesUnused = "costSource.prometheus.prices is only used when the source counts tokens only " +
		"(vllm, otel-genai, or series without cost)"
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

// relations is the CEL twin of the rules on costSource.prometheus and on its series: one of source and series,
// a selector exactly with a source, a price table exactly for a source that counts tokens only.
func (p *PrometheusSource) relations(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (p.Source == "") == (p.Series == nil) {
		errs = append(errs, field.Required(path, msgSourceOrSeries))
	}
	if s := p.Series; s != nil && s.Cost == "" && s.Input == "" && s.Output == "" {
		errs = append(errs, field.Required(path.Child("series"), msgSeriesEmpty))
	}
	sel := path.Child("selector")
	switch {
	case p.Source != "" && p.Selector == nil:
		errs = append(errs, field.Required(sel, msgSelectorNeeded))
	case p.Series != nil && p.Selector != nil:
		errs = append(errs, field.Forbidden(sel, msgSelectorSeries))
	}
	switch prices := path.Child("prices"); {
	case p.Source == "" && p.Series == nil:
	case p.TokensOnly() && p.Prices == nil:
		errs = append(errs, field.Required(prices, msgPricesNeeded))
	case !p.TokensOnly() && p.Prices != nil:
		errs = append(errs, field.Forbidden(prices, msgPricesUnused))
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
