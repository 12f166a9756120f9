package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Meta is s as apimachinery's label selector, which the hooks parse and hand to Metacontroller; nil for nil.
func (s *LabelSelector) Meta() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	m := &metav1.LabelSelector{}
	if s.MatchLabels != nil {
		m.MatchLabels = make(map[string]string, len(s.MatchLabels))
		for k, v := range s.MatchLabels {
			m.MatchLabels[k] = string(v)
		}
	}
	for _, r := range s.MatchExpressions {
		m.MatchExpressions = append(m.MatchExpressions,
			metav1.LabelSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
	}
	return m
}
