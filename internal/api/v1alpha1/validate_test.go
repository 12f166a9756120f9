package v1alpha1

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func teamSpec(change func(*Spec)) *Spec {
	limit := "100"
	s := &Spec{LimitUSD: &limit, CostSource: CostSource{ConfigMapName: "llm-spend", Key: "total-usd"}}
	change(s)
	s.Default()
	return s
}

func TestAValidSpecHasNoErrors(t *testing.T) {
	assert.Empty(t, teamSpec(func(*Spec) {}).Validate())
}

func TestEachBrokenRuleIsAFieldErrorOfItsKind(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Spec)
		typ    field.ErrorType
		want   string
	}{
		{"a limit that is not a decimal", func(s *Spec) { s.LimitUSD = new("ten") }, field.ErrorTypeInvalid,
			`spec.limitUSD: Invalid value: "ten": must be a decimal greater than 0 with at most 6 decimals ` +
				`(and at most 9 digits before the point)`},
		{"no limit at all", func(s *Spec) { s.LimitUSD = nil }, field.ErrorTypeRequired,
			"spec.limitUSD: Required value: spec.limitUSD is required unless spec.tokenLimits sets input, output or total"},
		{"an unknown period type", func(s *Spec) { s.Period.Type = "Yearly" }, field.ErrorTypeNotSupported,
			`spec.period.type: Unsupported value: "Yearly": supported values: "Daily", "Weekly", "Monthly"`},
		{"a start day past the 28th", func(s *Spec) { s.Period.StartDay = new(int32(29)) }, field.ErrorTypeInvalid,
			"spec.period.startDay: Invalid value: 29: must be less than or equal to 28"},
		{"a weekly start day past Sunday", func(s *Spec) {
			s.Period.Type, s.Period.StartDay = Weekly, new(int32(8))
		}, field.ErrorTypeInvalid, "spec.period.startDay: Invalid value: 8: " +
			"period.startDay must be between 1 (Monday) and 7 (Sunday) when period.type is Weekly"},
		{"eleven thresholds", func(s *Spec) {
			for p := range int32(11) {
				s.Thresholds = append(s.Thresholds, Threshold{Percent: p + 1})
			}
		}, field.ErrorTypeTooMany, "spec.thresholds: Too many: 11: must have at most 10 items"},
		{"a repeated threshold", func(s *Spec) {
			s.Thresholds = []Threshold{{Percent: 50}, {Percent: 50, Basis: Actual}}
		}, field.ErrorTypeDuplicate, `spec.thresholds[1]: Duplicate value: {"percent":50,"basis":"Actual"}`},
		{"a model listed twice", func(s *Spec) {
			s.ModelLimits = []ModelLimit{{Model: "m", LimitUSD: new("1")}, {Model: "m", LimitUSD: new("2")}}
		}, field.ErrorTypeDuplicate, `spec.modelLimits[1]: Duplicate value: {"model":"m"}`},
		{"a key prefix with format Total", func(s *Spec) { s.CostSource.KeyPrefix = "team-a." }, field.ErrorTypeForbidden,
			"spec.costSource.keyPrefix: Forbidden: costSource.keyPrefix is only allowed when costSource.format is DailyLedger"},
		{"an unknown enforcement mode", func(s *Spec) { s.Enforcement.Mode = "Audit" }, field.ErrorTypeNotSupported,
			`spec.enforcement.mode: Unsupported value: "Audit": supported values: "Deny", "Warn"`},
		{"a resource name too long for a quota", func(s *Spec) {
			s.Enforcement.Action, s.Enforcement.Resources = BlockNewWorkloads, []string{strings.Repeat("a", 64)}
		}, field.ErrorTypeTooLong, "spec.enforcement.resources[0]: Too long: may not be more than 63 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := teamSpec(tc.change).Validate()
			if assert.Len(t, errs, 1, "%v", errs) {
				assert.Equal(t, tc.typ, errs[0].Type)
				assert.Equal(t, tc.want, errs[0].Error())
			}
		})
	}
}
