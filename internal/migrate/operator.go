package migrate

import (
	goyaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// The llm-cost-budget-operator API, as read from github.com/mizcausevic-dev/llm-cost-budget-operator at commit
// c10d8c4799ba (api/v1alpha1/llmcostbudget_types.go and the CRD in
// charts/llm-cost-budget-operator/crds/llmcostbudgets.yaml): monthlyLimitUSD is a required string of pattern
// ^[0-9]+(\.[0-9]+)?$, warnThresholdPercent 1-100 defaults to 80, and costSource's configMapName and key are
// required. It has no period: its cost pipeline writes the month's running total and resets it, and the operator
// compares that number with the limit in float64, rounding the percentage (internal/budget/budget.go).
const (
	operatorAPIVersion = "finops.kineticgain.com/v1alpha1"
	operatorKind       = "LLMCostBudget"
)

// operatorBudget is the source object. Its status is dropped, since llmbudget computes its own; the status fields
// are named only so that a misspelt one is refused.
type operatorBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		MonthlyLimitUSD      any    `json:"monthlyLimitUSD"` // its literal digits are read from the YAML
		WarnThresholdPercent *int64 `json:"warnThresholdPercent"`
		CostSource           *struct {
			ConfigMapName string `json:"configMapName"`
			Key           string `json:"key"`
		} `json:"costSource"`
	} `json:"spec"`
	Status struct {
		ObservedSpendUSD any                `json:"observedSpendUSD"`
		PercentUsed      any                `json:"percentUsed"`
		State            any                `json:"state"`
		Conditions       []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

func convertOperator(in *input) (*goyaml.Node, []string, error) {
	var b operatorBudget
	notes, err := in.decodeObject(&b, &b.ObjectMeta)
	if err != nil {
		return nil, nil, err
	}
	text, ok, err := in.literal("spec.monthlyLimitUSD", b.Spec.MonthlyLimitUSD)
	switch {
	case err != nil:
		return nil, nil, err
	case !ok:
		return nil, nil, in.errAt("spec.monthlyLimitUSD", "is required")
	}
	limit, err := operatorLimit(text)
	if err != nil {
		return nil, nil, in.errAt("spec.monthlyLimitUSD", "%v", err)
	}
	cs := b.Spec.CostSource
	switch {
	case cs == nil:
		return nil, nil, in.errAt("spec.costSource", "is required")
	case cs.ConfigMapName == "":
		return nil, nil, in.errAt("spec.costSource.configMapName", "is required")
	case cs.Key == "":
		return nil, nil, in.errAt("spec.costSource.key", "is required")
	}

	out := newObject()
	out.set("limitUSD", note(usd(limit), "was spec.monthlyLimitUSD"))
	out.set("period", newObject().
		set("type", str(string(api.Monthly))).
		set("timeZone", str(api.DefaultTimeZone)).node,
		"The operator has no period of its own: its cost pipeline resets the total each month.",
		"llmbudget counts calendar months in timeZone; set the zone your pipeline resets in.")
	if w := b.Spec.WarnThresholdPercent; w != nil {
		out.set("warnThresholdPercent", integer(*w))
	}
	out.set("costSource", newObject().
		set("configMapName", str(cs.ConfigMapName)).
		set("format", str(string(api.Total))).
		set("key", str(cs.Key)).node,
		"The same ConfigMap and key: with format Total the value is this period's spend and",
		"the writer resets it, as the operator expects.")

	return budgetDocument(operatorAPIVersion+" "+operatorKind, &b.ObjectMeta, out), notes, nil
}
