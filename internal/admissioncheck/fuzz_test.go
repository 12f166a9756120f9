package admissioncheck

import (
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
)

// FuzzDecide decodes a budget's status.enforcement as the controller does, whatever its content, and checks what
// holds for every input: the state is Ready exactly when the refusal rule refuses no one here, the message stays
// within its bound and valid UTF-8 when the input is, Retry always carries a requeue time and nothing else does.
func FuzzDecide(f *testing.F) {
	f.Add([]byte(`{"blocking":true,"scope":"Namespace","message":"LLMCostBudget team-ml/chatbot is OverBudget"}`),
		"2026-12-01T00:00:00+01:00", "team-ml", "", true, true)
	f.Add([]byte(`{"blocking":true,"scope":"Labelled"}`), "", "team-ml", "chatbot", false, true)
	f.Add([]byte(`{"blocking":true,"mode":"Warn","scope":"Namespace"}`), "x", "team-ml", "", true, false)
	f.Add([]byte(`{"blocking":false}`), "2026-03-29T00:00:00+01:00", "team-web", "chatbot", true, true)
	f.Fuzz(func(t *testing.T, enforcement []byte, end, namespace, label string, reserved, retry bool) {
		var e *api.EnforcementStatus
		if decode.Lenient(enforcement, &e, "status.enforcement") != nil {
			return // an unreadable status is left out before the decision
		}
		ref := api.BudgetRef{Kind: api.Kind, Namespace: "team-ml", Name: "chatbot"}
		hold := HoldPending
		if retry {
			hold = HoldRetry
		}
		w := Workload{Namespace: namespace, Budget: label, QuotaReserved: reserved}
		since := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		v := Decide(w, []Budget{{Ref: ref, Enforcement: e, PeriodEnd: end}}, hold, since)

		refuses := e.Refuses(ref, api.Caller{Namespace: namespace, Budget: label})
		assert.Equal(t, !refuses, v.State == StateReady)
		assert.Contains(t, []string{StateReady, StatePending, StateRetry}, v.State)
		assert.LessOrEqual(t, len(v.Message), MaxMessageBytes)
		if e == nil || utf8.ValidString(e.Message) && utf8.ValidString(end) {
			assert.True(t, utf8.ValidString(v.Message), "%q", v.Message)
		}
		require.Equal(t, v.State == StateRetry, v.RequeueAfterSeconds != nil)
		if v.State == StateRetry {
			assert.True(t, retry && reserved, "Retry only when asked, for a reserved workload")
			assert.GreaterOrEqual(t, *v.RequeueAfterSeconds, int32(0))
		}
		assert.Equal(t, v, Decide(w, []Budget{{Ref: ref, Enforcement: e, PeriodEnd: end}}, hold, since),
			"the same inputs give the same verdict")
	})
}
