package v1alpha1

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestAMaxAgeOfWholeUnitsWithinItsBoundsIsValidForEitherKind(t *testing.T) {
	for _, age := range []string{"1m", "60s", "15m", "1h30m", "30m1h", "744h", "44640m", "000002m"} {
		t.Run(age, func(t *testing.T) {
			assert.Empty(t, teamSpec(func(s *Spec) { s.CostSource.MaxAge = age }).Validate())
			assert.Empty(t, clusterSpec(func(s *Spec) { s.CostSource.MaxAge = age }).ValidateCluster())
		})
	}
}

func TestEachBrokenMaxAgeIsRefusedNamingTheField(t *testing.T) {
	msgMaxAge := rules["max_age"].message
	cases := []struct {
		name, age string
		typ       field.ErrorType
		want      string
	}{
		{"under a minute", "59s", field.ErrorTypeInvalid, `spec.costSource.maxAge: Invalid value: "59s": ` + msgMaxAge},
		{"past 31 days", "745h", field.ErrorTypeInvalid, `spec.costSource.maxAge: Invalid value: "745h": ` + msgMaxAge},
		{"a fraction", "0.5h", field.ErrorTypeInvalid, `spec.costSource.maxAge: Invalid value: "0.5h": ` + msgMaxAge},
		{"a day, which Go has no unit for", "1d", field.ErrorTypeInvalid,
			`spec.costSource.maxAge: Invalid value: "1d": ` + msgMaxAge},
		{"a number without its unit", "900", field.ErrorTypeInvalid,
			`spec.costSource.maxAge: Invalid value: "900": ` + msgMaxAge},
		{"a negative age", "-15m", field.ErrorTypeInvalid, `spec.costSource.maxAge: Invalid value: "-15m": ` + msgMaxAge},
		{"too long to be a sane duration", "1m1m1m1m1m1m1m1m1m", field.ErrorTypeTooLong,
			"spec.costSource.maxAge: Too long: may not be more than 16 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for kind, errs := range map[string]field.ErrorList{
				Kind:        teamSpec(func(s *Spec) { s.CostSource.MaxAge = tc.age }).Validate(),
				ClusterKind: clusterSpec(func(s *Spec) { s.CostSource.MaxAge = tc.age }).ValidateCluster(),
			} {
				if assert.Len(t, errs, 1, "%s: %v", kind, errs) {
					assert.Equal(t, tc.typ, errs[0].Type, kind)
					assert.Equal(t, tc.want, errs[0].Error(), kind)
				}
			}
		})
	}
}

func TestATaskRecordsSourceHasNoMaxAge(t *testing.T) {
	errs := teamSpec(func(s *Spec) { recordsSource(s); s.CostSource.MaxAge = "15m" }).Validate()
	assert.Equal(t, []string{"spec.costSource.maxAge: Forbidden: " + msgMaxAgeRecords}, messages(errs))
}

func TestAPrometheusSourceDefaultsMaxAgeTo15Minutes(t *testing.T) {
	prom := &PrometheusSource{Source: PresetLiteLLM, Selector: &PrometheusSelector{}}
	cases := map[string]struct {
		change func(*Spec)
		want   time.Duration
	}{
		"a Prometheus source without maxAge": {func(s *Spec) { s.CostSource.Prometheus = prom }, 15 * time.Minute},
		"a Prometheus source with its own": {func(s *Spec) {
			s.CostSource.Prometheus, s.CostSource.MaxAge = prom, "2h"
		}, 2 * time.Hour},
		"a ConfigMap another pipeline writes": {func(*Spec) {}, 0},
		"a ConfigMap with a maxAge":           {func(s *Spec) { s.CostSource.MaxAge = "1h" }, time.Hour},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := teamSpec(tc.change)
			assert.Empty(t, s.Validate())
			assert.Equal(t, tc.want, s.CostSource.MaxAgeDuration())
		})
	}
}
