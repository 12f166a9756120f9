package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func promSpec(p PrometheusSource) *Spec {
	return teamSpec(func(s *Spec) { s.CostSource.Prometheus = &p })
}

func TestAPrometheusStanzaOfEachShapeIsValid(t *testing.T) {
	for name, p := range map[string]PrometheusSource{
		"a team's LiteLLM spend":   {Source: PresetLiteLLM, Selector: &PrometheusSelector{Team: "ml"}, Step: "30s"},
		"every series, explicitly": {Source: PresetLiteLLM, Selector: &PrometheusSelector{}},
		"vLLM pods priced from a table": {Source: PresetVLLM, Step: "1500ms",
			Selector: &PrometheusSelector{PodLabels: map[string]string{"app": "vllm"}, Match: []string{`env!~"dev|test"`}},
			Prices:   &PriceTableRef{Namespace: "llmbudget-system", ConfigMapName: "llm-prices"}},
		"your own cost counter": {Series: &PrometheusSeries{Cost: `cost_total{team="ml",}`, ModelLabel: "llm"}},
	} {
		t.Run(name, func(t *testing.T) { assert.Empty(t, promSpec(p).Validate()) })
	}
}

func TestEachBrokenPrometheusRuleNamesItsField(t *testing.T) {
	all := &PrometheusSelector{}
	cases := []struct {
		name string
		p    PrometheusSource
		typ  field.ErrorType
		want string
	}{
		{"neither source nor series", PrometheusSource{Step: "15s"}, field.ErrorTypeRequired,
			"spec.costSource.prometheus: Required value: " + msgSourceOrSeries},
		{"a preset with no selector", PrometheusSource{Source: PresetLiteLLM}, field.ErrorTypeRequired,
			"spec.costSource.prometheus.selector: Required value: " + msgSelectorNeeded},
		{"a selector beside your own series", PrometheusSource{Series: &PrometheusSeries{Cost: "c"}, Selector: all},
			field.ErrorTypeForbidden, "spec.costSource.prometheus.selector: Forbidden: " + msgSelectorSeries},
		{"a matcher without quotes", PrometheusSource{Source: PresetLiteLLM,
			Selector: &PrometheusSelector{Match: []string{"env=prod"}}}, field.ErrorTypeInvalid,
			`spec.costSource.prometheus.selector.match[0]: Invalid value: "env=prod": ` + rules["promql_matcher"].message},
		{"a matcher smuggling a second selector", PrometheusSource{Source: PresetLiteLLM,
			Selector: &PrometheusSelector{Match: []string{`env="a"} or vector(1) or x{a="b"`}}}, field.ErrorTypeInvalid,
			`spec.costSource.prometheus.selector.match[0]: Invalid value: "env=\"a\"} or vector(1) or x{a=\"b\"": ` +
				rules["promql_matcher"].message},
		{"a pod label that is no label name", PrometheusSource{Source: PresetVLLM, Prices: &PriceTableRef{ConfigMapName: "p"},
			Selector: &PrometheusSelector{PodLabels: map[string]string{"app.kubernetes.io/name": "x"}}},
			field.ErrorTypeInvalid, `spec.costSource.prometheus.selector.podLabels[app.kubernetes.io/name]: ` +
				`Invalid value: "app.kubernetes.io/name": ` + rules["prom_label"].message},
		{"a step that does not divide 15m", PrometheusSource{Source: PresetLiteLLM, Selector: all, Step: "7s"},
			field.ErrorTypeInvalid, `spec.costSource.prometheus.step: Invalid value: "7s": ` + rules["step"].message},
		{"a step of two units", PrometheusSource{Source: PresetLiteLLM, Selector: all, Step: "1m30s"},
			field.ErrorTypeInvalid, `spec.costSource.prometheus.step: Invalid value: "1m30s": ` + rules["step"].message},
		{"a token-only source without prices", PrometheusSource{Source: PresetOTelGenAI, Selector: all},
			field.ErrorTypeRequired, "spec.costSource.prometheus.prices: Required value: " + msgPricesNeeded},
		{"prices nothing reads", PrometheusSource{Source: PresetLiteLLM, Selector: all,
			Prices: &PriceTableRef{ConfigMapName: "p"}}, field.ErrorTypeForbidden,
			"spec.costSource.prometheus.prices: Forbidden: " + msgPricesUnused},
		{"a series that is a whole query", PrometheusSource{Series: &PrometheusSeries{Cost: "sum(cost_total)"}},
			field.ErrorTypeInvalid, `spec.costSource.prometheus.series.cost: Invalid value: "sum(cost_total)": ` +
				rules["promql_series"].message},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := promSpec(tc.p).Validate()
			if assert.Len(t, errs, 1, "%v", errs) {
				assert.Equal(t, tc.typ, errs[0].Type)
				assert.Equal(t, tc.want, errs[0].Error())
			}
		})
	}
}

func TestAClusterBudgetHasNoPrometheusSource(t *testing.T) {
	s := teamSpec(func(s *Spec) {
		s.NamespaceSelector = nil
		s.CostSource.ConfigMapName, s.CostSource.SpendSource = "", "llm"
		s.CostSource.Prometheus = &PrometheusSource{Source: PresetLiteLLM, Selector: &PrometheusSelector{}}
	})
	s.NamespaceSelector = &LabelSelector{MatchLabels: map[string]LabelValue{"department": "ml"}}
	errs := s.ValidateCluster()
	require.Len(t, errs, 1, "%v", errs)
	assert.Equal(t, "spec.costSource.prometheus: Forbidden: "+msgPrometheusCluster, errs[0].Error())
}

func TestAStepDefaultsTo15s(t *testing.T) {
	assert.Equal(t, DefaultStep, (&PrometheusSource{}).StepDuration())
	assert.Equal(t, "1m0s", (&PrometheusSource{Step: "1m"}).StepDuration().String())
}
