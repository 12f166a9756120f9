// Package evaluate is the pure heart of llmbudget: from a budget, the spend its caller read and the time, it
// computes the budget's status, the Events to announce, whether to close namespaces to new workloads, and when to
// look again. It parses no request and no ConfigMap, and never calls back into its caller.
//
// Evaluate runs in stages, each a function from values to a value: the spend's freshness against
// spec.costSource.maxAge, the period, the measurement against every limit, the threshold crossings, the
// enforcement, the conditions and the announcements.
//
// The same input gives the same Result, byte for byte once encoded; no budget or data makes it panic; money and
// percentages never pass through floating point.
package evaluate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/text"
)

// Input is everything an evaluation may look at, read by the caller.
type Input struct {
	// Budget.Spec is defaulted (unless Invalid says it did not decode); Budget.Status is what the previous sync
	// wrote: nil, or partly foreign, on the first sync.
	Budget api.LLMCostBudget
	// Invalid is why the spec did not decode or validate: the budget is then Unknown (InvalidSpec) with it as the
	// message, and Window and Spend are not looked at.
	Invalid error
	Subject Subject
	Window  period.Window // the current period, from the spec's calendar
	Spend   spend.Reading
	Now     time.Time
	// Created is when the API server created the Events of status.announcements, as the request's children show
	// them: an Event announced late is kept for AnnounceFor from its creation.
	Created map[Occurrence]time.Time
}

// Occurrence names an announcement, as its Event's name does: its slug and the second it occurred.
type Occurrence struct {
	Slug string
	At   int64 // Unix seconds
}

// Subject is how messages name the budget and where it enforces, with the names of the ResourceQuota it keeps
// and of the ValidatingAdmissionPolicy the deployment installs as its Policy gate. The caller names them.
type Subject struct {
	Named     string // "LLMCostBudget chatbot"
	Qualified string // "LLMCostBudget team-ml/chatbot"
	Where     string // "namespace team-ml"
	Quota     string
	Policy    string
}

// Result is what a sync must answer.
type Result struct {
	Status        api.Status
	Reason        string         // the BudgetEvaluated condition's reason
	Announcements []Announcement // the Events desired right now, sorted by Slug
	Quota         *Quota         // the ResourceQuota to keep while blocking; nil otherwise
	ResyncAfter   time.Duration  // when to evaluate again if nothing changes
}

// Announcement is one occurrence to be told once, as a Kubernetes Event.
type Announcement struct {
	Slug    string // identifies the occurrence within the budget (used in Event names)
	Type    string // Normal or Warning
	Reason  string
	Message string
	At      time.Time // when it occurred; the Event is desired until At+AnnounceFor, or announced late
	// fresh is whether this sync is the first to find it, which the previous status does not hold: only such an
	// occurrence is announced late. It is false in a Result.
	fresh bool
}

// Quota describes the ResourceQuota that closes namespaces to new workloads.
type Quota struct {
	Name       string
	Resources  []string
	Why        string
	Namespaces []string // the budget's own, or the namespaces a cluster budget selects
}

// The types of an Event, the reasons of the Blocking condition (ReasonUnblocked is the reason of the Event that
// announces a lift, never a condition's), and how long announcements last.
const (
	EventNormal  = "Normal"
	EventWarning = "Warning"

	ReasonBlocking            = "BlockingNewWorkloads"
	ReasonWouldBlock          = "WouldBlockNewWorkloads" // Warn mode: the policy warns instead of refusing
	ReasonBlockingProjected   = "BlockingOnProjection"   // blocking from the projected crossing of a USD limit
	ReasonWouldBlockProjected = "WouldBlockOnProjection" // the same in Warn mode
	ReasonUnblocked           = "Unblocked"
	ReasonNotBlocking         = "NotBlocking"
	ReasonEnforcementDisabled = "EnforcementDisabled"
	ReasonSuspended           = "Suspended"
	// AnnounceFor is how long an Event stays desired after its occurrence: below the API server's default event
	// TTL (1h) so that an expired Event is never re-created, and each occurrence is announced exactly once. An
	// occurrence first found AnnounceFor or more after the inputs place it (after an outage) is announced late:
	// its Event is desired for AnnounceFor from its creation instead.
	AnnounceFor = 55 * time.Minute
	// LateGrace is how long a late announcement's Event stays desired before the request's children show it
	// created: the API server's event TTL less AnnounceFor, so that an Event that expired unseen is never
	// re-created.
	LateGrace = time.Hour - AnnounceFor
	// Restamp is how old status.lastEvaluatedTime grows before a sync moves it though nothing else changed. An
	// occurrence the inputs give no time of their own (spend without a spend-as-of stamp) is dated at the last
	// evaluation: while syncs run, at most Restamp early, well inside AnnounceFor; after an outage, as early as
	// the outage is long, and then announced late.
	Restamp      = 15 * time.Minute
	maxResync    = time.Hour // a budget is looked at hourly even when nothing it watches changes
	forecastStep = time.Hour // its forecast is recomputed at each whole hour since the period start
)

// Evaluate computes the Result for in.
func Evaluate(in Input) Result {
	var prev api.Status
	if in.Budget.Status != nil {
		prev = *in.Budget.Status
	}
	f := freshnessOf(in)
	v := verdictOf(in, f)
	p := periodOf(in, prev)
	m := measure(in, v, p, prev, dated(in, prev))
	proj := project(in, v, f, m)
	enf, quota := enforce(in, v, m, proj, p, lastReading(in, p, prev), lastNamespaces(prev))
	st := statusOf(in, p, m, enf)
	st.Projection, st.Overshoot = proj.status, overshoot(in, v)
	st.Conditions = conditions(in, prev, v, f, m, proj, enf)
	var occurring []Announcement
	if !in.Budget.Spec.Suspend { // a suspended budget announces nothing new
		occurring = occurrences(in, prev, v, f, p, m, proj, enf)
	}
	anns, until, left := announce(prev, occurring, in.Created, in.Now)
	st.Announcements = records(anns)
	if left > 0 {
		capped(st.Conditions, left)
	}
	st.LastEvaluatedTime = stamp(st, prev, in.Now)
	return Result{Status: st, Reason: v.reason, Announcements: anns, Quota: quota,
		ResyncAfter: resync(in, v, f, m, proj, until, st.LastEvaluatedTime.Time)}
}

// verdict is the BudgetEvaluated condition: whether the budget could be evaluated, and what was read.
type verdict struct {
	reason, message string
}

func (v verdict) evaluated() bool   { return v.reason == api.ReasonEvaluated }
func (v verdict) invalidSpec() bool { return v.reason == api.ReasonInvalidSpec }

// verdictOf is the BudgetEvaluated verdict; spend that is stale under failurePolicy Closed counts as unknown.
func verdictOf(in Input, f freshness) verdict {
	switch {
	case in.Invalid != nil:
		return verdict{api.ReasonInvalidSpec, text.Abbreviate(in.Invalid.Error(), maxMessage)}
	case in.Spend.Reason != "":
		return verdict{in.Spend.Reason, text.Abbreviate(in.Spend.Message, maxMessage)}
	case f.unknown(in):
		return verdict{api.ReasonSpendStale, f.message}
	}
	return verdict{api.ReasonEvaluated, text.Abbreviate(in.Spend.Message, maxMessage)}
}

// The most of a message from the caller that the status repeats: its callers abbreviate each value they echo,
// and this bounds what they compose, so that a status stays far below what etcd stores whatever the input.
const (
	maxMessage          = 1024 // a condition's, an announcement's, the enforcement reason's share
	maxNamespaceMessage = 512  // each of status.namespaces
)

// statusOf gathers the stages' figures into the status; conditions and announcements follow.
func statusOf(in Input, p periodView, m measurement, enf *api.EnforcementStatus) api.Status {
	st := api.Status{
		ObservedGeneration: in.Budget.Metadata.Generation,
		State:              m.state,
		LimitUSD:           m.limitUSD,
		ObservedSpendUSD:   m.spentUSD,
		RemainingUSD:       m.remainingUSD,
		PercentUsed:        m.percentUsed,
		ForecastSpendUSD:   m.forecastUSD,
		Tokens:             m.tokens,
		Period:             p.status,
		Thresholds:         m.thresholds,
		Models:             m.modelStatuses(),
		Enforcement:        enf,
		History:            p.history,
	}
	if ns := in.Spend.Namespaces; ns != nil && in.Invalid == nil {
		st.NamespaceCount, st.NamespacesOmitted = new(int32(len(ns.Selected))), ns.Omitted
		st.Namespaces = slices.Clone(ns.Breakdown)
		for i := range st.Namespaces {
			st.Namespaces[i].Message = text.Abbreviate(st.Namespaces[i].Message, maxNamespaceMessage)
		}
	}
	return st
}

// overshoot is how far the measured spend went past the USD limit, when it did.
func overshoot(in Input, v verdict) *api.OvershootStatus {
	limit := parseLimit(in.Budget.Spec.LimitUSD)
	if !v.evaluated() || limit == nil || in.Spend.Usage.CostUSD.Cmp(*limit) <= 0 {
		return nil
	}
	over := in.Spend.Usage.CostUSD.Sub(*limit)
	hundredths := over.MulDiv(100, 1).PercentOf(*limit) // floor(over * 10000 / limit)
	return &api.OvershootStatus{USD: over.String(), Percent: fmt.Sprintf("%d.%02d", hundredths/100, hundredths%100)}
}

// resync is when to evaluate again if nothing changes: at the period end, when the forecast next moves, when the
// spend turns stale, when the projected crossing comes and when its projection lapses, when an announcement's
// window closes, and when lastEvaluatedTime is Restamp old.
func resync(in Input, v verdict, f freshness, m measurement, proj projection, until []time.Time,
	evaluated time.Time) time.Duration {
	after := maxResync
	sooner := func(at time.Time) { after = min(after, max(at.Sub(in.Now), time.Second)) }
	if !v.invalidSpec() { // the period is known
		sooner(in.Window.End)
		if m.limitUSD != "" {
			sooner(nextForecastChange(in.Window, in.Now))
		}
	}
	if !f.until.IsZero() {
		sooner(f.until)
	}
	switch {
	case !proj.at.IsZero() && proj.at.After(in.Now):
		sooner(proj.at)
	case proj.blocks:
		sooner(proj.until)
	}
	for _, at := range until {
		sooner(at)
	}
	sooner(evaluated.Add(Restamp))
	return after
}

// dated is when the inputs place whatever this sync finds new (a crossing, a block, its lift, spend turning
// unreadable), never the clock: the latest of the period start, the budget's creation, the spend's stamp and the
// previous status' lastEvaluatedTime (what it finds new came after that evaluation), leaving out an instant
// ahead of the clock. Metacontroller may sync again with the parent as it was before its last status write; that
// sync sees the same inputs, so it dates the occurrence, and names and words its Event, exactly alike. After an
// outage this date may be before the Event's window: announce announces it late.
func dated(in Input, prev api.Status) time.Time {
	var at time.Time
	for _, t := range []time.Time{
		in.Window.Start, in.Budget.Metadata.CreationTimestamp.Time, in.Spend.Stamp.AsOf, lastEvaluated(prev),
	} {
		if t.After(at) && !t.After(in.Now) {
			at = t
		}
	}
	return metaTime(at).Time
}

func lastEvaluated(st api.Status) time.Time {
	if st.LastEvaluatedTime == nil {
		return time.Time{}
	}
	return st.LastEvaluatedTime.Time
}

// stamp is status.lastEvaluatedTime, moved only when the status changed or is Restamp old: Metacontroller syncs
// a parent again whenever its status changes, so a status that moved with every call (a timestamp, a forecast by
// the second) would make it sync forever. Moving it every Restamp bounds how early dated places what spend
// without a stamp of its own brings. Both statuses carry the previous stamp, so that they are compared as written.
func stamp(st, prev api.Status, now time.Time) *metav1.Time {
	st.LastEvaluatedTime = prev.LastEvaluatedTime
	cur, errCur := json.Marshal(st)
	old, errPrev := json.Marshal(prev)
	if prev.LastEvaluatedTime == nil || errCur != nil || errPrev != nil || !bytes.Equal(cur, old) ||
		now.Sub(prev.LastEvaluatedTime.Time) >= Restamp {
		return metaTime(now)
	}
	return prev.LastEvaluatedTime
}

func metaTime(t time.Time) *metav1.Time {
	return new(metav1.NewTime(t.UTC().Truncate(time.Second)))
}
