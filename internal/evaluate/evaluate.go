// Package evaluate is the pure heart of llmbudget: from a budget, its spend and
// the time, it computes the budget's status, the Events to announce, whether to
// close the namespace to new workloads, and when to look again.
//
// The same input gives the same Result, byte for byte once encoded; no budget
// or data makes it panic; money and percentages never pass through floating point.
package evaluate

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// Input is everything an evaluation may look at.
type Input struct {
	// Budget.Status is what the previous sync wrote: nil, or partly foreign, on the first.
	Budget api.LLMCostBudget
	// SpecErr, why the spec could not be decoded, makes the budget Unknown (InvalidSpec) with it as the message.
	SpecErr error
	// SpendData is nil when the spend ConfigMap is missing; SpendDataErr (a *spend.Error) is why it is unreadable.
	SpendData    map[string]string
	SpendDataErr error
	Now          time.Time
	// Pool, when set, reads the spend instead: a ClusterLLMCostBudget's sum over its namespaces.
	Pool PoolReader
}

// PoolReader reads a cluster budget's spend for its source and current window.
type PoolReader func(spend.Source, period.Window) Pool

// Pool is spend summed over the sources of many namespaces.
type Pool struct {
	Usage spend.Usage
	// Selected are the namespaces the budget covers, sorted; closed while blocking.
	Selected []string
	// Breakdown is status.namespaces; Omitted counts the namespaces it leaves out.
	Breakdown []api.NamespaceStatus
	Omitted   int32
	// Reason is why the sum is unknown (empty if known); Message is the BudgetEvaluated message.
	Reason, Message string
}

// Result is what a sync must answer.
type Result struct {
	Status api.Status
	// Announcements are the Events desired right now, sorted by Slug.
	Announcements []Announcement
	// Quota is the ResourceQuota to keep while blocking; nil otherwise.
	Quota       *Quota
	ResyncAfter time.Duration
}

// Announcement is one occurrence to be told once, as a Kubernetes Event.
type Announcement struct {
	// Slug identifies the occurrence within the budget (used in Event names).
	Slug    string
	Type    string // Normal or Warning
	Reason  string
	Message string
	// At is when it occurred; the Event is desired until At+AnnounceFor.
	At time.Time
}

// Quota describes the ResourceQuota that closes the namespace.
type Quota struct {
	Name      string
	Resources []string
	Why       string
}

const (
	// Event types.
	EventNormal  = "Normal"
	EventWarning = "Warning"
	// AnnounceFor is how long an Event stays desired after its occurrence. It
	// is below the API server's default event TTL (1h) so that an expired
	// Event is never re-created: each occurrence is announced exactly once.
	AnnounceFor = 55 * time.Minute
	// A budget is looked at hourly even when nothing it watches changes, and
	// its forecast is recomputed at each whole hour since the period start.
	maxResync    = time.Hour
	forecastStep = time.Hour
)

// subject names the budget and where it enforces in messages, and its
// ResourceQuota and the Policy gate's ValidatingAdmissionPolicy as deploy/ installs it.
type subject struct {
	named         string // "LLMCostBudget chatbot"
	qualified     string // "LLMCostBudget team-ml/chatbot"
	where         string // "namespace team-ml"
	quota, policy string
}

func subjectOf(in Input) subject {
	m := in.Budget.Metadata
	if in.Pool == nil {
		return subject{api.Kind + " " + m.Name, api.Kind + " " + m.Namespace + "/" + m.Name,
			"namespace " + m.Namespace, "llmbudget-" + m.Name, "llmbudget-budgets"}
	}
	// The quota name stands apart from a team budget's so that a team budget
	// of the same name keeps its own.
	named := api.ClusterKind + " " + m.Name
	return subject{named, named, "the namespaces it selects", "llmbudget-cluster-" + m.Name, "llmbudget-cluster-budgets"}
}

// Evaluate computes the Result for in.
func Evaluate(in Input) Result {
	e := &evaluation{in: in, who: subjectOf(in), now: in.Now, spec: in.Budget.Spec, resync: maxResync}
	e.spec.Thresholds = slices.Clone(in.Budget.Spec.Thresholds) // Default fills them in
	if in.Budget.Status != nil {
		e.prev = *in.Budget.Status
	}
	e.st = api.Status{
		ObservedGeneration: in.Budget.Metadata.Generation,
		// Kept while the spec is unreadable; replaced by run otherwise.
		Period:     e.prev.Period,
		Thresholds: e.prev.Thresholds,
		History:    e.prev.History,
	}
	e.run()
	return e.result()
}

func metaTime(t time.Time) *metav1.Time {
	return new(metav1.NewTime(t.UTC().Truncate(time.Second)))
}
