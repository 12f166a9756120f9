package evaluate_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/evaluate"
)

// inForce is what a cluster shows when every point of a blocking team budget is in force: the policy and its
// binding, the quota filled in, the namespace labelled, one live authz replica refusing for it.
func inForce() *evaluate.Observed {
	return &evaluate.Observed{
		PoliciesRelated: true, NamespacesRelated: true,
		Policies: []string{"llmbudget-budgets", "llmbudget-budgets-warn"},
		Bindings: map[string]evaluate.Binding{
			"llmbudget-budgets": {PolicyName: "llmbudget-budgets", SelectsBlocking: true, Actions: []string{"Deny"}},
			"llmbudget-budgets-warn": {PolicyName: "llmbudget-budgets-warn", SelectsBlocking: true,
				Actions: []string{"Warn", "Audit"}},
		},
		Quotas:     map[string]bool{"team-ml": true},
		Namespaces: map[string]bool{"team-ml": true},
		Replicas: []evaluate.Replica{{Name: "authz-0", Expires: now.Add(20 * time.Second), Synced: true,
			Refusing: []string{"LLMCostBudget team-ml/chatbot"}}},
	}
}

// blockingBoth is the budget over its limit, blocking by both gates, and labelled by the gate decorator.
func blockingBoth(b *api.LLMCostBudget) {
	b.Spec.Enforcement = api.Enforcement{Action: api.BlockNewWorkloads, Gate: api.GateBoth,
		Resources: []string{"jobs.batch"}}
	b.Metadata.Labels = map[string]string{api.LabelBlocking: "true"}
}

// evalObserved evaluates b with data at now, as the hook does with obs read from the request.
func evalObserved(b api.LLMCostBudget, data map[string]string, obs *evaluate.Observed) evaluate.Result {
	b.Spec.Default()
	in := evaluate.Input{Budget: b, Subject: subject, Now: now, Observed: obs}
	in.Window = b.Spec.PeriodSpec().Containing(now)
	in.Spend = spent(b.Spec.CostSource, data, in.Window)
	return evaluate.Evaluate(in)
}

func point(t *testing.T, st api.Status, p api.EnforcementPoint) api.EnforcementPointStatus {
	t.Helper()
	for _, e := range st.EnforcementPoints {
		if e.Point == p {
			return e
		}
	}
	require.Failf(t, "point missing", "no %s point in %+v", p, st.EnforcementPoints)
	return api.EnforcementPointStatus{}
}

func TestEachEnforcementPointSaysWhetherItIsInForce(t *testing.T) {
	cases := []struct {
		name    string
		change  func(*evaluate.Observed, *api.LLMCostBudget)
		point   api.EnforcementPoint
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{name: "every point in force is True", change: func(*evaluate.Observed, *api.LLMCostBudget) {},
			point: api.PointPolicy, status: metav1.ConditionTrue, reason: evaluate.ReasonInForce,
			message: "ValidatingAdmissionPolicy llmbudget-budgets and its binding (Deny) apply"},
		{name: "a missing policy is named", change: func(o *evaluate.Observed, _ *api.LLMCostBudget) {
			o.Policies = []string{"llmbudget-budgets-warn"}
		}, point: api.PointPolicy, status: metav1.ConditionFalse, reason: evaluate.ReasonPolicyMissing,
			message: "ValidatingAdmissionPolicy llmbudget-budgets does not exist"},
		{name: "a removed binding is named", change: func(o *evaluate.Observed, _ *api.LLMCostBudget) {
			delete(o.Bindings, "llmbudget-budgets")
		}, point: api.PointPolicy, status: metav1.ConditionFalse, reason: evaluate.ReasonBindingMissing,
			message: "ValidatingAdmissionPolicyBinding llmbudget-budgets does not exist"},
		{name: "a binding that only warns where Deny is asked fails", change: func(o *evaluate.Observed,
			_ *api.LLMCostBudget) {
			o.Bindings["llmbudget-budgets"] = evaluate.Binding{PolicyName: "llmbudget-budgets", SelectsBlocking: true,
				Actions: []string{"Warn", "Audit"}}
		}, point: api.PointPolicy, status: metav1.ConditionFalse, reason: evaluate.ReasonBindingWarnsOnly,
			message: `only warns (validationActions ["Warn", "Audit"])`},
		{name: "a binding of another policy fails", change: func(o *evaluate.Observed, _ *api.LLMCostBudget) {
			o.Bindings["llmbudget-budgets"] = evaluate.Binding{PolicyName: "other", SelectsBlocking: true,
				Actions: []string{"Deny"}}
		}, point: api.PointPolicy, status: metav1.ConditionFalse, reason: evaluate.ReasonBindingMismatch,
			message: `binds policy "other", not llmbudget-budgets`},
		{name: "a binding that does not select the label fails", change: func(o *evaluate.Observed,
			_ *api.LLMCostBudget) {
			o.Bindings["llmbudget-budgets"] = evaluate.Binding{PolicyName: "llmbudget-budgets",
				Actions: []string{"Deny"}}
		}, point: api.PointPolicy, status: metav1.ConditionFalse, reason: evaluate.ReasonBindingMismatch,
			message: "does not select its parameters by the label llmbudget.dev/blocking=true"},
		{name: "a blocking budget without the gate label fails", change: func(_ *evaluate.Observed,
			b *api.LLMCostBudget) {
			b.Metadata.Labels = nil
		}, point: api.PointPolicy, status: metav1.ConditionFalse, reason: evaluate.ReasonBudgetNotLabelled,
			message: "does not carry the label llmbudget.dev/blocking=true yet"},
		{name: "policies the request does not relate are Unknown", change: func(o *evaluate.Observed,
			_ *api.LLMCostBudget) {
			o.PoliciesRelated = false
		}, point: api.PointPolicy, status: metav1.ConditionUnknown, reason: evaluate.ReasonNotObserved,
			message: "the request holds no ValidatingAdmissionPolicies"},
		{name: "a filled quota is in force", change: func(*evaluate.Observed, *api.LLMCostBudget) {},
			point: api.PointQuota, status: metav1.ConditionTrue, reason: evaluate.ReasonInForce,
			message: "ResourceQuota llmbudget-chatbot is enforced (status.hard filled) in namespace team-ml"},
		{name: "a quota not created yet is named", change: func(o *evaluate.Observed, _ *api.LLMCostBudget) {
			o.Quotas = map[string]bool{}
		}, point: api.PointQuota, status: metav1.ConditionFalse, reason: evaluate.ReasonQuotaMissing,
			message: "ResourceQuota llmbudget-chatbot does not exist (yet) in namespace team-ml"},
		{name: "a quota without status is not enforced", change: func(o *evaluate.Observed, _ *api.LLMCostBudget) {
			o.Quotas["team-ml"] = false
		}, point: api.PointQuota, status: metav1.ConditionFalse, reason: evaluate.ReasonQuotaNotEnforced,
			message: "has no status.hard in namespace team-ml"},
		{name: "a labelled namespace is in force", change: func(*evaluate.Observed, *api.LLMCostBudget) {},
			point: api.PointNamespaceLabel, status: metav1.ConditionTrue, reason: evaluate.ReasonInForce,
			message: "namespace team-ml carries the label llmbudget.dev/blocked=true"},
		{name: "an unlabelled namespace is named", change: func(o *evaluate.Observed, _ *api.LLMCostBudget) {
			o.Namespaces["team-ml"] = false
		}, point: api.PointNamespaceLabel, status: metav1.ConditionFalse, reason: evaluate.ReasonNamespaceUnlabeled,
			message: "namespace team-ml does not carry the label"},
		{name: "a live replica refusing is in force", change: func(*evaluate.Observed, *api.LLMCostBudget) {},
			point: api.PointAuthz, status: metav1.ConditionTrue, reason: evaluate.ReasonInForce,
			message: "1 of 1 live llmbudget authz replicas refuse for LLMCostBudget team-ml/chatbot"},
		{name: "an expired Lease is no live replica", change: func(o *evaluate.Observed, _ *api.LLMCostBudget) {
			o.Replicas[0].Expires = now
		}, point: api.PointAuthz, status: metav1.ConditionFalse, reason: evaluate.ReasonNoLiveReplica,
			message: "none of the 1 llmbudget authz replicas with a Lease renewed it in time"},
		{name: "an unsynced replica is named", change: func(o *evaluate.Observed, _ *api.LLMCostBudget) {
			o.Replicas = append(o.Replicas, evaluate.Replica{Name: "authz-1", Expires: now.Add(time.Second)})
		}, point: api.PointAuthz, status: metav1.ConditionFalse, reason: evaluate.ReasonReplicasNotRefuse,
			message: "1 of 2 live llmbudget authz replicas do not refuse for LLMCostBudget team-ml/chatbot yet: " +
				"authz-1 (not synced)"},
		{name: "a replica whose cut list leaves the budget out is Unknown", change: func(o *evaluate.Observed,
			_ *api.LLMCostBudget) {
			o.Replicas[0].Refusing, o.Replicas[0].Truncated = []string{"LLMCostBudget a/a"}, true
		}, point: api.PointAuthz, status: metav1.ConditionUnknown, reason: evaluate.ReasonRefusalsTruncated,
			message: "refuse for more budgets than their Lease lists"},
		{name: "fresh spend is in force", change: func(_ *evaluate.Observed, b *api.LLMCostBudget) {
			b.Spec.CostSource.MaxAge = "1h"
		}, point: api.PointSpend, status: metav1.ConditionTrue, reason: api.ReasonSpendFresh},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs, b := inForce(), budget(blockingBoth)
			tc.change(obs, &b)
			got := point(t, evalObserved(b, total("612"), obs).Status, tc.point)
			assert.Equal(t, tc.status, got.Status)
			assert.Equal(t, tc.reason, got.Reason)
			assert.Contains(t, got.Message, tc.message)
		})
	}
}

func TestThePointsTheSpecDoesNotAskForAreAbsent(t *testing.T) {
	cases := []struct {
		name   string
		budget api.LLMCostBudget
		spend  string
		obs    *evaluate.Observed
		want   []api.EnforcementPoint
	}{
		{"a blocking budget of both gates lists every point but Spend", budget(blockingBoth), "612", inForce(),
			[]api.EnforcementPoint{api.PointPolicy, api.PointQuota, api.PointNamespaceLabel, api.PointAuthz}},
		{"a budget that does not block lists the policy and authz, ready", budget(blockingBoth), "10", inForce(),
			[]api.EnforcementPoint{api.PointPolicy, api.PointAuthz}},
		{"a budget whose action is None lists nothing", budget(), "612", inForce(), nil},
		{"a suspended budget lists nothing", budget(blockingBoth, func(b *api.LLMCostBudget) {
			b.Spec.Suspend = true
		}), "612", inForce(), nil},
		{"without authz Leases there is no Authz point", budget(blockingBoth), "612",
			func() *evaluate.Observed { o := inForce(); o.Replicas = nil; return o }(),
			[]api.EnforcementPoint{api.PointPolicy, api.PointQuota, api.PointNamespaceLabel}},
		{"a Warn-mode budget lists the policy that warns and authz", budget(blockingBoth, func(b *api.LLMCostBudget) {
			b.Spec.Enforcement.Mode = api.ModeWarn
		}), "612", inForce(), []api.EnforcementPoint{api.PointPolicy, api.PointAuthz}},
		{"an offline evaluation lists nothing", budget(blockingBoth), "612", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := evalObserved(tc.budget, total(tc.spend), tc.obs).Status
			var got []api.EnforcementPoint
			for _, p := range st.EnforcementPoints {
				got = append(got, p.Point)
			}
			assert.Equal(t, tc.want, got)
			if tc.want == nil {
				assert.False(t, slices.ContainsFunc(st.Conditions, func(c metav1.Condition) bool {
					return c.Type == api.ConditionEnforced
				}), "no Enforced condition without a point")
			}
		})
	}
}

func TestTheEnforcedConditionNamesTheFirstPointNotInForce(t *testing.T) {
	obs := inForce()
	c := condition(t, evalObserved(budget(blockingBoth), total("612"), obs).Status, api.ConditionEnforced)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, "in force: Policy, Quota, NamespaceLabel, Authz", c.Message)

	obs.Quotas["team-ml"], obs.Namespaces["team-ml"] = false, false
	c = condition(t, evalObserved(budget(blockingBoth), total("612"), obs).Status, api.ConditionEnforced)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, evaluate.ReasonQuotaNotEnforced, c.Reason)
	assert.Contains(t, c.Message, "Quota is not in force: ResourceQuota llmbudget-chatbot")
}

func TestAPointsEntryDoesNotMoveWithTheClock(t *testing.T) {
	b := budget(blockingBoth)
	first := evalObserved(b, total("612"), inForce())
	b.Status = &first.Status
	later := evalObserved(b, total("612"), func() *evaluate.Observed {
		o := inForce()
		o.Replicas[0].Expires = now.Add(25 * time.Second) // renewed since
		return o
	}())
	assert.Equal(t, first.Status.EnforcementPoints, later.Status.EnforcementPoints)
}

func TestAResyncComesWhenTheFirstLiveLeaseWouldExpire(t *testing.T) {
	obs := inForce()
	obs.Replicas = append(obs.Replicas, evaluate.Replica{Name: "authz-1", Expires: now.Add(7 * time.Second),
		Synced: true, Refusing: []string{"LLMCostBudget team-ml/chatbot"}},
		evaluate.Replica{Name: "gone", Expires: now.Add(-time.Minute)})
	assert.Equal(t, 7*time.Second, evalObserved(budget(blockingBoth), total("612"), obs).ResyncAfter)
}

func TestAPointKeepsItsSinceWhileItsStatusAndReasonStay(t *testing.T) {
	b := budget(blockingBoth)
	obs := inForce()
	obs.Quotas["team-ml"] = false
	first := evalObserved(b, total("612"), obs)
	since := point(t, first.Status, api.PointQuota).Since
	require.NotNil(t, since)

	b.Status = &first.Status
	b.Status.LastEvaluatedTime = &metav1.Time{Time: now.Add(-10 * time.Second)} // dates what this sync finds
	obs.Quotas["team-ml"] = true
	fixed := evalObserved(b, total("612"), obs)
	assert.True(t, point(t, fixed.Status, api.PointQuota).Since.After(since.Time), "a new status starts anew")
	assert.Equal(t, since, point(t, fixed.Status, api.PointPolicy).Since, "an unchanged point keeps its since")
}
