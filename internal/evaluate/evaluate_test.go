package evaluate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

var (
	// Mid-November 2026 in UTC: 19 of 30 days into a Monthly period.
	now = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	// The budget was created a minute before its first sync, as Metacontroller syncs a new budget: the inputs
	// then date what its first sync finds.
	created = metav1.NewTime(now.Add(-time.Minute))
)

func ptr[T any](v T) *T { return &v }

// budget is a Monthly UTC budget of 500 USD reading key total-usd.
func budget(mut ...func(*api.LLMCostBudget)) api.LLMCostBudget {
	b := api.LLMCostBudget{
		Metadata: api.ObjectMeta{
			Name: "chatbot", Namespace: "team-ml", UID: "u-1", Generation: 3, CreationTimestamp: created,
		},
		Spec: api.Spec{
			LimitUSD:   ptr("500"),
			CostSource: api.CostSource{ConfigMapName: "llm-spend", Key: "total-usd"},
		},
	}
	for _, m := range mut {
		m(&b)
	}
	return b
}

func total(v string) map[string]string { return map[string]string{"total-usd": v} }

// subject names the budget as package budget does.
var subject = evaluate.Subject{
	Named: "LLMCostBudget chatbot", Qualified: "LLMCostBudget team-ml/chatbot", Where: "namespace team-ml",
	Quota: "llmbudget-chatbot", Policy: "llmbudget-budgets",
}

// eval does what a budget's hook does before it evaluates: it defaults and validates the spec, computes the
// period, and reads data (nil for a missing ConfigMap) into the spend value.
func eval(b api.LLMCostBudget, data map[string]string, at time.Time) evaluate.Result {
	b.Spec.Thresholds = slices.Clone(b.Spec.Thresholds) // Default fills them in
	b.Spec.Default()
	in := evaluate.Input{Budget: b, Invalid: b.Spec.Validate().ToAggregate(), Subject: subject, Now: at}
	if in.Invalid == nil {
		in.Window = b.Spec.PeriodSpec().Containing(at)
		in.Spend = spent(b.Spec.CostSource, data, in.Window)
	}
	return evaluate.Evaluate(in)
}

func spent(cs api.CostSource, data map[string]string, w period.Window) spend.Reading {
	if data == nil {
		return spend.Reading{Reason: api.ReasonCostSourceMissing, Message: "ConfigMap llm-spend not found"}
	}
	u, err := source.Data(source.Source{Format: cs.Format, Key: cs.Key, KeyPrefix: cs.KeyPrefix}, data, w)
	if err != nil {
		return spend.Reading{Reason: source.ReasonOf(err), Message: err.Error()}
	}
	return spend.Reading{Usage: u, Message: "spend read"}
}

func condition(t *testing.T, st api.Status, typ string) metav1.Condition {
	t.Helper()
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	require.Failf(t, "condition missing", "no %s condition in %+v", typ, st.Conditions)
	return metav1.Condition{}
}

func TestStateFollowsExactPercentages(t *testing.T) {
	cases := map[string]struct {
		spend   string
		state   api.State
		percent int64
	}{
		"nothing spent is under budget":         {"0", api.UnderBudget, 0},
		"79.99 percent is still under budget":   {"399.95", api.UnderBudget, 79},
		"exactly 80 percent is a warning":       {"400", api.Warning, 80},
		"99.999 percent is a warning, not over": {"499.995", api.Warning, 99},
		"499.999999999 of 500 is not over":      {"499.999999999", api.Warning, 99},
		"exactly 100 percent is over budget":    {"500", api.OverBudget, 100},
		"past the limit is over budget":         {"612.00", api.OverBudget, 122},
		"a nano-dollar past the limit is over":  {"500.000000001", api.OverBudget, 100},
		"the largest spend is counted exactly":  {"9223372036.854775807", api.OverBudget, 1_844_674_407},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := eval(budget(), total(tc.spend), now)
			assert.Equal(t, tc.state, r.Status.State)
			require.NotNil(t, r.Status.PercentUsed)
			assert.Equal(t, tc.percent, *r.Status.PercentUsed)
		})
	}
}

func TestStatusShowsMoneyWithTwoToNineDecimals(t *testing.T) {
	r := eval(budget(), total("120.5"), now)
	assert.Equal(t, "500.00", r.Status.LimitUSD)
	assert.Equal(t, "120.50", r.Status.ObservedSpendUSD)
	assert.Equal(t, "379.50", r.Status.RemainingUSD)

	over := eval(budget(), total("612.123456789"), now)
	assert.Equal(t, "0.00", over.Status.RemainingUSD, "remaining never goes negative")
	assert.Equal(t, "612.123456789", over.Status.ObservedSpendUSD)
}

func TestTokenLimits(t *testing.T) {
	withTokens := func(b *api.LLMCostBudget) {
		b.Spec.TokenLimits = &api.TokenLimits{Total: ptr[int64](1000), Output: ptr[int64](200)}
		b.Spec.CostSource.Key = "usage"
	}
	cases := map[string]struct {
		value string
		state api.State
	}{
		"tokens under every limit":           {`{"costUSD": "1", "inputTokens": 100, "outputTokens": 50}`, api.UnderBudget},
		"total tokens at 80 percent warn":    {`{"costUSD": "1", "inputTokens": 700, "outputTokens": 100}`, api.Warning},
		"total tokens exactly at the limit":  {`{"costUSD": "1", "inputTokens": 800, "outputTokens": 200}`, api.OverBudget},
		"output tokens past their own limit": {`{"costUSD": "1", "inputTokens": 0, "outputTokens": 201}`, api.OverBudget},
		"tokens fine but USD over the limit": {`{"costUSD": "500", "inputTokens": 1, "outputTokens": 1}`, api.OverBudget},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := eval(budget(withTokens), map[string]string{"usage": tc.value}, now)
			assert.Equal(t, tc.state, r.Status.State)
			require.NotNil(t, r.Status.Tokens)
		})
	}
}

func TestTokenOnlyBudgetReportsTokenPercent(t *testing.T) {
	b := budget(func(b *api.LLMCostBudget) {
		b.Spec.LimitUSD = nil
		b.Spec.TokenLimits = &api.TokenLimits{Input: ptr[int64](1000)}
	})
	r := eval(b, total(`{"costUSD": "3.5", "inputTokens": 900}`), now)
	assert.Equal(t, api.Warning, r.Status.State)
	require.NotNil(t, r.Status.PercentUsed)
	assert.Equal(t, int64(90), *r.Status.PercentUsed)
	assert.Empty(t, r.Status.LimitUSD)
	assert.Empty(t, r.Status.RemainingUSD)
	assert.Empty(t, r.Status.ForecastSpendUSD)
}

func TestUnreadableSpendIsUnknownWithTheReason(t *testing.T) {
	cases := map[string]struct {
		data   map[string]string
		reason string
		msg    string
	}{
		"the ConfigMap does not exist": {nil, api.ReasonCostSourceMissing, "ConfigMap llm-spend not found"},
		"the key is absent":            {map[string]string{"other": "1"}, api.ReasonCostKeyMissing, `"total-usd"`},
		"the value is not a decimal":   {total("twelve"), api.ReasonInvalidCostData, `"total-usd"`},
		"the value is negative":        {total("-1"), api.ReasonInvalidCostData, `"total-usd"`},
		"the value has an exponent":    {total("1e3"), api.ReasonInvalidCostData, `"total-usd"`},
		"the value is empty":           {total(""), api.ReasonInvalidCostData, `"total-usd"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := eval(budget(), tc.data, now)
			assert.Equal(t, api.Unknown, r.Status.State)
			c := condition(t, r.Status, api.ConditionBudgetEvaluated)
			assert.Equal(t, metav1.ConditionFalse, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Contains(t, c.Message, tc.msg)
			assert.Empty(t, r.Status.ObservedSpendUSD)
			require.Len(t, r.Announcements, 1)
			assert.Equal(t, tc.reason, r.Announcements[0].Reason)
		})
	}
}

// Validation is the caller's (package api's rules); what evaluate guarantees is that an invalid spec is Unknown,
// names the field in its conditions, and never blocks.
func TestInvalidSpecIsUnknownNamingTheField(t *testing.T) {
	cases := map[string]struct {
		mut  func(*api.LLMCostBudget)
		want string
	}{
		"a zero limit":   {func(b *api.LLMCostBudget) { b.Spec.LimitUSD = ptr("0") }, "spec.limitUSD"},
		"seven decimals": {func(b *api.LLMCostBudget) { b.Spec.LimitUSD = ptr("1.0000001") }, "spec.limitUSD"},
		"an unknown time zone": {
			func(b *api.LLMCostBudget) { b.Spec.Period.TimeZone = "Mars/Olympus" }, "spec.period.timeZone",
		},
		"startDay 29 for Monthly": {
			func(b *api.LLMCostBudget) { b.Spec.Period.StartDay = ptr[int32](29) }, "spec.period.startDay",
		},
		"startDay 8 for Weekly": {func(b *api.LLMCostBudget) {
			b.Spec.Period.Type = api.Weekly
			b.Spec.Period.StartDay = ptr[int32](8)
		}, "spec.period.startDay"},
		"an unknown period type": {func(b *api.LLMCostBudget) { b.Spec.Period.Type = "Hourly" }, "spec.period.type"},
		"warn threshold 0": {
			func(b *api.LLMCostBudget) { b.Spec.WarnThresholdPercent = ptr[int32](0) }, "spec.warnThresholdPercent",
		},
		"warn threshold 101": {
			func(b *api.LLMCostBudget) { b.Spec.WarnThresholdPercent = ptr[int32](101) }, "spec.warnThresholdPercent",
		},
		"duplicate thresholds": {func(b *api.LLMCostBudget) {
			b.Spec.Thresholds = []api.Threshold{{Percent: 50}, {Percent: 50, Basis: api.Actual}}
		}, "spec.thresholds[1]"},
		"a threshold of 1001": {
			func(b *api.LLMCostBudget) { b.Spec.Thresholds = []api.Threshold{{Percent: 1001}} },
			"spec.thresholds[0].percent",
		},
		"eleven thresholds": {func(b *api.LLMCostBudget) { b.Spec.Thresholds = elevenThresholds() }, "spec.thresholds"},
		"no configMapName": {
			func(b *api.LLMCostBudget) { b.Spec.CostSource.ConfigMapName = "" }, "spec.costSource.configMapName",
		},
		"Total without a key": {func(b *api.LLMCostBudget) { b.Spec.CostSource.Key = "" }, "spec.costSource.key"},
		"a prefix with Total": {
			func(b *api.LLMCostBudget) { b.Spec.CostSource.KeyPrefix = "spend-" }, "spec.costSource.keyPrefix",
		},
		"blocking with no resource": {
			func(b *api.LLMCostBudget) { b.Spec.Enforcement.Action = api.BlockNewWorkloads },
			"spec.enforcement.resources",
		},
		"a malformed resource": {func(b *api.LLMCostBudget) {
			b.Spec.Enforcement = api.Enforcement{Action: api.BlockNewWorkloads, Resources: []string{"Jobs/batch"}}
		}, "spec.enforcement.resources[0]"},
		"the labelled scope through a quota": {func(b *api.LLMCostBudget) {
			b.Spec.Enforcement = api.Enforcement{Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"},
				Gate: api.GateBoth, Scope: api.ScopeLabelled}
		}, "spec.enforcement.scope"},
		"an unknown gate": {
			func(b *api.LLMCostBudget) { b.Spec.Enforcement.Gate = "Webhook" }, "spec.enforcement.gate",
		},
		"no limit and no tokens": {func(b *api.LLMCostBudget) { b.Spec.LimitUSD = nil }, "spec.limitUSD"},
		"a negative token limit": {
			func(b *api.LLMCostBudget) { b.Spec.TokenLimits = &api.TokenLimits{Total: ptr[int64](-1)} },
			"spec.tokenLimits.total",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := budget(tc.mut, func(b *api.LLMCostBudget) {
				b.Spec.Enforcement.FailurePolicy = api.FailClosed // an invalid spec never blocks, even so
			})
			r := eval(b, total("1"), now)
			assert.Equal(t, api.Unknown, r.Status.State)
			c := condition(t, r.Status, api.ConditionBudgetEvaluated)
			assert.Equal(t, api.ReasonInvalidSpec, c.Reason)
			assert.Contains(t, c.Message, tc.want)
			ready := condition(t, r.Status, api.ConditionReady)
			assert.Equal(t, metav1.ConditionFalse, ready.Status)
			assert.Nil(t, r.Quota, "an invalid spec never blocks")
			assert.False(t, r.Status.Enforcement.Blocking)
		})
	}
}

func elevenThresholds() []api.Threshold {
	var ts []api.Threshold
	for p := int32(10); p <= 110; p += 10 {
		ts = append(ts, api.Threshold{Percent: p})
	}
	return ts
}

func TestThresholdsFireOncePerPeriodAndResetAtRollover(t *testing.T) {
	b := budget()
	first := eval(b, total("410"), now)
	require.Len(t, first.Status.Thresholds, 2)
	assert.Equal(t, created.Time, first.Status.Thresholds[0].CrossedAt.Time, "80% crossed, as the inputs place it")
	assert.Nil(t, first.Status.Thresholds[1].CrossedAt, "100% not crossed")
	require.Len(t, first.Announcements, 1)
	assert.Equal(t, "BudgetWarning", first.Announcements[0].Reason)

	// An hour later, still at 80%: the crossing stays recorded, the Event is no longer desired.
	b.Status = &first.Status
	later := eval(b, total("420"), now.Add(time.Hour))
	assert.Equal(t, created.Time, later.Status.Thresholds[0].CrossedAt.Time)
	assert.Empty(t, later.Announcements)

	// 54 minutes after the crossing the Event is still desired, unchanged.
	soon := eval(b, total("420"), created.Add(54*time.Minute))
	require.Len(t, soon.Announcements, 1)
	assert.Equal(t, first.Announcements[0], soon.Announcements[0])

	// Spend falls back (a correction) and rises again: no second crossing this period.
	b.Status = &later.Status
	again := eval(b, total("420"), now.Add(2*time.Hour))
	assert.Equal(t, created.Time, again.Status.Thresholds[0].CrossedAt.Time)

	// December: the thresholds reset, November goes to history.
	b.Status = &again.Status
	dec := time.Date(2026, 12, 1, 0, 10, 0, 0, time.UTC)
	next := eval(b, total("0"), dec)
	assert.Nil(t, next.Status.Thresholds[0].CrossedAt)
	require.Len(t, next.Status.History, 1)
	assert.Equal(t, api.HistoryEntry{
		Start: "2026-11-01T00:00:00Z", End: "2026-12-01T00:00:00Z", SpentUSD: "420.00", LimitUSD: "500.00",
		State: api.Warning,
	}, next.Status.History[0])
	require.Len(t, next.Announcements, 1)
	assert.Equal(t, "BudgetPeriodReset", next.Announcements[0].Reason)
	assert.Contains(t, next.Announcements[0].Message, "previous period ended Warning with 420.00 of 500.00 USD spent")
}

func TestHistoryKeepsTheLastTwelvePeriods(t *testing.T) {
	b := budget()
	at := time.Date(2025, 1, 15, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 15; i++ {
		r := eval(b, total("10"), at.AddDate(0, i, 0))
		b.Status = &r.Status
	}
	require.Len(t, b.Status.History, api.MaxHistory)
	assert.Equal(t, "2025-03-01T00:00:00Z", b.Status.History[0].Start, "the oldest two periods were dropped")
	assert.Equal(t, "2026-02-01T00:00:00Z", b.Status.History[11].Start)
}

func TestForecastAppearsAfterATenthOfThePeriod(t *testing.T) {
	b := budget(func(b *api.LLMCostBudget) {
		b.Spec.Thresholds = []api.Threshold{{Percent: 100, Basis: api.Forecasted}}
	})
	early := eval(b, total("100"), time.Date(2026, 11, 3, 23, 0, 0, 0, time.UTC))
	assert.Empty(t, early.Status.ForecastSpendUSD, "2 days 23 hours of 30 days is under a tenth")
	assert.Equal(t, evaluate.Restamp, early.ResyncAfter, "the restamp is the nearest")

	justBefore := eval(b, total("100"), time.Date(2026, 11, 3, 23, 50, 0, 0, time.UTC))
	assert.Equal(t, 10*time.Minute, justBefore.ResyncAfter, "look again when the forecast appears")

	// 15 of 30 days gone, 300 spent: 600 forecast, 120% of the limit.
	mid := eval(b, total("300"), time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC))
	assert.Equal(t, "600.00", mid.Status.ForecastSpendUSD)
	assert.Equal(t, api.UnderBudget, mid.Status.State)
	require.Len(t, mid.Announcements, 1)
	assert.Equal(t, "ForecastOverBudget", mid.Announcements[0].Reason)
	assert.NotNil(t, mid.Status.Thresholds[0].CrossedAt)
}

func TestResyncReachesThePeriodEndWithinASecond(t *testing.T) {
	b := budget(func(b *api.LLMCostBudget) { b.Spec.Period.Type = api.Daily })
	r := eval(b, total("1"), time.Date(2026, 11, 20, 23, 59, 30, 500_000_000, time.UTC))
	assert.Equal(t, 29500*time.Millisecond, r.ResyncAfter)
	r = eval(b, total("1"), time.Date(2026, 11, 20, 23, 59, 59, 999_000_000, time.UTC))
	assert.Equal(t, time.Second, r.ResyncAfter, "never less than a second")
}

func TestConditionsKeepTheirTransitionTimeWhileUnchanged(t *testing.T) {
	b := budget()
	first := eval(b, total("10"), now)
	b.Status = &first.Status
	second := eval(b, total("20"), now.Add(time.Hour))
	for _, c := range second.Status.Conditions {
		assert.Equal(t, created.Time, c.LastTransitionTime.Time, c.Type)
	}
	b.Status = &second.Status
	third := eval(b, total("600"), now.Add(2*time.Hour))
	over := condition(t, third.Status, api.ConditionOverBudget)
	assert.Equal(t, metav1.ConditionTrue, over.Status)
	assert.Equal(t, second.Status.LastEvaluatedTime.Time, over.LastTransitionTime.Time,
		"unstamped spend changed after the last evaluation, which dates the change")
	ready := condition(t, third.Status, api.ConditionReady)
	assert.Equal(t, created.Time, ready.LastTransitionTime.Time)
	assert.Equal(t, int64(3), ready.ObservedGeneration)
}

func TestEnforcement(t *testing.T) {
	blocking := func(policy api.FailurePolicy) func(*api.LLMCostBudget) {
		return func(b *api.LLMCostBudget) {
			b.Spec.Enforcement = api.Enforcement{
				Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch", "deployments.apps"}, FailurePolicy: policy,
			}
		}
	}
	suspended := func(b *api.LLMCostBudget) { b.Spec.Suspend = true }
	cases := map[string]struct {
		b     api.LLMCostBudget
		data  map[string]string
		block bool
	}{
		"over budget blocks":                     {budget(blocking("")), total("500"), true},
		"a warning does not block":               {budget(blocking("")), total("499"), false},
		"unknown spend with Open does not block": {budget(blocking(api.FailOpen)), nil, false},
		"unknown spend with Closed blocks":       {budget(blocking(api.FailClosed)), nil, true},
		"suspend disables blocking":              {budget(blocking(api.FailClosed), suspended), total("900"), false},
		"action None never blocks":               {budget(), total("900"), false},
	}
	for name, tc := range cases {
		for _, gate := range []api.Gate{api.GatePolicy, api.GateQuota, api.GateBoth} {
			t.Run(name+" with gate "+string(gate), func(t *testing.T) {
				tc.b.Spec.Enforcement.Gate = gate
				r := eval(tc.b, tc.data, now)
				require.NotNil(t, r.Status.Enforcement)
				assert.Equal(t, tc.block, r.Status.Enforcement.Blocking)
				c := condition(t, r.Status, api.ConditionBlocking)
				if !tc.block {
					assert.Nil(t, r.Quota)
					assert.Empty(t, r.Status.Enforcement.Gates, "no gate is in force")
					assert.Equal(t, metav1.ConditionFalse, c.Status)
					return
				}
				assert.Equal(t, metav1.ConditionTrue, c.Status)
				assert.Equal(t, gate.Gates(), r.Status.Enforcement.Gates)
				assert.Equal(t, []string{"jobs.batch", "deployments.apps"}, r.Status.Enforcement.Resources)
				assert.Equal(t, api.ScopeNamespace, r.Status.Enforcement.Scope)
				if gate == api.GatePolicy {
					assert.Nil(t, r.Quota, "the policy gate needs no ResourceQuota")
					assert.Empty(t, r.Status.Enforcement.QuotaName)
					return
				}
				require.NotNil(t, r.Quota)
				assert.Equal(t, "llmbudget-chatbot", r.Quota.Name)
				assert.Equal(t, []string{"jobs.batch", "deployments.apps"}, r.Quota.Resources)
				assert.Equal(t, "llmbudget-chatbot", r.Status.Enforcement.QuotaName)
			})
		}
	}
}

func TestBlockingStatusSaysWhatThePolicyTells(t *testing.T) {
	block := func(gate api.Gate, scope api.Scope, policy api.FailurePolicy) func(*api.LLMCostBudget) {
		return func(b *api.LLMCostBudget) {
			b.Spec.Period.TimeZone = "Europe/Berlin"
			b.Spec.Enforcement = api.Enforcement{
				Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"}, Gate: gate, Scope: scope,
				FailurePolicy: policy,
			}
		}
	}
	tokens := func(b *api.LLMCostBudget) { b.Spec.TokenLimits = &api.TokenLimits{Total: ptr(int64(1000))} }
	cases := map[string]struct {
		b       api.LLMCostBudget
		data    map[string]string
		message string
		reason  string
	}{
		"spend over the limit": {
			budget(block(api.GatePolicy, "", "")), total("512.4"),
			"LLMCostBudget team-ml/chatbot is OverBudget (512.40 of 500.00 USD this Monthly period, ends " +
				"2026-12-01T00:00:00+01:00)",
			"LLMCostBudget chatbot is OverBudget (spend reached its limit: 512.40 of 500.00 USD) for the period " +
				"2026-11-01T00:00:00+01:00 to 2026-12-01T00:00:00+01:00: new jobs.batch are refused in namespace team-ml by " +
				"ValidatingAdmissionPolicy llmbudget-budgets",
		},
		"labelled scope": {
			budget(block(api.GatePolicy, api.ScopeLabelled, "")), total("600"),
			"LLMCostBudget team-ml/chatbot is OverBudget (600.00 of 500.00 USD this Monthly period, ends " +
				"2026-12-01T00:00:00+01:00)",
			"LLMCostBudget chatbot is OverBudget (spend reached its limit: 600.00 of 500.00 USD) for the period " +
				"2026-11-01T00:00:00+01:00 to 2026-12-01T00:00:00+01:00: new jobs.batch labelled llmbudget.dev/budget=chatbot " +
				"are refused in namespace team-ml by ValidatingAdmissionPolicy llmbudget-budgets",
		},
		"both gates": {
			budget(block(api.GateBoth, "", "")), total("600"),
			"LLMCostBudget team-ml/chatbot is OverBudget (600.00 of 500.00 USD this Monthly period, ends " +
				"2026-12-01T00:00:00+01:00)",
			"LLMCostBudget chatbot is OverBudget (spend reached its limit: 600.00 of 500.00 USD) for the period " +
				"2026-11-01T00:00:00+01:00 to 2026-12-01T00:00:00+01:00: new jobs.batch are refused in namespace team-ml by " +
				"ValidatingAdmissionPolicy llmbudget-budgets and ResourceQuota llmbudget-chatbot",
		},
		"tokens over their limit": {
			budget(block(api.GateQuota, "", ""), tokens, func(b *api.LLMCostBudget) { b.Spec.LimitUSD = nil }),
			total(`{"costUSD": "1", "inputTokens": 700, "outputTokens": 500}`),
			"LLMCostBudget team-ml/chatbot is OverBudget (total tokens 1200 of 1000 this Monthly period, ends " +
				"2026-12-01T00:00:00+01:00)",
			"LLMCostBudget chatbot is OverBudget (total tokens reached its limit: 1200 of 1000) for the period " +
				"2026-11-01T00:00:00+01:00 to 2026-12-01T00:00:00+01:00: new jobs.batch are refused in namespace team-ml by " +
				"ResourceQuota llmbudget-chatbot",
		},
		"unknown spend, failing closed": {
			budget(block(api.GatePolicy, "", api.FailClosed)), nil,
			"LLMCostBudget team-ml/chatbot is Unknown (CostSourceMissing, failurePolicy Closed; this Monthly period, ends " +
				"2026-12-01T00:00:00+01:00)",
			"LLMCostBudget chatbot cannot read its spend (CostSourceMissing) and its failurePolicy is Closed: new jobs.batch " +
				"are refused in namespace team-ml by ValidatingAdmissionPolicy llmbudget-budgets",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := eval(tc.b, tc.data, now)
			enf := r.Status.Enforcement
			require.NotNil(t, enf)
			require.True(t, enf.Blocking)
			assert.Equal(t, tc.message, enf.Message)
			assert.Equal(t, tc.reason, enf.Reason)
			assert.Equal(t, tc.reason, condition(t, r.Status, api.ConditionBlocking).Message,
				"the BlockingNewWorkloads Event names the gate")
		})
	}
}

func TestSuspendedBudgetAnnouncesNothing(t *testing.T) {
	b := budget(func(b *api.LLMCostBudget) { b.Spec.Suspend = true })
	r := eval(b, total("700"), now)
	assert.Equal(t, api.OverBudget, r.Status.State, "still evaluated and reported")
	assert.Empty(t, r.Announcements)
}

// liftedBlock is a budget that blocked at now and, its limit raised, lifted
// the block at liftAt: the budget as last synced, and the lifting result.
func liftedBlock(t *testing.T, liftAt time.Time) (api.LLMCostBudget, evaluate.Result) {
	t.Helper()
	b := budget(func(b *api.LLMCostBudget) {
		b.Spec.Enforcement = api.Enforcement{
			Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"}, Gate: api.GateQuota,
		}
	})
	over := eval(b, total("600"), now)
	require.NotNil(t, over.Quota)
	b.Status = &over.Status
	// Metacontroller resyncs by Restamp, which moves lastEvaluatedTime: the lift comes after that sync.
	restamped := eval(b, total("600"), liftAt.Add(-5*time.Minute))
	b.Status = &restamped.Status
	b.Spec.LimitUSD = ptr("1000")
	lifted := eval(b, total("600"), liftAt)
	require.Nil(t, lifted.Quota)
	return b, lifted
}

func TestUnblockingIsAnnouncedOnce(t *testing.T) {
	b, lifted := liftedBlock(t, now.Add(time.Hour))
	var reasons []string
	for _, a := range lifted.Announcements {
		reasons = append(reasons, a.Reason)
	}
	assert.Equal(t, []string{"Unblocked"}, reasons)
	b.Status = &lifted.Status
	quiet := eval(b, total("600"), now.Add(4*time.Hour))
	assert.Empty(t, quiet.Announcements)
	assert.Equal(t, evaluate.ReasonNotBlocking, condition(t, quiet.Status, api.ConditionBlocking).Reason)
}

// The Unblocked Event tells the moment a gate was lifted; the condition's
// reason tells why nothing is blocked now.
func TestAfterALiftTheBlockingReasonSaysWhyItHoldsNow(t *testing.T) {
	b, lifted := liftedBlock(t, now.Add(time.Hour))
	c := condition(t, lifted.Status, api.ConditionBlocking)
	assert.Equal(t, evaluate.ReasonNotBlocking, c.Reason, "the lifting sync")
	lastEvaluated := now.Add(55 * time.Minute)
	assert.Equal(t, lastEvaluated, c.LastTransitionTime.Time, "the lift came after the last evaluation, which dates it")

	cases := map[string]struct {
		change func(*api.LLMCostBudget)
		reason string
	}{
		"nothing changes": {func(*api.LLMCostBudget) {}, evaluate.ReasonNotBlocking},
		"suspend: true":   {func(b *api.LLMCostBudget) { b.Spec.Suspend = true }, evaluate.ReasonSuspended},
		"enforcement is None": {
			func(b *api.LLMCostBudget) { b.Spec.Enforcement.Action = api.ActionNone }, evaluate.ReasonEnforcementDisabled,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			later := b
			later.Spec.Enforcement.Resources = slices.Clone(b.Spec.Enforcement.Resources)
			later.Status = &lifted.Status
			tc.change(&later)
			r := eval(later, total("600"), now.Add(2*time.Hour))
			c := condition(t, r.Status, api.ConditionBlocking)
			assert.Equal(t, metav1.ConditionFalse, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Equal(t, lastEvaluated, c.LastTransitionTime.Time, "still False since the lift")
		})
	}
}

func TestTheUnblockedEventNamesTheGatesThatOpened(t *testing.T) {
	cases := map[api.Gate]string{
		api.GatePolicy: "ValidatingAdmissionPolicy llmbudget-budgets no longer refuses for LLMCostBudget chatbot: new " +
			"workloads are admitted again in namespace team-ml",
		api.GateQuota: "ResourceQuota llmbudget-chatbot was lifted: new workloads are admitted again in namespace team-ml",
		api.GateBoth: "ValidatingAdmissionPolicy llmbudget-budgets no longer refuses for LLMCostBudget chatbot and " +
			"ResourceQuota llmbudget-chatbot was lifted: new workloads are admitted again in namespace team-ml",
	}
	for gate, want := range cases {
		t.Run(string(gate), func(t *testing.T) {
			b := budget(func(b *api.LLMCostBudget) {
				b.Spec.Enforcement = api.Enforcement{Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"}, Gate: gate}
			})
			over := eval(b, total("600"), now)
			b.Status = &over.Status
			lifted := eval(b, total("100"), now.Add(time.Minute))
			var got []string
			for _, a := range lifted.Announcements {
				if a.Reason == evaluate.ReasonUnblocked {
					got = append(got, a.Message)
				}
			}
			assert.Equal(t, []string{want}, got)
		})
	}
}

func TestForeignStatusIsTolerated(t *testing.T) {
	b := budget()
	b.Status = &api.Status{State: api.OverBudget, ObservedSpendUSD: "612.00", Period: &api.PeriodStatus{Start: "garbage"}}
	r := eval(b, total("10"), now)
	assert.Equal(t, api.UnderBudget, r.Status.State)
	assert.Empty(t, r.Status.History, "an unreadable period is not a rollover")
}

func TestRedefiningThePeriodStartsAfreshWithoutHistory(t *testing.T) {
	b := budget()
	first := eval(b, total("450"), now)
	b.Status = &first.Status
	b.Spec.Period.Type = api.Daily
	daily := eval(b, total("10"), now.Add(time.Hour))
	assert.Empty(t, daily.Status.History, "November never finished")
	assert.Equal(t, "2026-11-20T00:00:00Z", daily.Status.Period.Start)
	assert.Nil(t, daily.Status.Thresholds[0].CrossedAt)
}

// Metacontroller syncs a parent again whenever its status changes: a sync of
// an unchanged budget must return the very status it was given.
func TestAnUnchangedBudgetGetsAnUnchangedStatus(t *testing.T) {
	b := budget(func(b *api.LLMCostBudget) {
		b.Spec.Thresholds = []api.Threshold{{Percent: 80}, {Percent: 100, Basis: api.Forecasted}}
	})
	at := time.Date(2026, 11, 20, 12, 5, 0, 0, time.UTC)
	first := eval(b, total("410"), at)
	b.Status = &first.Status
	for _, later := range []time.Duration{time.Second, 10 * time.Minute, evaluate.Restamp - time.Second} {
		echo := eval(b, total("410"), at.Add(later))
		assert.Equal(t, first.Status, echo.Status, "after %v", later)
	}

	restamped := eval(b, total("410"), at.Add(evaluate.Restamp))
	assert.Equal(t, at.Add(evaluate.Restamp), restamped.Status.LastEvaluatedTime.Time, "restamped once")
	b.Status = &restamped.Status
	echo := eval(b, total("410"), at.Add(evaluate.Restamp+time.Second))
	assert.Equal(t, restamped.Status, echo.Status, "then unchanged again")
	b.Status = &first.Status

	nextHour := eval(b, total("410"), at.Add(time.Hour))
	assert.NotEqual(t, first.Status.ForecastSpendUSD, nextHour.Status.ForecastSpendUSD, "the forecast moves hourly")
	assert.Equal(t, at.Add(time.Hour), nextHour.Status.LastEvaluatedTime.Time)

	moreSpend := eval(b, total("411"), at.Add(time.Minute))
	assert.Equal(t, at.Add(time.Minute), moreSpend.Status.LastEvaluatedTime.Time, "a change stamps the evaluation")
}

func TestResyncFollowsTheHourlyForecast(t *testing.T) {
	r := eval(budget(), total("10"), time.Date(2026, 11, 20, 12, 50, 0, 0, time.UTC))
	assert.Equal(t, 10*time.Minute, r.ResyncAfter, "the forecast next changes at 13:00")
}

func TestResyncComesByTheTimeLastEvaluatedTimeIsRestampOld(t *testing.T) {
	r := eval(budget(), total("10"), time.Date(2026, 11, 20, 12, 5, 0, 0, time.UTC))
	assert.Equal(t, evaluate.Restamp, r.ResyncAfter, "the forecast next changes at 13:00, later")
}

// Metacontroller deletes a child that is no longer desired; an Event dropped
// early would come back later as a second announcement.
func TestAnAnnouncedEventStaysForItsWindowWhateverTheBudgetDoes(t *testing.T) {
	b := budget()
	gone := eval(b, nil, now)
	require.Len(t, gone.Announcements, 1)
	assert.Equal(t, api.ReasonCostSourceMissing, gone.Announcements[0].Reason)

	b.Status = &gone.Status
	back := eval(b, total("10"), now.Add(10*time.Second))
	assert.Equal(t, api.UnderBudget, back.Status.State)
	require.Len(t, back.Announcements, 1, "the ConfigMap is back, the Event stays")
	assert.Equal(t, gone.Announcements[0], back.Announcements[0])

	b.Status = &back.Status
	b.Spec.Suspend = true
	suspended := eval(b, total("450"), now.Add(20*time.Second))
	assert.Equal(t, gone.Announcements, suspended.Announcements, "suspending announces nothing new and drops nothing")

	b.Status = &suspended.Status
	b.Spec.Suspend = false
	resumed := eval(b, total("450"), now.Add(30*time.Second))
	var reasons []string
	for _, a := range resumed.Announcements {
		reasons = append(reasons, a.Reason)
	}
	assert.Equal(t, []string{api.ReasonCostSourceMissing, "BudgetWarning"}, reasons)

	b.Status = &resumed.Status
	expired := eval(b, total("450"), created.Add(55*time.Minute+10*time.Second))
	require.Len(t, expired.Announcements, 1, "the first one's window is over")
	assert.Equal(t, "BudgetWarning", expired.Announcements[0].Reason)
}

// The hook or Metacontroller was down for two hours, during which the spend (without a stamp of its own) crossed
// the limit: the inputs date the crossing at the last evaluation, before the Event's window. The sync that finds it
// announces it all the same, under a name and words that follow from the inputs alone, and its record keeps the
// Event for AnnounceFor from its creation, then lets it go for good.
func TestACrossingFoundAfterAnOutageIsAnnouncedOnce(t *testing.T) {
	b := budget()
	before := eval(b, total("100"), now)
	require.Equal(t, api.UnderBudget, before.Status.State)
	b.Status = &before.Status

	back := now.Add(2 * time.Hour)
	found := eval(b, total("600"), back)
	require.Equal(t, api.OverBudget, found.Status.State)
	assert.Equal(t, []string{"threshold-100-actual", "threshold-80-actual"}, slugs(found),
		"a crossing first found after the outage is announced")
	for _, a := range found.Announcements {
		assert.Equal(t, now, a.At, "dated by the inputs (the last evaluation), never the clock")
	}
	stale := eval(b, total("600"), back.Add(40*time.Second))
	assert.Equal(t, found.Announcements, stale.Announcements, "a stale or concurrent sync desires the same Events")

	b.Status = &found.Status
	unseen := eval(b, total("600"), back.Add(time.Minute))
	assert.Equal(t, found.Announcements, unseen.Announcements, "kept before any child shows it")

	createdAt := back.Add(2 * time.Second)
	shown := map[evaluate.Occurrence]time.Time{}
	for _, a := range found.Announcements {
		shown[evaluate.Occurrence{Slug: a.Slug, At: a.At.Unix()}] = createdAt
	}
	kept := evalShown(b, total("600"), createdAt.Add(evaluate.AnnounceFor-time.Second), shown)
	assert.Equal(t, found.Announcements, kept.Announcements, "kept for AnnounceFor from its creation")
	assert.Equal(t, time.Second, kept.ResyncAfter, "and looked at again when that ends")

	gone := evalShown(b, total("600"), createdAt.Add(evaluate.AnnounceFor), shown)
	assert.Empty(t, gone.Announcements, "then let go, before the API server's event TTL")
	b.Status = &gone.Status
	later := evalShown(b, total("600"), createdAt.Add(evaluate.AnnounceFor+time.Minute), nil)
	assert.Empty(t, later.Announcements, "and never announced again")
}

func slugs(r evaluate.Result) []string {
	var out []string
	for _, a := range r.Announcements {
		out = append(out, a.Slug)
	}
	return out
}

// evalShown is eval with the Events the request's children show created.
func evalShown(b api.LLMCostBudget, data map[string]string, at time.Time,
	created map[evaluate.Occurrence]time.Time) evaluate.Result {
	b.Spec.Thresholds = slices.Clone(b.Spec.Thresholds)
	b.Spec.Default()
	in := evaluate.Input{Budget: b, Subject: subject, Now: at, Created: created}
	in.Window = b.Spec.PeriodSpec().Containing(at)
	in.Spend = spent(b.Spec.CostSource, data, in.Window)
	return evaluate.Evaluate(in)
}

// A budget OverBudget on tokens while its spend is under its USD limit must not announce that the USD limit was
// reached: each message names the limit reached and gives its figures.
func TestMessagesNameTheLimitReachedWithItsFigures(t *testing.T) {
	tokens := func(b *api.LLMCostBudget) {
		b.Spec.LimitUSD = ptr("25")
		b.Spec.TokenLimits = &api.TokenLimits{Output: ptr[int64](250000)}
		b.Spec.Enforcement = api.Enforcement{Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"}}
	}
	model := func(b *api.LLMCostBudget) {
		b.Spec.ModelLimits = []api.ModelLimit{{Model: "gpt-4o", TokenLimits: &api.TokenLimits{Input: ptr[int64](1000)}}}
	}
	cases := map[string]struct {
		b         api.LLMCostBudget
		value     string
		announced string // the OverBudget Event's message, up to the period
		condition string // the OverBudget condition's message, up to its first colon
	}{
		"USD spend over its limit": {
			b: budget(tokens), value: `{"costUSD": "26", "outputTokens": 1}`,
			announced: "spend reached 100% of its limit (26.00 of 25.00 USD)",
			condition: "spend reached its limit (26.00 of 25.00 USD)",
		},
		"output tokens over their limit while USD is at 92 percent": {
			b: budget(tokens), value: `{"costUSD": "23.10", "outputTokens": 410000}`,
			announced: "output tokens reached 100% of its limit (410000 of 250000)",
			condition: "output tokens reached its limit (410000 of 250000)",
		},
		"a model's input tokens over their limit": {
			b:         budget(tokens, model),
			value:     `{"costUSD": "1", "models": {"gpt-4o": {"costUSD": "1", "inputTokens": 1500}}}`,
			announced: "model gpt-4o input tokens reached 100% of its limit (1500 of 1000)",
			condition: "model gpt-4o input tokens reached its limit (1500 of 1000)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := eval(tc.b, total(tc.value), now)
			require.Equal(t, api.OverBudget, r.Status.State)
			var over []string
			for _, a := range r.Announcements {
				if a.Reason == "OverBudget" {
					over = append(over, a.Message)
				}
			}
			require.Len(t, over, 1)
			assert.Equal(t, tc.announced+" in the Monthly period 2026-11-01T00:00:00Z to 2026-12-01T00:00:00Z", over[0])
			c := condition(t, r.Status, api.ConditionOverBudget)
			assert.Equal(t, tc.condition, c.Message[:strings.Index(c.Message, ":")])
			assert.Contains(t, r.Status.Enforcement.Reason, tc.condition[:strings.Index(tc.condition, " (")])
		})
	}
}

// A budget's own users can delete or garble its spend ConfigMap: an unreadable source must not lift a block on
// spend read in the same period, whatever the failurePolicy.
func TestAnUnreadableSourceNeverLiftsABlockInTheSamePeriod(t *testing.T) {
	blocking := func(b *api.LLMCostBudget) {
		b.Spec.Enforcement = api.Enforcement{Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"},
			Gate: api.GateBoth, FailurePolicy: api.FailOpen}
	}
	later := now.Add(10 * time.Minute)
	cases := map[string]struct {
		change func(*api.LLMCostBudget)
		data   map[string]string
		at     time.Time
		blocks bool
		state  api.State
	}{
		"the ConfigMap goes": {data: nil, at: later, blocks: true, state: api.Unknown},
		"the key goes":       {data: map[string]string{"other": "0"}, at: later, blocks: true, state: api.Unknown},
		"the value is garbage": {
			data: total("garbage"), at: later, blocks: true, state: api.Unknown,
		},
		"readable spend under the limit lifts it": {data: total("10"), at: later, state: api.UnderBudget},
		"a new period lifts it, as failurePolicy Open says": {
			data: nil, at: time.Date(2026, 12, 1, 0, 10, 0, 0, time.UTC), state: api.Unknown,
		},
		"an administrator's spec change lifts it, as failurePolicy Open says": {
			change: func(b *api.LLMCostBudget) { b.Metadata.Generation++ }, data: nil, at: later, state: api.Unknown,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := budget(blocking)
			over := eval(b, total("612"), now)
			require.True(t, over.Status.Enforcement.Blocking)
			require.NotNil(t, over.Status.Enforcement.BlockedOn)
			assert.Equal(t, "spend 612.00 of 500.00 USD", over.Status.Enforcement.BlockedOn.Reading)
			b.Status = &over.Status
			if tc.change != nil {
				tc.change(&b)
			}
			r := eval(b, tc.data, tc.at)
			assert.Equal(t, tc.state, r.Status.State)
			assert.Equal(t, tc.blocks, r.Status.Enforcement.Blocking)
			assert.Equal(t, tc.blocks, r.Quota != nil)
			if !tc.blocks {
				return
			}
			enf := r.Status.Enforcement
			assert.Equal(t, over.Status.Enforcement.BlockedOn, enf.BlockedOn, "the reading that blocks is kept")
			// Read by the budget's first sync, which its creation dates.
			assert.Contains(t, enf.Reason, "it read spend 612.00 of 500.00 USD at 2026-11-20T11:59:00Z")
			assert.Contains(t, enf.Reason, "its spend cannot be read now")
			assert.Contains(t, enf.Message, "last read spend 612.00 of 500.00 USD at 2026-11-20T11:59:00Z")
			assert.Equal(t, enf.Reason, condition(t, r.Status, api.ConditionBlocking).Message)
			for _, a := range r.Announcements {
				assert.NotEqual(t, evaluate.ReasonUnblocked, a.Reason)
			}

			// The block holds sync after sync while the source stays unreadable.
			b.Status = &r.Status
			again := eval(b, tc.data, tc.at.Add(time.Hour))
			assert.True(t, again.Status.Enforcement.Blocking)
			assert.Equal(t, r.Status.Enforcement, again.Status.Enforcement)
		})
	}
}

func TestFailurePolicyDecidesForASourceNotReadableThisPeriod(t *testing.T) {
	for policy, blocks := range map[api.FailurePolicy]bool{api.FailOpen: false, api.FailClosed: true} {
		t.Run(string(policy), func(t *testing.T) {
			b := budget(func(b *api.LLMCostBudget) {
				b.Spec.Enforcement = api.Enforcement{Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"},
					FailurePolicy: policy}
			})
			under := eval(b, total("10"), now)
			b.Status = &under.Status
			r := eval(b, nil, now.Add(time.Minute))
			assert.Equal(t, blocks, r.Status.Enforcement.Blocking)
			assert.Nil(t, r.Status.Enforcement.BlockedOn, "no spend read blocks")
		})
	}
}

// TaskRecords only add up within a period: whoever deletes them (Kelos's clean-up included) must not lift a block
// on spend read in the same period, as a deleted spend ConfigMap does not.
func TestTaskRecordsDeletedInAPeriodNeverLiftItsBlock(t *testing.T) {
	records := func(b *api.LLMCostBudget) {
		b.Spec.CostSource = api.CostSource{Format: api.TaskRecords,
			Selector: &api.LabelSelector{MatchLabels: map[string]api.LabelValue{"team": "ml"}}}
		b.Spec.Enforcement = api.Enforcement{Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"},
			Gate: api.GatePolicy, FailurePolicy: api.FailOpen}
	}
	evalRecords := func(b api.LLMCostBudget, usd string, at time.Time) evaluate.Result {
		b.Spec.Default()
		in := evaluate.Input{Budget: b, Invalid: b.Spec.Validate().ToAggregate(), Subject: subject, Now: at}
		require.NoError(t, in.Invalid)
		in.Window = b.Spec.PeriodSpec().Containing(at)
		cost, err := money.Parse(usd)
		require.NoError(t, err)
		in.Spend = spend.Reading{Usage: spend.Usage{CostUSD: cost}, Message: "2 TaskRecords"}
		return evaluate.Evaluate(in)
	}
	cases := map[string]struct {
		at     time.Time
		change func(*api.LLMCostBudget)
		blocks bool
	}{
		"records deleted later in the period keep the block": {at: now.Add(10 * time.Minute), blocks: true},
		"the next period starts afresh":                      {at: time.Date(2026, 12, 1, 0, 10, 0, 0, time.UTC)},
		"an administrator's spec change starts afresh": {
			at: now.Add(10 * time.Minute), change: func(b *api.LLMCostBudget) { b.Metadata.Generation++ },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := budget(records)
			over := evalRecords(b, "612", now)
			require.True(t, over.Status.Enforcement.Blocking)
			b.Status = &over.Status
			if tc.change != nil {
				tc.change(&b)
			}
			r := evalRecords(b, "10", tc.at)
			assert.Equal(t, tc.blocks, r.Status.Enforcement.Blocking)
			if tc.blocks {
				assert.Equal(t, over.Status.Enforcement.BlockedOn, r.Status.Enforcement.BlockedOn)
				assert.Contains(t, r.Status.Enforcement.Reason, "fewer TaskRecords count now than when it blocked")
			}
		})
	}
}
