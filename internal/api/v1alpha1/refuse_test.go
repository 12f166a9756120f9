package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

func TestTheGateLabelsOnlyABudgetThatMayRefuseSomeone(t *testing.T) {
	team := api.BudgetRef{Kind: api.Kind, Namespace: "team-ml", Name: "chatbot"}
	cluster := api.BudgetRef{Kind: api.ClusterKind, Name: "research"}
	cases := map[string]struct {
		of   api.BudgetRef
		enf  *api.EnforcementStatus
		want bool
	}{
		"a team budget that blocks its namespace": {team, &api.EnforcementStatus{Blocking: true,
			Scope: api.ScopeNamespace}, true},
		"a Labelled one, which refuses the workloads labelled for it": {team, &api.EnforcementStatus{Blocking: true,
			Scope: api.ScopeLabelled}, true},
		"a Warn-mode one, which the warn policy reads": {team, &api.EnforcementStatus{Blocking: true,
			Scope: api.ScopeNamespace, Mode: api.ModeWarn}, true},
		"one of no scope, which no policy refuses for": {team, &api.EnforcementStatus{Blocking: true}, false},
		"one that does not block":                      {team, &api.EnforcementStatus{Scope: api.ScopeNamespace}, false},
		"one without status":                           {team, nil, false},
		"a cluster budget that closes a namespace": {cluster, &api.EnforcementStatus{Blocking: true,
			Namespaces: []string{"team-ml"}}, true},
		"a cluster budget that closes none": {cluster, &api.EnforcementStatus{Blocking: true}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.enf.MayRefuse(tc.of))
		})
	}
}

func TestAtMostOneOfRefusesAndWouldRefuseHolds(t *testing.T) {
	of := api.BudgetRef{Kind: api.Kind, Namespace: "team-ml", Name: "chatbot"}
	caller := api.Caller{Namespace: "team-ml"}
	for _, mode := range []api.Mode{"", api.ModeDeny, api.ModeWarn, "Later"} {
		enf := &api.EnforcementStatus{Blocking: true, Scope: api.ScopeNamespace, Mode: mode}
		assert.NotEqual(t, enf.Refuses(of, caller), enf.WouldRefuse(of, caller), "mode %q", mode)
	}
}

func TestABudgetRefusesSomeoneWhereItMayRefuseSaveInWarnMode(t *testing.T) {
	team := api.BudgetRef{Kind: api.Kind, Namespace: "team-ml", Name: "chatbot"}
	cluster := api.BudgetRef{Kind: api.ClusterKind, Name: "research"}
	for name, tc := range map[string]struct {
		of   api.BudgetRef
		enf  *api.EnforcementStatus
		want bool
	}{
		"a team budget that blocks its namespace": {team, &api.EnforcementStatus{Blocking: true,
			Scope: api.ScopeNamespace}, true},
		"a Labelled one": {team, &api.EnforcementStatus{Blocking: true, Scope: api.ScopeLabelled}, true},
		"a Warn-mode one, which only warns": {team, &api.EnforcementStatus{Blocking: true,
			Scope: api.ScopeNamespace, Mode: api.ModeWarn}, false},
		"one of no scope":    {team, &api.EnforcementStatus{Blocking: true}, false},
		"one without status": {team, nil, false},
		"a cluster budget that closes a namespace": {cluster, &api.EnforcementStatus{Blocking: true,
			Namespaces: []string{"team-ml"}}, true},
		"a cluster budget that closes none": {cluster, &api.EnforcementStatus{Blocking: true}, false},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.enf.RefusesSomeone(tc.of))
			refusesIn := false
			for _, ns := range append([]string{tc.of.Namespace}, namespacesOf(tc.enf)...) {
				refusesIn = refusesIn || tc.enf.RefusesIn(tc.of, ns)
			}
			assert.Equal(t, refusesIn, tc.enf.RefusesSomeone(tc.of), "Refuses holds for a caller somewhere")
		})
	}
}

func namespacesOf(e *api.EnforcementStatus) []string {
	if e == nil {
		return nil
	}
	return e.Namespaces
}
