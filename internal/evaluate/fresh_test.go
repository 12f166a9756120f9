package evaluate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

// stampedAt is the spend ConfigMap's annotations with the figures' time asOf.
func stampedAt(asOf time.Time) map[string]string {
	return map[string]string{api.AnnotationSpendAsOf: asOf.UTC().Format(time.RFC3339)}
}

// evalStamped is eval of a ConfigMap whose annotations are those given, as package budget reads it.
func evalStamped(b api.LLMCostBudget, data, annotations map[string]string, at time.Time) evaluate.Result {
	b.Spec.Default()
	in := evaluate.Input{Budget: b, Invalid: b.Spec.Validate().ToAggregate(), Subject: subject, Now: at}
	if in.Invalid == nil {
		in.Window = b.Spec.PeriodSpec().Containing(at)
		in.Spend = spent(b.Spec.CostSource, data, in.Window)
		in.Spend.Stamp = source.StampOf("ConfigMap team-ml/llm-spend", annotations)
	}
	return evaluate.Evaluate(in)
}

// maxAge gives the budget a maxAge and enforcement under policy.
func maxAge(age string, policy api.FailurePolicy) func(*api.LLMCostBudget) {
	return func(b *api.LLMCostBudget) {
		b.Spec.CostSource.MaxAge = age
		b.Spec.Enforcement = api.Enforcement{Action: api.BlockNewWorkloads, Resources: []string{"jobs.batch"},
			Gate: api.GateQuota, FailurePolicy: policy}
	}
}

func TestWithoutAMaxAgeTheSpendHasNoFreshnessCondition(t *testing.T) {
	r := evalStamped(budget(), total("10"), nil, now)
	for _, c := range r.Status.Conditions {
		assert.NotEqual(t, api.ConditionSpendStale, c.Type)
	}
}

func TestFreshSpendSaysUntilWhenAndResyncsThen(t *testing.T) {
	r := evalStamped(budget(maxAge("15m", api.FailClosed)), total("10"), stampedAt(now.Add(-5*time.Minute)), now)
	c := condition(t, r.Status, api.ConditionSpendStale)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, api.ReasonSpendFresh, c.Reason)
	assert.Equal(t, "ConfigMap team-ml/llm-spend holds spend as of 2026-11-20T11:55:00Z, within maxAge 15m until "+
		"2026-11-20T12:10:00Z", c.Message)
	assert.Equal(t, api.UnderBudget, r.Status.State)
	assert.Equal(t, 10*time.Minute, r.ResyncAfter, "the resync comes the instant the spend turns stale")
}

func TestStaleSpendUnderOpenIsStillEvaluatedOnItsFigures(t *testing.T) {
	b := budget(maxAge("15m", api.FailOpen))
	r := evalStamped(b, total("612"), stampedAt(now.Add(-time.Hour)), now)
	assert.Equal(t, api.OverBudget, r.Status.State, "the state is computed from the last figures")
	assert.Equal(t, "612.00", r.Status.ObservedSpendUSD)
	assert.True(t, r.Status.Enforcement.Blocking, "over budget blocks under Open too")
	assert.Equal(t, metav1.ConditionTrue, condition(t, r.Status, api.ConditionBudgetEvaluated).Status)
	c := condition(t, r.Status, api.ConditionSpendStale)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, api.ReasonSpendStale, c.Reason)
	assert.Equal(t, "ConfigMap team-ml/llm-spend holds spend as of 2026-11-20T11:00:00Z, which reached maxAge 15m at "+
		"2026-11-20T11:15:00Z", c.Message)
	stale := announced(t, r, "spendstale")
	assert.Equal(t, evaluate.EventWarning, stale.Type)
	assert.Equal(t, api.ReasonSpendStale, stale.Reason)
	assert.Equal(t, "ConfigMap team-ml/llm-spend holds spend as of 2026-11-20T11:00:00Z, which reached maxAge 15m at "+
		"2026-11-20T11:15:00Z; with failurePolicy Open the budget is still evaluated on these figures", stale.Message)
}

func TestAStampAheadOfTheClockIsFreshOnlyWithinTheSkew(t *testing.T) {
	cases := map[string]struct {
		ahead time.Duration
		stale bool
	}{
		"a stamp a minute ahead is fresh":                {time.Minute, false},
		"a stamp exactly the skew ahead is fresh":        {evaluate.ClockSkew, false},
		"a stamp a second past the skew is stale":        {evaluate.ClockSkew + time.Second, true},
		"a squatter's stamp in 2099 is stale, not fresh": {time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC).Sub(now), true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := evalStamped(budget(maxAge("1m", api.FailClosed)), total("0"), stampedAt(now.Add(tc.ahead)), now)
			c := condition(t, r.Status, api.ConditionSpendStale)
			if !tc.stale {
				assert.Equal(t, metav1.ConditionFalse, c.Status)
				assert.Equal(t, api.UnderBudget, r.Status.State)
				return
			}
			assert.Equal(t, metav1.ConditionTrue, c.Status)
			assert.Contains(t, c.Message, "ahead of the clock: stale under maxAge 1m")
			assert.Equal(t, api.Unknown, r.Status.State, "under Closed stale spend is unknown")
			assert.True(t, r.Status.Enforcement.Blocking, "and blocks")
			stale := announced(t, r, "spendstale")
			assert.False(t, stale.At.After(now), "dated by the inputs, never at the future stamp")
		})
	}
}

func TestStaleSpendUnderClosedIsUnknownAndBlocks(t *testing.T) {
	b := budget(maxAge("15m", api.FailClosed))
	r := evalStamped(b, total("10"), stampedAt(now.Add(-time.Hour)), now)
	assert.Equal(t, api.Unknown, r.Status.State)
	assert.Empty(t, r.Status.ObservedSpendUSD, "stale figures count as none")
	assert.Equal(t, api.ReasonSpendStale, r.Reason)
	evaluated := condition(t, r.Status, api.ConditionBudgetEvaluated)
	assert.Equal(t, metav1.ConditionFalse, evaluated.Status)
	assert.Equal(t, api.ReasonSpendStale, evaluated.Reason)
	assert.Equal(t, condition(t, r.Status, api.ConditionSpendStale).Message, evaluated.Message)
	assert.Equal(t, metav1.ConditionTrue, condition(t, r.Status, api.ConditionSpendStale).Status)
	require.True(t, r.Status.Enforcement.Blocking)
	require.NotNil(t, r.Quota)
	assert.Nil(t, r.Status.Enforcement.BlockedOn, "no spend read blocks")
	assert.Contains(t, r.Status.Enforcement.Reason, "LLMCostBudget chatbot counts its stale spend as unknown "+
		"(SpendStale) since its failurePolicy is Closed")
	assert.Equal(t, "LLMCostBudget team-ml/chatbot is Unknown (SpendStale, failurePolicy Closed; this Monthly period, "+
		"ends 2026-12-01T00:00:00Z)", r.Status.Enforcement.Message)
	stale := announced(t, r, "spendstale")
	assert.Contains(t, stale.Message, "with failurePolicy Closed the spend counts as unknown")
	stales := 0
	for _, a := range r.Announcements {
		if a.Reason == api.ReasonSpendStale {
			stales++
		}
	}
	assert.Equal(t, 1, stales, "one Event, though the spend is both stale and unknown")
}

func TestSpendWithoutAStampIsStaleUnderAMaxAge(t *testing.T) {
	for name, annotations := range map[string]map[string]string{
		"no annotation":        nil,
		"not an RFC 3339 time": {api.AnnotationSpendAsOf: "a minute ago"},
	} {
		t.Run(name, func(t *testing.T) {
			r := evalStamped(budget(maxAge("15m", api.FailClosed)), total("10"), annotations, now)
			assert.Equal(t, api.Unknown, r.Status.State)
			c := condition(t, r.Status, api.ConditionSpendStale)
			assert.Equal(t, metav1.ConditionTrue, c.Status)
			assert.Contains(t, c.Message, "ConfigMap team-ml/llm-spend has ")
			assert.Contains(t, c.Message, "so the age of its spend is unknown: stale under maxAge 15m")
		})
	}
}

func TestUnreadableSpendHasNoAgeButItsReason(t *testing.T) {
	r := evalStamped(budget(maxAge("15m", api.FailOpen)), nil, nil, now)
	c := condition(t, r.Status, api.ConditionSpendStale)
	assert.Equal(t, metav1.ConditionUnknown, c.Status)
	assert.Equal(t, api.ReasonCostSourceMissing, c.Reason)
	assert.Equal(t, "spend is unknown: ConfigMap llm-spend not found", c.Message)
	_, ok := find(r, "spendstale")
	assert.False(t, ok, "missing spend is announced as missing, not as stale")
	announced(t, r, "costsourcemissing")
}

func TestSpendTurnsStaleOnTimeAndIsAnnouncedOnceAcrossSyncs(t *testing.T) {
	for _, policy := range []api.FailurePolicy{api.FailOpen, api.FailClosed} {
		t.Run(string(policy), func(t *testing.T) {
			b := budget(maxAge("15m", policy))
			asOf := now.Add(-10 * time.Minute)
			fresh := evalStamped(b, total("10"), stampedAt(asOf), now)
			require.Equal(t, 5*time.Minute, fresh.ResyncAfter)

			// Metacontroller resyncs when asked, with nothing changed: the spend is stale now.
			b.Status = &fresh.Status
			turned := now.Add(fresh.ResyncAfter)
			first := evalStamped(b, total("10"), stampedAt(asOf), turned)
			c := condition(t, first.Status, api.ConditionSpendStale)
			assert.Equal(t, metav1.ConditionTrue, c.Status)
			assert.Equal(t, turned, c.LastTransitionTime.Time)
			event := announced(t, first, "spendstale")
			assert.Equal(t, turned, event.At)
			assert.Contains(t, event.Message, "reached maxAge 15m at "+turned.Format(time.RFC3339),
				"when it turned stale, never its age at a sync")

			// Later syncs keep the same Event, as first made, then let it go; the status stands still until
			// lastEvaluatedTime is Restamp old.
			for _, later := range []time.Duration{time.Minute, 30 * time.Minute, 54 * time.Minute} {
				b.Status = &first.Status
				again := evalStamped(b, total("10"), stampedAt(asOf), turned.Add(later))
				assert.Equal(t, event, announced(t, again, "spendstale"), "after %s", later)
				if later < evaluate.Restamp {
					assert.Equal(t, first.Status, again.Status, "after %s", later)
				}
			}
			b.Status = &first.Status
			gone := evalStamped(b, total("10"), stampedAt(asOf), turned.Add(evaluate.AnnounceFor))
			_, ok := find(gone, "spendstale")
			assert.False(t, ok, "announced once: its window closed")
			assert.Equal(t, metav1.ConditionTrue, condition(t, gone.Status, api.ConditionSpendStale).Status)

			// A new stamp makes it fresh again, and a later staleness is announced anew.
			b.Status = &gone.Status
			refreshed := evalStamped(b, total("12"), stampedAt(turned.Add(time.Hour)), turned.Add(time.Hour))
			assert.Equal(t, metav1.ConditionFalse, condition(t, refreshed.Status, api.ConditionSpendStale).Status)
			assert.Equal(t, api.UnderBudget, refreshed.Status.State)
			b.Status = &refreshed.Status
			staleAgain := turned.Add(time.Hour + refreshed.ResyncAfter)
			again := evalStamped(b, total("12"), stampedAt(turned.Add(time.Hour)), staleAgain)
			assert.Equal(t, staleAgain, announced(t, again, "spendstale").At)
		})
	}
}

func TestUnderClosedStaleSpendKeepsABlockOnSpendReadThisPeriod(t *testing.T) {
	b := budget(maxAge("15m", api.FailClosed))
	over := evalStamped(b, total("612"), stampedAt(now), now)
	require.True(t, over.Status.Enforcement.Blocking)
	require.NotNil(t, over.Status.Enforcement.BlockedOn)
	b.Status = &over.Status
	r := evalStamped(b, total("612"), stampedAt(now), now.Add(20*time.Minute))
	assert.Equal(t, api.Unknown, r.Status.State)
	assert.True(t, r.Status.Enforcement.Blocking)
	assert.Equal(t, over.Status.Enforcement.BlockedOn, r.Status.Enforcement.BlockedOn, "the reading that blocks is kept")
	assert.Contains(t, r.Status.Enforcement.Reason, "it read spend 612.00 of 500.00 USD at 2026-11-20T12:00:00Z")
	assert.Contains(t, r.Status.Enforcement.Reason, "SpendStale: ConfigMap team-ml/llm-spend holds spend as of")
}

func TestAPrometheusSourceIsCheckedAgainstItsDefaultMaxAge(t *testing.T) {
	b := budget(func(b *api.LLMCostBudget) {
		b.Spec.CostSource.Prometheus = &api.PrometheusSource{Source: api.PresetLiteLLM,
			Selector: &api.PrometheusSelector{Team: "ml"}}
	})
	r := evalStamped(b, total("10"), stampedAt(now.Add(-16*time.Minute)), now)
	c := condition(t, r.Status, api.ConditionSpendStale)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Contains(t, c.Message, "which reached maxAge 15m at 2026-11-20T11:59:00Z")
}

func find(r evaluate.Result, slug string) (evaluate.Announcement, bool) {
	for _, a := range r.Announcements {
		if a.Slug == slug {
			return a, true
		}
	}
	return evaluate.Announcement{}, false
}

func announced(t *testing.T, r evaluate.Result, slug string) evaluate.Announcement {
	t.Helper()
	a, ok := find(r, slug)
	require.True(t, ok, "no %s announcement in %+v", slug, r.Announcements)
	return a
}
