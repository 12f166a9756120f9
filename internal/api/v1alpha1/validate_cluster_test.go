package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func clusterSpec(change func(*Spec)) *Spec {
	limit := "100"
	s := &Spec{
		LimitUSD:          &limit,
		NamespaceSelector: &LabelSelector{MatchLabels: map[string]LabelValue{"department": "ml"}},
		CostSource:        CostSource{SpendSource: "llm-spend", Format: DailyLedger},
	}
	change(s)
	s.Default()
	return s
}

// messages is what the API server would print for each error of errs, in order.
func messages(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func TestTheClusterKindHasRulesOfItsOwn(t *testing.T) {
	cases := []struct {
		name    string
		change  func(*Spec)
		cluster []string // ValidateCluster's errors
		team    []string // Validate's errors
	}{
		{
			name:   "a department spec is valid for the cluster kind only",
			change: func(*Spec) {},
			team: []string{
				"spec.namespaceSelector: Forbidden: only for ClusterLLMCostBudget",
				"spec.costSource.configMapName: Required value: " + msgConfigMapNameRequired,
				"spec.costSource.spendSource: Forbidden: only for ClusterLLMCostBudget; name the ConfigMap in configMapName",
			},
		},
		{
			name: "the cluster kind needs a selector and a spend source",
			change: func(s *Spec) {
				s.NamespaceSelector = nil
				s.CostSource.SpendSource = ""
				s.CostSource.ConfigMapName = "llm-spend"
			},
			cluster: []string{
				"spec.namespaceSelector: Required value",
				"spec.costSource.configMapName: Forbidden: not used by ClusterLLMCostBudget; " +
					"set spendSource, the value of the label llmbudget.dev/spend-source",
				"spec.costSource.spendSource: Required value: " + msgSpendSourceRequired,
			},
		},
		{
			name: "a selector requirement without values is refused as the API server refuses it",
			change: func(s *Spec) {
				s.NamespaceSelector = &LabelSelector{MatchExpressions: []LabelSelectorRequirement{
					{Key: "department", Operator: metav1.LabelSelectorOpIn},
				}}
			},
			cluster: []string{
				"spec.namespaceSelector.matchExpressions[0].values: " +
					"Required value: must be specified when `operator` is 'In' or 'NotIn'",
			},
		},
		{
			name:   "a spend source must be a label value",
			change: func(s *Spec) { s.CostSource.SpendSource = "not a label" },
			cluster: []string{
				`spec.costSource.spendSource: Invalid value: "not a label": ` +
					`must be a label value (at most 63 letters, digits, '-', '_', '.')`,
			},
		},
		{
			name:    "the labelled scope names team budgets, not the cluster's",
			change:  func(s *Spec) { s.Enforcement.Scope = ScopeLabelled; s.Enforcement.Gate = GatePolicy },
			cluster: []string{`spec.enforcement.scope: Unsupported value: "Labelled": supported values: "Namespace"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := clusterSpec(tc.change)
			assert.Equal(t, tc.cluster, nilIfEmpty(messages(s.ValidateCluster())))
			if tc.team != nil {
				assert.Equal(t, tc.team, messages(s.Validate()))
			}
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
