package migrate

import (
	goyaml "sigs.k8s.io/yaml/goyaml.v3"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

// The llm-cost-budget-operator API, as read from
// github.com/mizcausevic-dev/llm-cost-budget-operator at commit c10d8c4799ba
// (api/v1alpha1/llmcostbudget_types.go and the CRD in
// charts/llm-cost-budget-operator/crds/llmcostbudgets.yaml):
//
//	apiVersion: finops.kineticgain.com/v1alpha1, kind: LLMCostBudget (short name budget)
//	spec.monthlyLimitUSD       string, required, pattern ^[0-9]+(\.[0-9]+)?$
//	spec.warnThresholdPercent  int 1-100, default 80
//	spec.costSource            {configMapName, key}, both required strings
//	status                     observedSpendUSD, percentUsed, state, conditions[]
//
// It has no period: its cost pipeline writes the month's running total and
// resets it, and the operator compares that number with the limit in
// float64, rounding the percentage (internal/budget/budget.go).
const (
	operatorAPIVersion = "finops.kineticgain.com/v1alpha1"
	operatorKind       = "LLMCostBudget"
)

// conditionFields are the fields of metav1.Condition.
var conditionFields = []string{"type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"}

// convertOperator turns an operator LLMCostBudget into an llmbudget one: the
// same ConfigMap key read as this period's total, a Monthly period, and
// monthlyLimitUSD as limitUSD with its literal digits.
func convertOperator(root *mapping, m meta) (*goyaml.Node, error) {
	spec, err := asMapping(root.value["spec"], "spec")
	if err != nil {
		return nil, err
	}
	if err := spec.allow("monthlyLimitUSD", "warnThresholdPercent", "costSource"); err != nil {
		return nil, err
	}
	if err := checkOperatorStatus(root); err != nil {
		return nil, err
	}

	limitText, limitNode, err := spec.optNumberText("monthlyLimitUSD")
	if err != nil {
		return nil, err
	}
	if limitNode == nil {
		return nil, errAt(spec.key["monthlyLimitUSD"], "spec.monthlyLimitUSD", "is required")
	}
	if !isPlainDecimal(limitText) {
		return nil, errAt(limitNode, "spec.monthlyLimitUSD", "%q is not a plain decimal like 1500.00 (the operator's pattern ^[0-9]+(\\.[0-9]+)?$)", limitText)
	}
	limit, err := fitDecimals(limitText, limitDecimals)
	if err != nil {
		return nil, errAt(limitNode, "spec.monthlyLimitUSD", "%v", err)
	}
	limit = trimLeadingZeros(limit)
	if isZeroDecimal(limit) {
		return nil, errAt(limitNode, "spec.monthlyLimitUSD", "%q must be greater than 0 (the operator cannot evaluate a zero limit either)", limitText)
	}
	warn, hasWarn, err := spec.optInt("warnThresholdPercent")
	if err != nil {
		return nil, err
	}

	cs, err := asMapping(spec.value["costSource"], "spec.costSource")
	if err != nil {
		return nil, err
	}
	if err := cs.allow("configMapName", "key"); err != nil {
		return nil, err
	}
	if spec.get("costSource") == nil {
		return nil, errAt(spec.key["costSource"], "spec.costSource", "is required")
	}
	cmName, err := cs.reqString("configMapName")
	if err != nil {
		return nil, err
	}
	key, err := cs.reqString("key")
	if err != nil {
		return nil, err
	}

	out := newObject()
	out.set("limitUSD", note(money(limit), "was spec.monthlyLimitUSD"))
	out.set("period", newObject().
		set("type", str(string(api.Monthly))).
		set("timeZone", str(api.DefaultTimeZone)).node,
		"The operator has no period of its own: its cost pipeline resets the total each month.",
		"llmbudget counts calendar months in timeZone; set the zone your pipeline resets in.")
	if hasWarn {
		out.set("warnThresholdPercent", integer(warn))
	}
	out.set("costSource", newObject().
		set("configMapName", str(cmName)).
		set("format", str(string(api.Total))).
		set("key", str(key)).node,
		"The same ConfigMap and key: with format Total the value is this period's spend and",
		"the writer resets it, as the operator expects.")

	head := []string{"Converted by llmbudget migrate from " + operatorAPIVersion + " " + operatorKind + " " + m.ref() + "."}
	return budgetDocument(head, m.output(), out), nil
}

// checkOperatorStatus refuses unknown status fields; the status itself is
// dropped, since llmbudget computes its own.
func checkOperatorStatus(root *mapping) error {
	st, err := asMapping(root.value["status"], "status")
	if err != nil {
		return err
	}
	if err := st.allow("observedSpendUSD", "percentUsed", "state", "conditions"); err != nil {
		return err
	}
	_, err = st.eachMapping("conditions", conditionFields...)
	return err
}
