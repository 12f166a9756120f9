package admissioncheck

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
)

const chatbotMessage = "LLMCostBudget team-ml/chatbot is OverBudget (512.00 of 500.00 USD this Monthly period, " +
	"ends 2026-12-01T00:00:00+01:00)"

func blocking(scope api.Scope, mode api.Mode, namespaces ...string) *api.EnforcementStatus {
	return &api.EnforcementStatus{Blocking: true, Scope: scope, Mode: mode, Namespaces: namespaces,
		Message: chatbotMessage}
}

func chatbot(e *api.EnforcementStatus) Budget {
	return Budget{Ref: api.BudgetRef{Kind: api.Kind, Namespace: "team-ml", Name: "chatbot"}, Enforcement: e,
		PeriodEnd: "2026-12-01T00:00:00+01:00"}
}

func department(e *api.EnforcementStatus) Budget {
	return Budget{Ref: api.BudgetRef{Kind: api.ClusterKind, Name: "research"}, Enforcement: e,
		PeriodEnd: "2027-01-01T00:00:00Z"}
}

var since = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestTheCheckHoldsAWorkloadExactlyWhileABudgetThatCoversItRefusesIt(t *testing.T) {
	mlJob := Workload{Namespace: "team-ml", QuotaReserved: true}
	labelled := Workload{Namespace: "team-ml", Budget: "chatbot", QuotaReserved: true}
	other := Workload{Namespace: "team-web", QuotaReserved: true}
	tests := []struct {
		name    string
		w       Workload
		budgets []Budget
		want    string
	}{
		{"no budget leaves the workload Ready", mlJob, nil, StateReady},
		{"a blocking namespace budget holds its namespace's workload", mlJob,
			[]Budget{chatbot(blocking(api.ScopeNamespace, ""))}, StatePending},
		{"a budget that does not block holds nothing", mlJob,
			[]Budget{chatbot(&api.EnforcementStatus{Scope: api.ScopeNamespace})}, StateReady},
		{"a budget without status.enforcement holds nothing", mlJob, []Budget{chatbot(nil)}, StateReady},
		{"a budget in Warn mode only warns, so it holds nothing", mlJob,
			[]Budget{chatbot(blocking(api.ScopeNamespace, api.ModeWarn))}, StateReady},
		{"a namespace budget holds no workload of another namespace", other,
			[]Budget{chatbot(blocking(api.ScopeNamespace, ""))}, StateReady},
		{"a Labelled budget holds the workload labelled for it", labelled,
			[]Budget{chatbot(blocking(api.ScopeLabelled, ""))}, StatePending},
		{"a Labelled budget holds no unlabelled workload", mlJob,
			[]Budget{chatbot(blocking(api.ScopeLabelled, ""))}, StateReady},
		{"a Labelled budget holds no workload labelled for another budget",
			Workload{Namespace: "team-ml", Budget: "search"},
			[]Budget{chatbot(blocking(api.ScopeLabelled, ""))}, StateReady},
		{"a cluster budget holds a workload of a namespace it closes", mlJob,
			[]Budget{department(blocking("", "", "team-ml", "team-web"))}, StatePending},
		{"a cluster budget holds no workload of a namespace it does not close", mlJob,
			[]Budget{department(blocking("", "", "team-web"))}, StateReady},
		{"one blocking budget among others that do not holds the workload", mlJob,
			[]Budget{department(blocking("", "", "team-web")), chatbot(blocking(api.ScopeNamespace, ""))},
			StatePending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Decide(tt.w, tt.budgets, HoldPending, since)
			assert.Equal(t, tt.want, v.State)
			assert.Nil(t, v.RequeueAfterSeconds, "Pending and Ready carry no requeue time")
			if tt.want == StateReady {
				assert.Equal(t, ReadyMessage, v.Message)
			}
		})
	}
}

func TestTheMessageNamesTheBudgetItsSpendAndTheEndOfItsPeriod(t *testing.T) {
	tests := []struct {
		name    string
		budgets []Budget
		want    string
	}{
		{"one budget: its enforcement message, which names the spend and the period's end",
			[]Budget{chatbot(blocking(api.ScopeNamespace, ""))},
			"Held by " + chatbotMessage + "."},
		{"a budget whose message does not start with its name: the name, then the message",
			[]Budget{chatbot(&api.EnforcementStatus{Blocking: true, Scope: api.ScopeNamespace,
				Message: "over the limit (ends 2026-12-01T00:00:00+01:00)"})},
			"Held by LLMCostBudget team-ml/chatbot: over the limit (ends 2026-12-01T00:00:00+01:00)."},
		{"a budget without a message: its name and the period's end",
			[]Budget{chatbot(&api.EnforcementStatus{Blocking: true, Scope: api.ScopeNamespace})},
			"Held by LLMCostBudget team-ml/chatbot; its period ends 2026-12-01T00:00:00+01:00."},
		{"a budget whose message lacks the end: the end from status.period.end",
			[]Budget{department(&api.EnforcementStatus{Blocking: true, Namespaces: []string{"team-ml"},
				Message: "ClusterLLMCostBudget research is OverBudget (10.00 of 5.00 USD)."})},
			"Held by ClusterLLMCostBudget research is OverBudget (10.00 of 5.00 USD); its period ends " +
				"2027-01-01T00:00:00Z."},
		{"two budgets: the namespace's first, then the cluster's",
			[]Budget{department(blocking("", "", "team-ml")), chatbot(blocking(api.ScopeNamespace, ""))},
			"Held by " + chatbotMessage + ". Also held by ClusterLLMCostBudget " +
				"research."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Decide(Workload{Namespace: "team-ml"}, tt.budgets, HoldPending, since)
			assert.Equal(t, tt.want, v.Message)
		})
	}
}

func TestTheMessageNamesThreeOrMoreBudgetsByCountAndStaysWithinItsBound(t *testing.T) {
	long := blocking(api.ScopeNamespace, "")
	long.Message = strings.Repeat("é", 2000)
	budgets := []Budget{chatbot(long)}
	for _, n := range []string{"a", "b", "c"} {
		b := department(blocking("", "", "team-ml"))
		b.Ref.Name = n
		budgets = append(budgets, b)
	}
	v := Decide(Workload{Namespace: "team-ml"}, budgets, HoldPending, since)
	assert.LessOrEqual(t, len(v.Message), MaxMessageBytes)
	assert.True(t, strings.HasPrefix(v.Message, "Held by LLMCostBudget team-ml/chatbot: éé"), v.Message)
	assert.True(t, strings.HasSuffix(v.Message, "..."), "the cut is marked")

	budgets[0] = chatbot(blocking(api.ScopeNamespace, ""))
	v = Decide(Workload{Namespace: "team-ml"}, budgets, HoldPending, since)
	assert.True(t, strings.HasSuffix(v.Message, " Also held by ClusterLLMCostBudget a and 2 more budgets."),
		v.Message)
}

func TestTheSameInputsInAnyOrderGiveTheSameVerdict(t *testing.T) {
	a := []Budget{department(blocking("", "", "team-ml")), chatbot(blocking(api.ScopeNamespace, ""))}
	b := []Budget{a[1], a[0]}
	w := Workload{Namespace: "team-ml", QuotaReserved: true}
	assert.Equal(t, Decide(w, a, HoldRetry, since), Decide(w, b, HoldRetry, since))
}

func TestRetryHoldsAReservedWorkloadUntilTheLatestPeriodEnd(t *testing.T) {
	reserved := Workload{Namespace: "team-ml", QuotaReserved: true}
	tests := []struct {
		name    string
		w       Workload
		budgets []Budget
		state   string
		after   *int32
	}{
		{"a reserved workload is sent to Retry until its budget's period ends", reserved,
			[]Budget{chatbot(blocking(api.ScopeNamespace, ""))}, StateRetry, new(int32(11 * 3600))},
		{"with two budgets it waits for the later end", reserved,
			[]Budget{chatbot(blocking(api.ScopeNamespace, "")), department(blocking("", "", "team-ml"))},
			StateRetry, new(int32(31*24*3600 + 12*3600))},
		{"a workload without a reservation stays Pending: a Retry would evict nothing",
			Workload{Namespace: "team-ml"}, []Budget{chatbot(blocking(api.ScopeNamespace, ""))}, StatePending, nil},
		{"a budget without a period end keeps it Pending rather than retrying at once", reserved,
			[]Budget{{Ref: chatbot(nil).Ref, Enforcement: blocking(api.ScopeNamespace, "")}}, StatePending, nil},
		{"a lifted block is Ready, with no requeue time", reserved,
			[]Budget{chatbot(&api.EnforcementStatus{})}, StateReady, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Decide(tt.w, tt.budgets, HoldRetry, since)
			assert.Equal(t, tt.state, v.State)
			assert.Equal(t, tt.after, v.RequeueAfterSeconds)
		})
	}
}

func TestTheRequeueTimeIsTheElapsedTimeToThePeriodEndAcrossDaylightSavingTime(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	newYork, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	tests := []struct {
		name       string
		since, end time.Time
		want       int32
	}{
		{"a day without a change is 24 hours",
			time.Date(2026, 6, 10, 0, 0, 0, 0, berlin), time.Date(2026, 6, 11, 0, 0, 0, 0, berlin), 24 * 3600},
		{"the day Berlin springs forward is 23 hours",
			time.Date(2026, 3, 29, 0, 0, 0, 0, berlin), time.Date(2026, 3, 30, 0, 0, 0, 0, berlin), 23 * 3600},
		{"the day Berlin falls back is 25 hours",
			time.Date(2026, 10, 25, 0, 0, 0, 0, berlin), time.Date(2026, 10, 26, 0, 0, 0, 0, berlin), 25 * 3600},
		{"November in New York, which falls back on its first Sunday, is 30 days and an hour",
			time.Date(2026, 11, 1, 0, 0, 0, 0, newYork), time.Date(2026, 12, 1, 0, 0, 0, 0, newYork),
			30*24*3600 + 3600},
		{"a part of a second left rounds up, so that Kueue does not look before the end",
			time.Date(2026, 6, 10, 23, 59, 59, 1, berlin), time.Date(2026, 6, 11, 0, 0, 0, 0, berlin), 1},
		{"an end already past is 0", time.Date(2026, 6, 12, 0, 0, 0, 0, berlin),
			time.Date(2026, 6, 11, 0, 0, 0, 0, berlin), 0},
		{"an end beyond int32 seconds is cut to the largest int32", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), math.MaxInt32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// As status.period.end carries it: RFC 3339 with the budget's offset.
			end, err := time.Parse(time.RFC3339, tt.end.Format(time.RFC3339))
			require.NoError(t, err)
			assert.Equal(t, tt.want, *RequeueAfter(tt.since, end))
		})
	}
}
