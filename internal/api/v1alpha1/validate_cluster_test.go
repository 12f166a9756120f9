package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func clusterSpec(change func(*Spec)) *Spec {
	limit := "100"
	s := &Spec{
		LimitUSD:          &limit,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"department": "ml"}},
		CostSource:        CostSource{SpendSource: "llm-spend", Format: DailyLedger},
	}
	change(s)
	s.Default()
	return s
}

func TestTheClusterKindHasRulesOfItsOwn(t *testing.T) {
	cases := []struct {
		name    string
		change  func(*Spec)
		cluster string // ValidateCluster's error, "" for none
		team    string // Validate's error
	}{
		{
			name:   "a department spec is valid for the cluster kind only",
			change: func(*Spec) {},
			team:   "spec.namespaceSelector: is only for ClusterLLMCostBudget; spec.costSource.spendSource: is only for ClusterLLMCostBudget; name the ConfigMap in configMapName",
		},
		{
			name: "the cluster kind needs a selector",
			change: func(s *Spec) {
				s.NamespaceSelector = nil
				s.CostSource.SpendSource = ""
				s.CostSource.ConfigMapName = "llm-spend"
			},
			cluster: "spec.namespaceSelector: is required; spec.costSource.configMapName: is not used by ClusterLLMCostBudget; set spendSource, the value of the label llmbudget.dev/spend-source",
		},
		{
			name: "a selector requirement without values is refused",
			change: func(s *Spec) {
				s.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "department", Operator: metav1.LabelSelectorOpIn}}}
			},
			cluster: "spec.namespaceSelector: values: ",
			team:    "spec.namespaceSelector: is only for ClusterLLMCostBudget; spec.costSource.spendSource: is only for ClusterLLMCostBudget; name the ConfigMap in configMapName",
		},
		{
			name:    "a spend source must be a label value",
			change:  func(s *Spec) { s.CostSource.SpendSource = "not a label" },
			cluster: `spec.costSource.spendSource: "not a label" must be a label value (at most 63 letters, digits, '-', '_', '.')`,
		},
		{
			name:    "the labelled scope names team budgets, not the cluster's",
			change:  func(s *Spec) { s.Enforcement.Scope = ScopeLabelled; s.Enforcement.Gate = GatePolicy },
			cluster: "spec.enforcement.scope: must be Namespace for ClusterLLMCostBudget",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := clusterSpec(tc.change)
			errString := func(err error) string {
				if err == nil {
					return ""
				}
				return err.Error()
			}
			if tc.cluster == "" {
				assert.NoError(t, s.ValidateCluster())
			} else {
				assert.Contains(t, errString(s.ValidateCluster()), tc.cluster)
			}
			if tc.team != "" {
				assert.Contains(t, errString(s.Validate()), tc.team)
			}
		})
	}
}
