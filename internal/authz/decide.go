// Package authz decides, per LLM request, whether the caller's budgets let it through: the decision the admission
// gates make for new workloads, made again for each request from an in-memory view (Store) of the namespaces,
// budgets and Pods.
//
// Expected Flow:
//  1. The server resolves the caller (package authz/gateway, then Store.PodByIP in source mode) and reads the Store's
//     View of its namespace.
//  2. Decide returns the Decision: allowed (200, with the budget's figures), refused (429, the sentence of the
//     admission policy and the seconds to the period's end), or unavailable (503) while a Closed budget cannot
//     be checked.
//
// Guarantees:
//   - A request is refused while a budget refuses its caller by the admission policies' condition
//     (api.EnforcementStatus.Refuses): its status.enforcement is blocking and not in Warn mode, and its scope is
//     Namespace, or Labelled with the caller labelled llmbudget.dev/budget=<its name>, or it is a cluster budget
//     that lists the namespace. Unlike the policies, which refuse only the kinds status.enforcement.resources
//     lists and only through gate Policy, it reads neither resources nor gates: an LLM request is of no kind, and
//     a budget that blocks through a ResourceQuota alone refuses requests too. A namespace labelled
//     llmbudget.dev/blocked (by the namespace decorator, from the same statuses) refuses too while no budget in
//     the view accounts for the label, as when the budgets' cache lags the namespaces'. A budget whose status
//     cannot be read is not in the view (package authz/gateway leaves it out), so it refuses nothing.
//   - The refusal's message is the admission policy's first sentence (Sentence), word for word.
//   - Warn mode never refuses: it adds the sentence that would have refused as a warning.
//   - A caller identity that a gateway sent but that cannot be read is refused, whatever the UnknownCaller policy
//     and whether or not the cache has synced: only a caller the gateway named no identity for is unknown.
//   - A cache that is not synced, or older than its bound, is never used without saying so (Decision.Stale). Until
//     it has synced, nothing tells which budgets cover a caller, or whether any is Closed: every call is
//     unavailable (503). Once synced and past its bound, a budget whose failurePolicy is Closed refuses (503); an
//     Open one is decided from the cache.
//   - Decide is pure: the same Input gives the same Decision; the clock is Input.Now.
package authz

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
)

// Bounds of Retry-After, in seconds.
const (
	// MaxRetryAfter caps the wait to a period's end: clients should look again at least daily.
	MaxRetryAfter = 24 * 60 * 60
	// UnknownEndRetryAfter is the wait when the refusing budget's period end is unknown (a refusal by the namespace
	// posture alone).
	UnknownEndRetryAfter = 60
	// UnavailableRetryAfter is the wait while a Closed budget cannot be checked.
	UnavailableRetryAfter = 5
)

// UnknownCaller is what happens to a call whose caller cannot be told.
type UnknownCaller string

// The unknownCaller policies.
const (
	AdmitUnknown  UnknownCaller = "Admit"
	RefuseUnknown UnknownCaller = "Refuse"
)

// Reason is why a decision went as it did; the metrics count decisions by it.
type Reason string

// The reasons of decisions.
const (
	ReasonNoBudget         Reason = "no_budget"         // allowed: no budget covers the caller
	ReasonWithinBudget     Reason = "within_budget"     // allowed: its budgets do not block
	ReasonWarn             Reason = "warn"              // allowed with a warning: a Warn-mode budget would refuse
	ReasonBudgetBlocking   Reason = "budget_blocking"   // refused: a budget's status.enforcement blocks the caller
	ReasonNamespaceBlocked Reason = "namespace_blocked" // refused: the namespace's posture label
	ReasonFailClosed       Reason = "fail_closed"       // unavailable: a Closed budget, and the cache is not current
	ReasonUnsynced         Reason = "unsynced"          // unavailable: the cache has not synced, so any budget may cover
	ReasonUnknownCaller    Reason = "unknown_caller"    // allowed or refused by the unknownCaller policy
)

// ReasonUnreadable is a refusal of a caller identity the gateway sent but that cannot be read.
const ReasonUnreadable Reason = "unreadable_identity"

// Result is the kind of answer.
type Result string

// The results of decisions.
const (
	Allowed     Result = "allowed"
	Refused     Result = "refused"
	Unavailable Result = "unavailable"
)

// Caller is who calls, as resolved: Known false when it could not be told (Why says why), and Unreadable when the
// gateway sent an identity that cannot be read.
type Caller struct {
	Known      bool
	Unreadable bool
	Namespace  string
	Budget     string // its label llmbudget.dev/budget, source mode only
	Why        string
}

// Cache is how current the view is.
type Cache struct {
	Synced bool
	Age    time.Duration // since the view last listed or watched the cluster successfully
	MaxAge time.Duration // the bound past which the view is stale
}

// Input is everything a decision reads.
type Input struct {
	Now           time.Time
	Caller        Caller
	UnknownCaller UnknownCaller
	Namespace     Namespace
	Budgets       []*Budget // the view's budgets of the caller's namespace, sorted by Who
	Cache         Cache
}

// Decision is the answer to one authorization call.
type Decision struct {
	Result Result
	Reason Reason
	// Budget, State and RemainingUSD are of the budget that decided: the refusing one, else the tightest.
	Budget, State, RemainingUSD string
	Message                     string // the sentence a refusal or a warning says
	RetryAfter                  int    // seconds, for Refused and Unavailable
	// Stale is the cache's age while it is past its bound ("45s"), or "unsynced"; empty while current.
	Stale string
}

// Decide makes the decision for one call.
func Decide(in Input) Decision {
	d := decide(in)
	d.Stale = stale(in.Cache)
	return d
}

func decide(in Input) Decision {
	if in.Caller.Unreadable {
		return Decision{Result: Refused, Reason: ReasonUnreadable, Message: "llmbudget refuses a caller identity " +
			"it cannot read (" + in.Caller.Why + "), whatever its unknownCaller policy"}
	}
	if !in.Cache.Synced {
		return unsynced(in)
	}
	if !in.Caller.Known {
		d := Decision{Result: Allowed, Reason: ReasonUnknownCaller}
		if in.UnknownCaller == RefuseUnknown {
			d.Result, d.Message = Refused, "llmbudget cannot tell who is calling ("+in.Caller.Why+
				"), and its unknownCaller policy is Refuse"
		}
		return d
	}
	covering := slices.DeleteFunc(slices.Clone(in.Budgets), func(b *Budget) bool { return !covers(b, in.Caller) })
	if stale(in.Cache) != "" {
		if b := firstClosed(covering); b != nil {
			return unavailable(b, in.Cache)
		}
	}
	for _, b := range covering {
		if b.Enforcement.Refuses(b.Ref(), in.Caller.Rule()) {
			return refusal(b, ReasonBudgetBlocking, Sentence(b), retryAfter(b.PeriodEnd, in.Now))
		}
	}
	if in.Namespace.Blocked && !slices.ContainsFunc(in.Budgets, func(b *Budget) bool {
		return b.Enforcement.RefusesIn(b.Ref(), in.Caller.Namespace)
	}) {
		return Decision{Result: Refused, Reason: ReasonNamespaceBlocked, Message: postureSentence(in.Namespace),
			RetryAfter: UnknownEndRetryAfter}
	}
	for _, b := range covering {
		if b.Enforcement.WouldRefuse(b.Ref(), in.Caller.Rule()) {
			d := figures(b, Allowed, ReasonWarn)
			d.Message = Sentence(b)
			return d
		}
	}
	if len(covering) == 0 {
		return Decision{Result: Allowed, Reason: ReasonNoBudget}
	}
	return figures(slices.MinFunc(covering, tighter), Allowed, ReasonWithinBudget)
}

// covers is whether the budget is the caller's: a Labelled budget covers only the workloads labelled for it.
func covers(b *Budget, c Caller) bool {
	return b.Kind == api.ClusterKind || b.Enforcement.Scope != api.ScopeLabelled || c.Budget == b.Name
}

func firstClosed(bs []*Budget) *Budget {
	i := slices.IndexFunc(bs, func(b *Budget) bool { return b.FailurePolicy == api.FailClosed })
	if i < 0 {
		return nil
	}
	return bs[i]
}

// unsynced is the answer before the cache has synced: a Closed budget already seen is named, as when the cache is
// old; any other caller may be covered by a Closed budget not yet listed, or be a Pod not yet listed.
func unsynced(in Input) Decision {
	if in.Caller.Known {
		covering := slices.DeleteFunc(slices.Clone(in.Budgets), func(b *Budget) bool { return !covers(b, in.Caller) })
		if b := firstClosed(covering); b != nil {
			return unavailable(b, in.Cache)
		}
	}
	return Decision{Result: Unavailable, Reason: ReasonUnsynced, RetryAfter: UnavailableRetryAfter,
		Message: "llmbudget has not synced its cache yet, so it cannot tell which budgets cover this call"}
}

func unavailable(b *Budget, c Cache) Decision {
	why := "has not synced its cache yet"
	if c.Synced {
		why = fmt.Sprintf("has not listed or watched the cluster for %s (more than %s)", roundAge(c.Age), c.MaxAge)
	}
	d := figures(b, Unavailable, ReasonFailClosed)
	d.Message = fmt.Sprintf("%s cannot be checked now: llmbudget %s, and its failurePolicy is Closed", b.Who(), why)
	d.RetryAfter = UnavailableRetryAfter
	return d
}

func refusal(b *Budget, r Reason, message string, after int) Decision {
	d := figures(b, Refused, r)
	d.Message, d.RetryAfter = message, after
	return d
}

func figures(b *Budget, res Result, r Reason) Decision {
	return Decision{Result: res, Reason: r, Budget: b.Who(), State: string(b.State), RemainingUSD: b.RemainingUSD}
}

// Sentence is the sentence the admission policy's message starts with for this budget: status.enforcement.message,
// which the sync hook writes, or, when a status has none, the policy's own fallback. The policies' messageExpression
// are `params.?status.?enforcement.?message.orValue('<Kind> ' + params.metadata.name + ' is blocking')` (or
// ' would refuse' in Warn mode) followed by what is refused where, which a request has no part in.
func Sentence(b *Budget) string {
	if b.Enforcement.Message != "" {
		return b.Enforcement.Message
	}
	if b.Enforcement.Mode == api.ModeWarn {
		return b.Kind + " " + b.Name + " would refuse"
	}
	return b.Kind + " " + b.Name + " is blocking"
}

// postureSentence is the first budget's sentence in the namespace's blocked-by annotation.
func postureSentence(ns Namespace) string {
	first, _, _ := strings.Cut(ns.BlockedBy, "; ")
	if first == "" {
		return "Namespace " + ns.Name + " is labelled " + api.Group + "/blocked"
	}
	return first
}

// retryAfter is the whole seconds from now to the period's end, at least 1 and at most MaxRetryAfter.
func retryAfter(end, now time.Time) int {
	if end.IsZero() {
		return UnknownEndRetryAfter
	}
	secs := math.Ceil(end.Sub(now).Seconds())
	return int(min(max(secs, 1), MaxRetryAfter))
}

// tighter orders budgets by how close they are to refusing: by state, then by remaining USD, then by name.
func tighter(a, b *Budget) int {
	if c := cmp.Compare(severity(b.State), severity(a.State)); c != 0 {
		return c
	}
	ra, errA := money.Parse(a.RemainingUSD)
	rb, errB := money.Parse(b.RemainingUSD)
	switch {
	case errA == nil && errB == nil && ra.Cmp(rb) != 0:
		return ra.Cmp(rb)
	case errA == nil && errB != nil:
		return -1 // a readable figure first
	case errA != nil && errB == nil:
		return 1
	}
	return strings.Compare(a.Who(), b.Who())
}

func severity(s api.State) int {
	return slices.Index([]api.State{api.UnderBudget, api.Warning, api.Unknown, api.OverBudget}, s)
}

func stale(c Cache) string {
	switch {
	case !c.Synced:
		return "unsynced"
	case c.MaxAge > 0 && c.Age > c.MaxAge:
		return roundAge(c.Age)
	}
	return ""
}

func roundAge(d time.Duration) string { return d.Round(time.Second).String() }
