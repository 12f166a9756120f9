package authz_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/authz"
)

var now = time.Date(2026, 11, 29, 7, 30, 0, 0, time.UTC)

const chatbotMessage = "LLMCostBudget team-ml/chatbot is OverBudget (spend 612.00 of 500.00 USD this Daily " +
	"period, ends 2026-11-30T00:00:00Z)"

func teamBudget(name string, mutate ...func(*authz.Budget)) *authz.Budget {
	b := &authz.Budget{Kind: api.Kind, Namespace: "team-ml", Name: name, FailurePolicy: api.FailOpen,
		State: api.UnderBudget, RemainingUSD: "100.00", PeriodEnd: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		Enforcement: api.EnforcementStatus{Reason: "the budget is UnderBudget: new workloads are admitted"}}
	for _, m := range mutate {
		m(b)
	}
	return b
}

func blocking(scope api.Scope) func(*authz.Budget) {
	return func(b *authz.Budget) {
		b.State, b.RemainingUSD = api.OverBudget, "0.00"
		b.Enforcement = api.EnforcementStatus{Blocking: true, Scope: scope, Gates: []api.Gate{api.GatePolicy},
			Resources: []string{"pods"}, Message: chatbotMessage}
	}
}

func warnMode(b *authz.Budget) { b.Enforcement.Mode = api.ModeWarn }

func closed(b *authz.Budget) { b.FailurePolicy = api.FailClosed }

func clusterBudget(closes ...string) *authz.Budget {
	return &authz.Budget{Kind: api.ClusterKind, Name: "research", State: api.OverBudget, RemainingUSD: "0.00",
		Selector: labels.Everything(), PeriodEnd: now.Add(72 * time.Hour),
		Enforcement: api.EnforcementStatus{Blocking: true, Namespaces: closes,
			Message: "ClusterLLMCostBudget research is OverBudget (spend 10 of 5 USD)"}}
}

var (
	current = authz.Cache{Synced: true, Age: time.Second, MaxAge: 30 * time.Second}
	caller  = authz.Caller{Known: true, Namespace: "team-ml"}
)

func TestDecideRefusesWhereTheAdmissionGatesRefuse(t *testing.T) {
	labelled := authz.Caller{Known: true, Namespace: "team-ml", Budget: "chatbot"}
	tests := map[string]struct {
		caller    authz.Caller
		namespace authz.Namespace
		budgets   []*authz.Budget
		want      authz.Decision
	}{
		"a namespace without budgets is allowed": {
			caller: caller,
			want:   authz.Decision{Result: authz.Allowed, Reason: authz.ReasonNoBudget},
		},
		"a budget within its limit allows, with its figures": {
			caller: caller, budgets: []*authz.Budget{teamBudget("chatbot")},
			want: authz.Decision{Result: authz.Allowed, Reason: authz.ReasonWithinBudget,
				Budget: "LLMCostBudget team-ml/chatbot", State: "UnderBudget", RemainingUSD: "100.00"},
		},
		"the tightest budget is the one named": {
			caller: caller, budgets: []*authz.Budget{
				teamBudget("a", func(b *authz.Budget) { b.RemainingUSD = "20.5" }),
				teamBudget("b", func(b *authz.Budget) { b.RemainingUSD = "3.25" }),
				teamBudget("c", func(b *authz.Budget) { b.RemainingUSD = "" }),
			},
			want: authz.Decision{Result: authz.Allowed, Reason: authz.ReasonWithinBudget,
				Budget: "LLMCostBudget team-ml/b", State: "UnderBudget", RemainingUSD: "3.25"},
		},
		"a blocking budget refuses with its sentence until its period ends": {
			caller: caller, budgets: []*authz.Budget{teamBudget("chatbot", blocking(api.ScopeNamespace))},
			want: authz.Decision{Result: authz.Refused, Reason: authz.ReasonBudgetBlocking,
				Budget: "LLMCostBudget team-ml/chatbot", State: "OverBudget", RemainingUSD: "0.00",
				Message: chatbotMessage, RetryAfter: 59400},
		},
		"a Labelled budget refuses the workload labelled for it": {
			caller: labelled, budgets: []*authz.Budget{teamBudget("chatbot", blocking(api.ScopeLabelled))},
			want: authz.Decision{Result: authz.Refused, Reason: authz.ReasonBudgetBlocking,
				Budget: "LLMCostBudget team-ml/chatbot", State: "OverBudget", RemainingUSD: "0.00",
				Message: chatbotMessage, RetryAfter: 59400},
		},
		"a Labelled budget leaves its neighbours alone, though it labels the namespace": {
			caller:    authz.Caller{Known: true, Namespace: "team-ml", Budget: "other"},
			namespace: authz.Namespace{Name: "team-ml", Blocked: true, BlockedBy: chatbotMessage},
			budgets:   []*authz.Budget{teamBudget("chatbot", blocking(api.ScopeLabelled))},
			want:      authz.Decision{Result: authz.Allowed, Reason: authz.ReasonNoBudget},
		},
		"a Warn-mode budget allows with the sentence as a warning": {
			caller: caller, budgets: []*authz.Budget{teamBudget("chatbot", blocking(api.ScopeNamespace), warnMode)},
			want: authz.Decision{Result: authz.Allowed, Reason: authz.ReasonWarn,
				Budget: "LLMCostBudget team-ml/chatbot", State: "OverBudget", RemainingUSD: "0.00",
				Message: chatbotMessage},
		},
		"a blocking budget refuses though another would only warn": {
			caller: caller, budgets: []*authz.Budget{
				teamBudget("a", blocking(api.ScopeNamespace), warnMode),
				teamBudget("chatbot", blocking(api.ScopeNamespace)),
			},
			want: authz.Decision{Result: authz.Refused, Reason: authz.ReasonBudgetBlocking,
				Budget: "LLMCostBudget team-ml/chatbot", State: "OverBudget", RemainingUSD: "0.00",
				Message: chatbotMessage, RetryAfter: 59400},
		},
		"the namespace posture refuses while no budget in view accounts for it": {
			caller: caller,
			namespace: authz.Namespace{Name: "team-ml", Blocked: true,
				BlockedBy: chatbotMessage + "; LLMCostBudget team-ml/b is blocking"},
			want: authz.Decision{Result: authz.Refused, Reason: authz.ReasonNamespaceBlocked,
				Message: chatbotMessage, RetryAfter: authz.UnknownEndRetryAfter},
		},
		"the namespace posture without its annotation still says why": {
			caller: caller, namespace: authz.Namespace{Name: "team-ml", Blocked: true},
			want: authz.Decision{Result: authz.Refused, Reason: authz.ReasonNamespaceBlocked,
				Message: "Namespace team-ml is labelled llmbudget.dev/blocked", RetryAfter: authz.UnknownEndRetryAfter},
		},
		"a cluster budget refuses the namespaces it closes": {
			caller: caller, budgets: []*authz.Budget{clusterBudget("team-ml")},
			want: authz.Decision{Result: authz.Refused, Reason: authz.ReasonBudgetBlocking,
				Budget: "ClusterLLMCostBudget research", State: "OverBudget", RemainingUSD: "0.00",
				Message: "ClusterLLMCostBudget research is OverBudget (spend 10 of 5 USD)", RetryAfter: authz.MaxRetryAfter},
		},
		"a cluster budget that closes other namespaces only reports here": {
			caller: caller, budgets: []*authz.Budget{clusterBudget("ml-research")},
			want: authz.Decision{Result: authz.Allowed, Reason: authz.ReasonWithinBudget,
				Budget: "ClusterLLMCostBudget research", State: "OverBudget", RemainingUSD: "0.00"},
		},
		"a status without a message refuses with the policy's fallback": {
			caller: caller, budgets: []*authz.Budget{teamBudget("chatbot", blocking(api.ScopeNamespace),
				func(b *authz.Budget) { b.Enforcement.Message = ""; b.PeriodEnd = time.Time{} })},
			want: authz.Decision{Result: authz.Refused, Reason: authz.ReasonBudgetBlocking,
				Budget: "LLMCostBudget team-ml/chatbot", State: "OverBudget", RemainingUSD: "0.00",
				Message: "LLMCostBudget chatbot is blocking", RetryAfter: authz.UnknownEndRetryAfter},
		},
		"a period ending within a second still waits one": {
			caller: caller, budgets: []*authz.Budget{teamBudget("chatbot", blocking(api.ScopeNamespace),
				func(b *authz.Budget) { b.PeriodEnd = now.Add(-time.Minute) })},
			want: authz.Decision{Result: authz.Refused, Reason: authz.ReasonBudgetBlocking,
				Budget: "LLMCostBudget team-ml/chatbot", State: "OverBudget", RemainingUSD: "0.00",
				Message: chatbotMessage, RetryAfter: 1},
		},
		"a period ending next month waits at most a day": {
			caller: caller, budgets: []*authz.Budget{teamBudget("chatbot", blocking(api.ScopeNamespace),
				func(b *authz.Budget) { b.PeriodEnd = now.Add(30 * 24 * time.Hour) })},
			want: authz.Decision{Result: authz.Refused, Reason: authz.ReasonBudgetBlocking,
				Budget: "LLMCostBudget team-ml/chatbot", State: "OverBudget", RemainingUSD: "0.00",
				Message: chatbotMessage, RetryAfter: authz.MaxRetryAfter},
		},
		"a scope the policies do not know refuses nothing": {
			caller: caller, budgets: []*authz.Budget{teamBudget("chatbot", blocking("Team"))},
			want: authz.Decision{Result: authz.Allowed, Reason: authz.ReasonWithinBudget,
				Budget: "LLMCostBudget team-ml/chatbot", State: "OverBudget", RemainingUSD: "0.00"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			in := authz.Input{Now: now, Caller: tt.caller, Namespace: tt.namespace, Budgets: tt.budgets,
				Cache: current}
			assert.Equal(t, tt.want, authz.Decide(in))
		})
	}
}

func TestDecideKeepsToTheFailurePolicyWhileTheCacheIsNotCurrent(t *testing.T) {
	old := authz.Cache{Synced: true, Age: 45 * time.Second, MaxAge: 30 * time.Second}
	unsynced := authz.Cache{}
	tests := map[string]struct {
		cache   authz.Cache
		budgets []*authz.Budget
		want    authz.Decision
	}{
		"a Closed budget is unavailable while the cache is old": {
			cache: old, budgets: []*authz.Budget{teamBudget("chatbot", closed)},
			want: authz.Decision{Result: authz.Unavailable, Reason: authz.ReasonFailClosed,
				Budget: "LLMCostBudget team-ml/chatbot", State: "UnderBudget", RemainingUSD: "100.00",
				Message: "LLMCostBudget team-ml/chatbot cannot be checked now: llmbudget has not listed or " +
					"watched the cluster for 45s (more than 30s), and its failurePolicy is Closed",
				RetryAfter: authz.UnavailableRetryAfter, Stale: "45s"},
		},
		"a Closed budget is unavailable before the cache has synced": {
			cache: unsynced, budgets: []*authz.Budget{teamBudget("chatbot", closed)},
			want: authz.Decision{Result: authz.Unavailable, Reason: authz.ReasonFailClosed,
				Budget: "LLMCostBudget team-ml/chatbot", State: "UnderBudget", RemainingUSD: "100.00",
				Message: "LLMCostBudget team-ml/chatbot cannot be checked now: llmbudget has not synced its " +
					"cache yet, and its failurePolicy is Closed",
				RetryAfter: authz.UnavailableRetryAfter, Stale: "unsynced"},
		},
		"an Open budget is unavailable before the cache has synced": {
			cache: unsynced, budgets: []*authz.Budget{teamBudget("chatbot", blocking(api.ScopeNamespace))},
			want: authz.Decision{Result: authz.Unavailable, Reason: authz.ReasonUnsynced,
				Message:    "llmbudget has not synced its cache yet, so it cannot tell which budgets cover this call",
				RetryAfter: authz.UnavailableRetryAfter, Stale: "unsynced"},
		},
		"a caller with no budget yet is unavailable before the cache has synced": {
			cache: unsynced,
			want: authz.Decision{Result: authz.Unavailable, Reason: authz.ReasonUnsynced,
				Message:    "llmbudget has not synced its cache yet, so it cannot tell which budgets cover this call",
				RetryAfter: authz.UnavailableRetryAfter, Stale: "unsynced"},
		},
		"an Open budget is decided from the old cache, which says so": {
			cache: old, budgets: []*authz.Budget{teamBudget("chatbot")},
			want: authz.Decision{Result: authz.Allowed, Reason: authz.ReasonWithinBudget,
				Budget: "LLMCostBudget team-ml/chatbot", State: "UnderBudget", RemainingUSD: "100.00", Stale: "45s"},
		},
		"an Open budget that blocked keeps refusing from the old cache": {
			cache: old, budgets: []*authz.Budget{teamBudget("chatbot", blocking(api.ScopeNamespace))},
			want: authz.Decision{Result: authz.Refused, Reason: authz.ReasonBudgetBlocking,
				Budget: "LLMCostBudget team-ml/chatbot", State: "OverBudget", RemainingUSD: "0.00",
				Message: chatbotMessage, RetryAfter: 59400, Stale: "45s"},
		},
		"a Closed budget decides from a current cache": {
			cache: current, budgets: []*authz.Budget{teamBudget("chatbot", closed)},
			want: authz.Decision{Result: authz.Allowed, Reason: authz.ReasonWithinBudget,
				Budget: "LLMCostBudget team-ml/chatbot", State: "UnderBudget", RemainingUSD: "100.00"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			in := authz.Input{Now: now, Caller: caller, Budgets: tt.budgets, Cache: tt.cache}
			assert.Equal(t, tt.want, authz.Decide(in))
		})
	}
}

func TestDecideFollowsTheUnknownCallerPolicy(t *testing.T) {
	unknown := authz.Caller{Why: "no Pod has address 10.1.2.3"}
	blocked := []*authz.Budget{teamBudget("chatbot", blocking(api.ScopeNamespace))}
	assert.Equal(t, authz.Decision{Result: authz.Allowed, Reason: authz.ReasonUnknownCaller},
		authz.Decide(authz.Input{Now: now, Caller: unknown, Budgets: blocked, Cache: current}),
		"the default admits")
	assert.Equal(t, authz.Decision{Result: authz.Refused, Reason: authz.ReasonUnknownCaller,
		Message: "llmbudget cannot tell who is calling (no Pod has address 10.1.2.3), and its unknownCaller " +
			"policy is Refuse"},
		authz.Decide(authz.Input{Now: now, Caller: unknown, UnknownCaller: authz.RefuseUnknown, Cache: current}))
	assert.Equal(t, authz.Decision{Result: authz.Unavailable, Reason: authz.ReasonUnsynced,
		Message:    "llmbudget has not synced its cache yet, so it cannot tell which budgets cover this call",
		RetryAfter: authz.UnavailableRetryAfter, Stale: "unsynced"},
		authz.Decide(authz.Input{Now: now, Caller: unknown, Budgets: blocked}),
		"before the cache has synced, an unknown caller may be a Pod not yet listed: never admitted")
}

func TestDecideRefusesAnUnreadableIdentityWhateverTheUnknownCallerPolicy(t *testing.T) {
	unreadable := authz.Caller{Unreadable: true, Why: "X-Team: sent 2 times, want once"}
	want := authz.Decision{Result: authz.Refused, Reason: authz.ReasonUnreadable,
		Message: "llmbudget refuses a caller identity it cannot read (X-Team: sent 2 times, want once), whatever " +
			"its unknownCaller policy"}
	for _, policy := range []authz.UnknownCaller{authz.AdmitUnknown, authz.RefuseUnknown} {
		assert.Equal(t, want, authz.Decide(authz.Input{Now: now, Caller: unreadable, UnknownCaller: policy,
			Cache: current}), policy)
	}
}
