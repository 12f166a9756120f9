package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// recordsSource is a TaskRecords cost source over the records labelled team=ml.
func recordsSource(s *Spec) {
	s.CostSource = CostSource{Format: TaskRecords,
		Selector: &LabelSelector{MatchLabels: map[string]LabelValue{"team": "ml"}}}
}

func TestATaskRecordsSourceIsItsSelector(t *testing.T) {
	const unused = " is not used when costSource.format is TaskRecords: " +
		"the spend is the usage of the TaskRecords costSource.selector matches"
	cases := []struct {
		name    string
		change  func(*Spec)
		cluster []string // ValidateCluster's errors
		team    []string // Validate's errors, of the spec without namespaceSelector, when not the cluster's
	}{
		{
			name:   "a selector is all a TaskRecords source needs, for either kind",
			change: recordsSource,
		},
		{
			name:   "the empty selector matches every record and is valid",
			change: func(s *Spec) { recordsSource(s); s.CostSource.Selector = &LabelSelector{} },
		},
		{
			name:    "a TaskRecords source without a selector is refused",
			change:  func(s *Spec) { recordsSource(s); s.CostSource.Selector = nil },
			cluster: []string{"spec.costSource.selector: Required value: " + msgSelectorRequired},
		},
		{
			name: "a ConfigMap's fields beside TaskRecords are refused, each by name",
			change: func(s *Spec) {
				recordsSource(s)
				s.CostSource.ConfigMapName, s.CostSource.SpendSource, s.CostSource.Key = "spend", "llm", "usd"
			},
			cluster: []string{
				"spec.costSource.configMapName: Forbidden: costSource.configMapName" + unused,
				"spec.costSource.spendSource: Forbidden: costSource.spendSource" + unused,
				"spec.costSource.key: Forbidden: costSource.key" + unused,
			},
		},
		{
			name: "a selector beside a ConfigMap source is refused",
			change: func(s *Spec) {
				s.CostSource.Selector = &LabelSelector{}
			},
			cluster: []string{"spec.costSource.selector: Forbidden: " + msgSelectorOnly},
			team: []string{
				"spec.costSource.selector: Forbidden: " + msgSelectorOnly,
				"spec.costSource.configMapName: Required value: " + msgConfigMapNameRequired,
				"spec.costSource.spendSource: Forbidden: only for ClusterLLMCostBudget; name the ConfigMap in configMapName",
			},
		},
		{
			name: "the selector is validated as the API server validates a label selector",
			change: func(s *Spec) {
				recordsSource(s)
				s.CostSource.Selector = &LabelSelector{
					MatchLabels: map[string]LabelValue{"team": "not a value"},
					MatchExpressions: []LabelSelectorRequirement{
						{Key: "tier", Operator: metav1.LabelSelectorOpExists, Values: []string{"gold"}},
					},
				}
			},
			cluster: []string{
				`spec.costSource.selector.matchLabels: Invalid value: "not a value": a valid label must be an ` +
					`empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end ` +
					`with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for ` +
					`validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
				"spec.costSource.selector.matchExpressions[0].values: Forbidden: " +
					"may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := clusterSpec(tc.change)
			assert.Equal(t, tc.cluster, nilIfEmpty(messages(s.ValidateCluster())))
			team := clusterSpec(func(s *Spec) { tc.change(s); s.NamespaceSelector = nil })
			want := tc.cluster
			if tc.team != nil {
				want = tc.team
			}
			assert.Equal(t, want, nilIfEmpty(messages(team.Validate())))
		})
	}
}
