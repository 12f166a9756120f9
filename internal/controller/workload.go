// The DecoratorController's hooks for the workloads that draw on a budget (any object
// labelled llmbudget.dev/budget): pure functions from Metacontroller requests and the clock to responses.
//
// It guarantees that it only ever sets the label and annotations undecorated removes, never the workload's spec
// or status, and that it never holds up a workload's deletion: the decorator has no finalize hook, so
// Metacontroller puts no finalizer on the workloads. An object without the label (the second decorator selects
// what still carries LabelState) is answered with every decoration removed, so decorations go when the label goes
// and the object then matches neither decorator.

package controller

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/money"
)

// budgetGroup is the object-map key of the LLMCostBudgets a decorator reads.
var budgetGroup = metacontroller.GroupKey(api.APIVersion, api.Kind)

// What this package sets on a workload labelled api.LabelBudget.
const (
	LabelState          = "llmbudget.dev/state"
	AnnotationPercent   = "llmbudget.dev/percent-used"
	AnnotationSpend     = "llmbudget.dev/spend-usd"
	AnnotationLimit     = "llmbudget.dev/limit-usd"
	AnnotationPeriodEnd = "llmbudget.dev/period-end"
	AnnotationReason    = "llmbudget.dev/reason"
	// AnnotationPostureBudget names the budget the decorations describe and AnnotationPostureAt when that budget
	// took the status they copy (its status.lastEvaluatedTime). The decorations outlive the label, so these are
	// what tells a reader that they are stale: a posture budget the label no longer names, or an old time.
	AnnotationPostureBudget = "llmbudget.dev/posture-budget"
	AnnotationPostureAt     = "llmbudget.dev/posture-at"
	// AnnotationExceededAt records when this workload was told its budget was exceeded this period, so the
	// BudgetExceeded Event stays the same for its whole announcement window whatever the budget does meanwhile.
	AnnotationExceededAt = "llmbudget.dev/exceeded-at"
	ReasonBudgetNotFound = "BudgetNotFound"
	ReasonNotEvaluated   = "BudgetNotEvaluated"
)

// settleRetry is how soon a decorator looks again while its object lacks the decorations last answered: Metacontroller
// drops an update that conflicts with another writer and, as it ignores status changes, may not call again until
// its resync period.
const settleRetry = 10 * time.Second

// object is the part of a workload the hooks read; nothing else of it (spec, status, timestamps) can fail a request.
type object struct {
	APIVersion string                    `json:"apiVersion"`
	Kind       string                    `json:"kind"`
	Metadata   metacontroller.ObjectMeta `json:"metadata"`
}

func decodeObject(raw json.RawMessage, field string) (object, error) {
	return metacontroller.DecodeObject(raw, field, func(o object) string { return o.Metadata.Name })
}

// Customize relates the workload's budget; objects that lost the label (it is called for them too) get none.
func (Workload) Customize(req metacontroller.CustomizeRequest) (metacontroller.CustomizeResponse, error) {
	o, err := decodeObject(req.Parent, "parent")
	if err != nil {
		return metacontroller.CustomizeResponse{}, err
	}
	resp := metacontroller.CustomizeResponse{RelatedResources: []metacontroller.RelatedResourceRule{}}
	if o.Metadata.Labels[api.LabelBudget] != "" {
		// Every budget of the namespace, not just the labelled one: Metacontroller caches this answer per generation,
		// and changing a label does not change the generation. Sync picks the budget the label names.
		rule := metacontroller.RelatedResourceRule{
			APIVersion: api.APIVersion,
			Resource:   api.Resource,
			Namespace:  o.Metadata.Namespace,
		}
		resp.RelatedResources = append(resp.RelatedResources, rule)
	}
	return resp, nil
}

// Workload is the workload DecoratorController's hooks.
type Workload struct{}

var (
	_ metacontroller.DecoratorHook      = Workload{}
	_ metacontroller.DecoratorFinalizer = Workload{}
)

// Sync answers the decorator's sync hook with the posture of the workload's budget. An object that no longer
// carries the budget label, and a request that is finalizing (see Finalize, which also releases the object at once),
// are answered with the decorations removed.
func (Workload) Sync(req metacontroller.DecoratorRequest, now time.Time) (
	metacontroller.DecoratorResponse, metacontroller.Summary, error,
) {
	o, err := decodeObject(req.Object, "object")
	if err != nil {
		return metacontroller.DecoratorResponse{}, metacontroller.Summary{}, err
	}
	resp, state := undecorated(), ""
	_, labelled := o.Metadata.Labels[api.LabelBudget]
	switch {
	case req.Finalizing:
		resp.Finalized = true
	case labelled:
		var requeue time.Duration
		resp, state, requeue = apply(o, req.Related, now)
		resp.ResyncAfterSeconds = metacontroller.RequeueAfter(requeue).Seconds()
	}
	return resp, workloadSummary(o, state), nil
}

// Finalize answers a finalize hook, should a DecoratorController for workloads be configured with one: it removes
// the decorations, and Metacontroller its finalizer, in the same update, so that no deletion waits for this service.
func (c Workload) Finalize(req metacontroller.DecoratorRequest, now time.Time) (
	metacontroller.DecoratorResponse, metacontroller.Summary, error,
) {
	return c.Sync(req, now)
}

func workloadSummary(o object, state string) metacontroller.Summary {
	budget := o.Metadata.Labels[api.LabelBudget]
	workload := o.Kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name
	return metacontroller.Summary{State: state,
		Attrs: metacontroller.Attrs("budget", metacontroller.Qualified(o.Metadata.Namespace, budget),
			"state", state, "workload", workload)}
}

// undecorated is the answer that removes every key Apply may set.
func undecorated() metacontroller.DecoratorResponse {
	return metacontroller.DecoratorResponse{
		Labels: map[string]*string{LabelState: nil},
		Annotations: map[string]*string{AnnotationPercent: nil, AnnotationSpend: nil, AnnotationLimit: nil,
			AnnotationPeriodEnd: nil, AnnotationReason: nil, AnnotationExceededAt: nil,
			AnnotationPostureBudget: nil, AnnotationPostureAt: nil},
		Attachments: []any{},
	}
}

// apply is the posture of the workload's budget, and how soon to look again (0: only on a change).
func apply(o object, related metacontroller.ObjectMap, now time.Time) (
	resp metacontroller.DecoratorResponse, state string, requeue time.Duration,
) {
	resp = undecorated()
	name := o.Metadata.Labels[api.LabelBudget]
	setValue(resp.Annotations, AnnotationPostureBudget, name)
	raw, found := related[budgetGroup][metacontroller.Key(o.Metadata.Namespace, name)]
	var budget struct {
		Status api.Status `json:"status"`
	}
	if found && decode.Lenient(raw, &budget, "budget") != nil {
		budget.Status = api.Status{} // one this version does not recognise: not evaluated
	}
	st := budget.Status
	reason := ""
	switch {
	case !found || name == "":
		reason = ReasonBudgetNotFound
	case !slices.Contains(states, st.State):
		reason = ReasonNotEvaluated // none yet, or one this version does not know
	}
	if reason != "" {
		setValue(resp.Labels, LabelState, string(api.Unknown))
		setValue(resp.Annotations, AnnotationReason, reason)
		return resp, reason, 0
	}
	if st.LastEvaluatedTime != nil {
		setValue(resp.Annotations, AnnotationPostureAt, st.LastEvaluatedTime.UTC().Format(time.RFC3339))
	}
	setValue(resp.Labels, LabelState, string(st.State))
	if st.PercentUsed != nil {
		setValue(resp.Annotations, AnnotationPercent, strconv.FormatInt(*st.PercentUsed, 10))
	}
	setValue(resp.Annotations, AnnotationSpend, amount(st.ObservedSpendUSD))
	setValue(resp.Annotations, AnnotationLimit, amount(st.LimitUSD))
	if st.Period != nil {
		setValue(resp.Annotations, AnnotationPeriodEnd, instant(st.Period.End))
	}
	if a, ok := exceeded(name, st, o.Metadata.Annotations[AnnotationExceededAt], now); ok {
		setValue(resp.Annotations, AnnotationExceededAt, a.At.UTC().Format(time.RFC3339))
		owner := Owner{
			APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Metadata.Name,
			Namespace: o.Metadata.Namespace, UID: o.Metadata.UID, Budget: name,
		}
		if age := now.Sub(a.At); age >= 0 && age < evaluate.AnnounceFor {
			resp.Attachments = append(resp.Attachments, NewEvent(owner, a))
			requeue = evaluate.AnnounceFor - age
		}
	}
	if !resp.CarriedBy(o.Metadata.Labels, o.Metadata.Annotations) {
		requeue = settleRetry
	}
	return resp, string(st.State), requeue
}

// A budget's status is written by whoever may write its status subresource, and a crafted one can say anything:
// only a known state becomes the label, and an annotation copies a value only when it is one of its kind and at
// most maxValue bytes (else the annotation is removed), so the decorations are always valid and small.
var states = []api.State{api.UnderBudget, api.Warning, api.OverBudget, api.Unknown}

const maxValue = 64

// amount is s when it is a USD amount of at most maxValue bytes, else empty.
func amount(s string) string {
	if _, err := money.Parse(s); err != nil || len(s) > maxValue {
		return ""
	}
	return s
}

// instant is s when it is an RFC 3339 time of at most maxValue bytes, else empty.
func instant(s string) string {
	if _, err := time.Parse(time.RFC3339, s); err != nil || len(s) > maxValue {
		return ""
	}
	return s
}

// setValue sets a label or annotation key to v, leaving it null (removed) when v is empty.
func setValue(m map[string]*string, key, v string) {
	if v != "" {
		m[key] = &v
	}
}

// exceeded is the current period's BudgetExceeded announcement. It is dated when this workload was first seen
// drawing on the exceeded budget, which marked records (the exceeded-at annotation the object carries), so each
// workload is told once per period, even one labelled long after the budget ran out.
func exceeded(budget string, st api.Status, marked string, now time.Time) (evaluate.Announcement, bool) {
	msg := fmt.Sprintf("LLMCostBudget %s is OverBudget", budget)
	at, _ := time.Parse(time.RFC3339, marked) // zero when none yet
	// The mark is the workload's, which its owner may write: only one inside the current period, and not in the
	// future, is trusted, lest a mark dated ahead suppress the announcement of every later period.
	if at.After(now) {
		at = time.Time{}
	}
	if p := st.Period; p != nil {
		msg += fmt.Sprintf(" for the period %s to %s", p.Start, p.End)
		if start, err := time.Parse(time.RFC3339, p.Start); err == nil && at.Before(start) {
			at = time.Time{} // one of an earlier period
		}
		if end, err := time.Parse(time.RFC3339, p.End); err == nil && !at.Before(end) {
			at = time.Time{} // one dated in a later period
		}
	}
	if at.IsZero() {
		if st.State != api.OverBudget {
			return evaluate.Announcement{}, false
		}
		at = now.UTC().Truncate(time.Second)
	}
	return evaluate.Announcement{
		Slug:    "budgetexceeded",
		Type:    evaluate.EventWarning,
		Reason:  "BudgetExceeded",
		Message: msg,
		At:      at,
	}, true
}
