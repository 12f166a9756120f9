package authz_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/authz"
)

func TestPodByIPNamesOnlyThePodThatAloneHoldsTheAddress(t *testing.T) {
	s := authz.NewStore()
	ip := netip.MustParseAddr("10.1.2.3")
	old := authz.Pod{Namespace: "team-ml", Name: "old"}
	s.SetPod(old, []netip.Addr{ip})
	got, ok := s.PodByIP(ip)
	assert.True(t, ok)
	assert.Equal(t, old, got)

	s.SetPod(authz.Pod{Namespace: "victim", Name: "new"}, []netip.Addr{ip})
	_, ok = s.PodByIP(ip)
	assert.False(t, ok, "two Pods on one address are ambiguous")

	s.SetPod(old, nil) // finished: it holds no address any more
	got, ok = s.PodByIP(ip)
	assert.True(t, ok)
	assert.Equal(t, "new", got.Name)

	s.DeletePod("victim", "new")
	_, ok = s.PodByIP(ip)
	assert.False(t, ok)
	_, _, pods := s.Counts()
	assert.Zero(t, pods)
}

func TestViewHoldsTheNamespacesBudgetsAndTheClusterBudgetsOverIt(t *testing.T) {
	s := authz.NewStore()
	s.SetNamespace(authz.Namespace{Name: "team-ml", Labels: labels.Set{"department": "ml"}})
	s.SetBudget(authz.Budget{Kind: api.Kind, Namespace: "team-ml", Name: "chatbot"})
	s.SetBudget(authz.Budget{Kind: api.Kind, Namespace: "team-support", Name: "desk"})
	ml, _ := labels.Parse("department=ml")
	s.SetBudget(authz.Budget{Kind: api.ClusterKind, Name: "by-label", Selector: ml})
	s.SetBudget(authz.Budget{Kind: api.ClusterKind, Name: "other", Selector: labels.Nothing()})
	s.SetBudget(authz.Budget{Kind: api.ClusterKind, Name: "closing", Selector: labels.Nothing(),
		Enforcement: api.EnforcementStatus{Blocking: true, Namespaces: []string{"team-ml"}}})

	ns, found, budgets := s.View("team-ml")
	assert.True(t, found)
	assert.Equal(t, "team-ml", ns.Name)
	var who []string
	for _, b := range budgets {
		who = append(who, b.Who())
	}
	assert.Equal(t, []string{"ClusterLLMCostBudget by-label", "ClusterLLMCostBudget closing",
		"LLMCostBudget team-ml/chatbot"}, who)

	s.DeleteBudget(api.Kind, "team-ml", "chatbot")
	s.DeleteBudget(api.ClusterKind, "", "by-label")
	s.DeleteNamespace("team-ml")
	ns, found, budgets = s.View("team-ml")
	assert.False(t, found)
	assert.Equal(t, "team-ml", ns.Name)
	assert.Len(t, budgets, 1, "a cluster budget's status closes a namespace the cache does not know yet")
	namespaces, count, _ := s.Counts()
	assert.Equal(t, []int{0, 3}, []int{namespaces, count})
}

func TestViewSeesAClusterBudgetsOrANamespacesChangeAtOnce(t *testing.T) {
	s := authz.NewStore()
	ml, _ := labels.Parse("department=ml")
	s.SetNamespace(authz.Namespace{Name: "team-ml", Labels: labels.Set{"department": "ml"}})
	s.SetBudget(authz.Budget{Kind: api.ClusterKind, Name: "research", Selector: ml})
	_, _, budgets := s.View("team-ml")
	assert.Len(t, budgets, 1)

	s.SetNamespace(authz.Namespace{Name: "team-ml", Labels: labels.Set{"department": "support"}})
	_, _, budgets = s.View("team-ml")
	assert.Empty(t, budgets, "the namespace's new labels")

	s.SetBudget(authz.Budget{Kind: api.ClusterKind, Name: "research", Selector: labels.Everything()})
	_, _, budgets = s.View("team-ml")
	assert.Len(t, budgets, 1, "the budget's new selector")

	s.DeleteBudget(api.ClusterKind, "", "research")
	_, _, budgets = s.View("team-ml")
	assert.Empty(t, budgets)
}

func TestRefusingListsTheBudgetsWhoseStatusRefusesSomeCallerAsTheDecisionsDo(t *testing.T) {
	blocks := func(scope api.Scope) api.EnforcementStatus {
		return api.EnforcementStatus{Blocking: true, Scope: scope}
	}
	warn := blocks(api.ScopeNamespace)
	warn.Mode = api.ModeWarn
	closes := func(ns ...string) api.EnforcementStatus {
		return api.EnforcementStatus{Blocking: true, Namespaces: ns}
	}
	tests := []struct {
		name   string
		budget authz.Budget
		listed bool
	}{
		{"a namespace budget that blocks its namespace is listed",
			authz.Budget{Kind: api.Kind, Namespace: "ml", Name: "a", Enforcement: blocks(api.ScopeNamespace)}, true},
		{"a Labelled budget that blocks its labelled workloads is listed",
			authz.Budget{Kind: api.Kind, Namespace: "ml", Name: "a", Enforcement: blocks(api.ScopeLabelled)}, true},
		{"a budget in Warn mode refuses no one",
			authz.Budget{Kind: api.Kind, Namespace: "ml", Name: "a", Enforcement: warn}, false},
		{"a budget that does not block is not listed",
			authz.Budget{Kind: api.Kind, Namespace: "ml", Name: "a"}, false},
		{"a scope this version does not know refuses no one, as in the policies",
			authz.Budget{Kind: api.Kind, Namespace: "ml", Name: "a", Enforcement: blocks("Galaxy")}, false},
		{"a cluster budget that closes a namespace is listed",
			authz.Budget{Kind: api.ClusterKind, Name: "c", Enforcement: closes("ml")}, true},
		{"a cluster budget that blocks and closes no namespace refuses no one",
			authz.Budget{Kind: api.ClusterKind, Name: "c", Enforcement: closes()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := authz.NewStore()
			s.SetBudget(tt.budget)
			var want []string
			if tt.listed {
				want = []string{tt.budget.Who()}
			}
			assert.Equal(t, want, s.Refusing())
		})
	}
}

func TestRefusingIsSortedByWho(t *testing.T) {
	s := authz.NewStore()
	block := api.EnforcementStatus{Blocking: true, Scope: api.ScopeNamespace, Namespaces: []string{"ml"}}
	for _, b := range []authz.Budget{{Kind: api.Kind, Namespace: "ml", Name: "z"},
		{Kind: api.ClusterKind, Name: "all"}, {Kind: api.Kind, Namespace: "dev", Name: "a"}} {
		b.Enforcement = block
		s.SetBudget(b)
	}
	assert.Equal(t, []string{"ClusterLLMCostBudget all", "LLMCostBudget dev/a", "LLMCostBudget ml/z"}, s.Refusing())
}
