package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestAValidatorNamespaceBecomesTheFieldPathItNames(t *testing.T) {
	root := field.NewPath("spec")
	cases := []struct{ namespace, want string }{
		{"Spec.limitUSD", "spec.limitUSD"},
		{"Spec.thresholds[10].percent", "spec.thresholds[10].percent"},
		{"Spec.costSource.prometheus.selector.podLabels[app]", "spec.costSource.prometheus.selector.podLabels[app]"},
		{"Spec.costSource.prometheus.selector.podLabels[app.kubernetes.io/name]",
			"spec.costSource.prometheus.selector.podLabels[app.kubernetes.io/name]"},
		{"Spec.costSource.prometheus.selector.match[0]", "spec.costSource.prometheus.selector.match[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.namespace, func(t *testing.T) {
			assert.Equal(t, tc.want, childPath(root, tc.namespace).String())
		})
	}
}

func TestEachCustomTagAdmitsWhatItsCELTwinAdmits(t *testing.T) {
	cases := map[string]struct{ good, bad string }{
		"decimal":        {"1250.75", "1e3"},
		"iana_zone":      {"Europe/Berlin", "Mars/Olympus"},
		"model_name":     {"anthropic/claude-3-5-sonnet@20241022", "gpt 4o"},
		"configmap_name": {"llm-spend", "LLM_spend"},
		"configmap_key":  {"spend-usd", "spend/usd"},
		"label_value":    {"llm-spend", "llm spend"},
		"namespace_name": {"team-ml", "team.ml"},
		"resource_name":  {"jobs.batch", "Jobs/batch"},
		"max_age":        {"1h30m", "1d"},
		"step":           {"15s", "7s"},
		"prom_label":     {"model_name", "0model"},
		"promql_series":  {`cost_total{env="prod"}`, `cost_total{env=prod}`},
		"promql_matcher": {`env=~"eu-.*"`, `env`},
	}
	assert.Len(t, cases, len(rules), "every registered tag is tried")
	for tag, tc := range cases {
		t.Run(tag, func(t *testing.T) {
			r, ok := rules[tag]
			if assert.True(t, ok) {
				assert.True(t, r.valid(tc.good), tc.good)
				assert.False(t, r.valid(tc.bad), tc.bad)
				assert.NotEmpty(t, r.message)
			}
		})
	}
}

func TestBadPodLabelsAreNamedInTheOrderOfTheirKeys(t *testing.T) {
	s := teamSpec(func(s *Spec) {
		s.CostSource.Prometheus = &PrometheusSource{Source: PresetLiteLLM, Selector: &PrometheusSelector{
			PodLabels: map[string]string{"c-c": "x", "a-a": "x", "b-b": "x", "d.d": "x"},
		}}
	})
	var fields []string
	for _, err := range s.Validate() {
		fields = append(fields, err.Field)
	}
	prefix := "spec.costSource.prometheus.selector.podLabels"
	assert.Equal(t, []string{prefix + "[a-a]", prefix + "[b-b]", prefix + "[c-c]", prefix + "[d.d]"}, fields)
}
