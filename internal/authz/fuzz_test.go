package authz_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/authz"
)

// Whatever the statuses say, a decision keeps its promises: Warn never refuses, a refusal says why and when to come
// back within a day, and a Labelled budget never refuses a workload labelled for another.
func FuzzDecide(f *testing.F) {
	f.Add(true, "Labelled", "Warn", "chatbot", "", "12.5", int64(3600), true, false, int64(0))
	f.Add(true, "Namespace", "", "", "LLMCostBudget a/b is OverBudget", "x", int64(-5), false, true, int64(40))
	f.Add(false, "", "Deny", "other", "", "", int64(1<<40), true, true, int64(1<<40))
	f.Fuzz(func(t *testing.T, isBlocking bool, scope, mode, label, message, remaining string, endIn int64,
		blockedNS, closedPolicy bool, age int64) {
		b := teamBudget("chatbot", func(b *authz.Budget) {
			b.RemainingUSD = remaining
			b.PeriodEnd = now.Add(time.Duration(endIn) * time.Second)
			b.Enforcement = api.EnforcementStatus{Blocking: isBlocking, Scope: api.Scope(scope),
				Mode: api.Mode(mode), Message: message}
			if closedPolicy {
				b.FailurePolicy = api.FailClosed
			}
		})
		in := authz.Input{Now: now, Caller: authz.Caller{Known: true, Namespace: "team-ml", Budget: label},
			Namespace: authz.Namespace{Name: "team-ml", Blocked: blockedNS}, Budgets: []*authz.Budget{b},
			Cache: authz.Cache{Synced: true, Age: time.Duration(age), MaxAge: 30 * time.Second}}
		d := authz.Decide(in)
		if d.Result != authz.Allowed {
			assert.NotEmpty(t, d.Message)
			assert.True(t, d.RetryAfter >= 1 && d.RetryAfter <= authz.MaxRetryAfter, "%d", d.RetryAfter)
		}
		if d.Reason == authz.ReasonBudgetBlocking {
			assert.NotEqual(t, api.ModeWarn, b.Enforcement.Mode)
			assert.False(t, b.Enforcement.Scope == api.ScopeLabelled && label != "chatbot")
		}
		if d.Result == authz.Unavailable {
			assert.NotEmpty(t, d.Stale)
			assert.Equal(t, api.FailClosed, b.FailurePolicy)
		}
	})
}
