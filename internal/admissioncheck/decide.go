// Package admissioncheck decides the state of llmbudget's Kueue admission check for one Workload: held (Pending or
// Retry) while a budget that covers it refuses it by the one refusal rule (EnforcementStatus.Refuses), Ready
// otherwise, with the message and the requeue time Kueue shows. It is pure: package admissioncheck/controller
// reads the Workloads and budgets and writes the verdicts.
package admissioncheck

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/text"
)

// ControllerName is the spec.controllerName of an AdmissionCheck that llmbudget answers.
const ControllerName = api.Group + "/budget"

// The states of a Workload's admission check (kueue.x-k8s.io/v1beta2 CheckState) llmbudget writes.
const (
	StatePending = "Pending"
	StateReady   = "Ready"
	StateRetry   = "Retry"
)

// MaxMessageBytes bounds the check's message, which echoes the budgets' messages; Kueue's own bound is 32768.
const MaxMessageBytes = 1024

// ReadyMessage is the message of a check no budget holds.
const ReadyMessage = "No LLM cost budget holds this workload."

// Hold is how a held Workload waits.
type Hold string

const (
	// HoldPending keeps the check Pending: the Workload keeps the quota it reserved in its ClusterQueue and is
	// admitted as soon as the block lifts, whenever and however it lifts.
	HoldPending Hold = "Pending"
	// HoldRetry sets the check to Retry with requeueAfterSeconds at the period's end, so that the Workload's
	// status.requeueState.requeueAt says when Kueue looks at it again. Kueue v0.17.0 waits for that instant before
	// it acts on a Retry check: the Workload keeps its reservation meanwhile and is not admitted before then, even
	// if the block lifts earlier (a raised limit, a suspended budget).
	HoldRetry Hold = "Retry"
)

// Budget is what the decision reads of a budget.
type Budget struct {
	Ref         api.BudgetRef
	Enforcement *api.EnforcementStatus // status.enforcement; nil refuses no one
	PeriodEnd   string                 // status.period.end (RFC 3339, in the budget's time zone); may be empty
}

// Workload is what the decision reads of a Workload.
type Workload struct {
	Namespace string
	// Budget is the Workload's label llmbudget.dev/budget (Kueue copies it from the Job when its configuration's
	// integrations.labelKeysToCopy lists it); empty when it has none.
	Budget string
	// QuotaReserved is true while the Workload holds a quota reservation: only then does a Retry evict it.
	QuotaReserved bool
}

// Verdict is the check's state for one Workload.
type Verdict struct {
	State   string
	Message string
	// RequeueAfterSeconds is set only with StateRetry: seconds from Since to the latest period end of the
	// budgets that hold the Workload.
	RequeueAfterSeconds *int32
}

// Decide is the check's state for w under budgets, written at since (the lastTransitionTime the verdict is written
// with, whole seconds as the API server stores it). The budgets that refuse w hold it; the message names them in a
// fixed order (namespaced before cluster budgets, then by namespace and name), so that the same inputs always give
// the same verdict.
func Decide(w Workload, budgets []Budget, hold Hold, since time.Time) Verdict {
	var holding []Budget
	for _, b := range budgets {
		if b.Enforcement.Refuses(b.Ref, api.Caller{Namespace: w.Namespace, Budget: w.Budget}) {
			holding = append(holding, b)
		}
	}
	if len(holding) == 0 {
		return Verdict{State: StateReady, Message: ReadyMessage}
	}
	slices.SortFunc(holding, func(a, b Budget) int {
		return cmp.Or(cmp.Compare(kindOrder(a.Ref.Kind), kindOrder(b.Ref.Kind)),
			cmp.Compare(a.Ref.Namespace, b.Ref.Namespace), cmp.Compare(a.Ref.Name, b.Ref.Name))
	})
	v := Verdict{State: StatePending, Message: Message(holding)}
	if hold != HoldRetry || !w.QuotaReserved {
		return v
	}
	// The Workload may go only once every holding budget's period has ended: wait for the latest end.
	var end time.Time
	for _, b := range holding {
		e, err := time.Parse(time.RFC3339, b.PeriodEnd)
		if err != nil {
			// Without an end, Retry would have Kueue try again at once, and again: keep the Workload Pending.
			return v
		}
		if e.After(end) {
			end = e
		}
	}
	v.State, v.RequeueAfterSeconds = StateRetry, RequeueAfter(since, end)
	return v
}

// RequeueAfter is the whole seconds from since to end, rounded up so that Kueue does not look again before the
// period has ended, and within 0 and the largest int32. end is an instant (RFC 3339 with its offset), so the
// seconds are the elapsed time across any change of the budget's offset (daylight saving time).
func RequeueAfter(since, end time.Time) *int32 {
	d := end.Sub(since)
	if d <= 0 {
		return new(int32)
	}
	s := int64(math.Ceil(d.Seconds()))
	s = min(s, math.MaxInt32)
	return new(int32(s))
}

// Message names the budgets that hold a Workload: the first with its status.enforcement.message (its state, its
// spend and when its period ends in its time zone; status.period.end where the message lacks it), then the next
// and how many more there are, within MaxMessageBytes.
func Message(holding []Budget) string {
	b := holding[0]
	var sb strings.Builder
	// The budgets' own messages start with the budget's name, as this one does.
	switch m, n := strings.TrimSuffix(strings.TrimSpace(b.Enforcement.Message), "."), name(b.Ref); {
	case strings.HasPrefix(m, n+" "):
		sb.WriteString("Held by " + m)
	case m != "":
		sb.WriteString("Held by " + n + ": " + m)
	default:
		sb.WriteString("Held by " + n)
	}
	if b.PeriodEnd != "" && !strings.Contains(b.Enforcement.Message, b.PeriodEnd) {
		fmt.Fprintf(&sb, "; its period ends %s", b.PeriodEnd)
	}
	sb.WriteString(".")
	if n := len(holding) - 1; n == 1 {
		fmt.Fprintf(&sb, " Also held by %s.", name(holding[1].Ref))
	} else if n > 1 {
		fmt.Fprintf(&sb, " Also held by %s and %d more budgets.", name(holding[1].Ref), n-1)
	}
	return text.Abbreviate(sb.String(), MaxMessageBytes)
}

func name(r api.BudgetRef) string {
	if r.Kind == api.ClusterKind {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

func kindOrder(kind string) int {
	if kind == api.Kind {
		return 0
	}
	return 1
}
