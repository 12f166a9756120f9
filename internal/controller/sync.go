// The flow both budget kinds share: a budget as Metacontroller's parent. Kind.Sync answers a sync or finalize
// request straight down: decode the parent, validate the spec, compute the period, read the spend (package
// spend/source), evaluate, render the status and children (render.go), and reconcile a deletion through the
// finalizer.
//
// A well-formed request about a bad budget is answered, not refused: a spec that cannot be decoded or validated
// yields state Unknown with reason InvalidSpec. Only a request without a usable parent is an error
// (a metacontroller.RequestError), which the handler turns into 400.

package controller

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// cleanupRetry is how soon Cleanup asks to be called again while a quota is still observed; Metacontroller
// usually calls sooner, on the quota's deletion.
const cleanupRetry = 5 * time.Second

// Kind is what tells the two budget kinds apart: the names of what deploy/ installs for them and what the hooks
// create. A cluster budget's quota prefix stands apart from a team budget's, so that a team budget of the same
// name keeps its own quota.
type Kind struct {
	Kind        string // api.Kind or api.ClusterKind
	Policy      string // the ValidatingAdmissionPolicy of the Policy gate
	QuotaPrefix string // the ResourceQuota of the Quota gate is QuotaPrefix + the budget's name
	// Read reads a validated budget's spend in the period from the related objects.
	Read func(api.LLMCostBudget, metacontroller.ObjectMap, period.Window) spend.Reading
}

func (k Kind) cluster() bool { return k.Kind == api.ClusterKind }

// Sync answers the sync and finalize hooks: Apply evaluates the budget and closes its namespaces while it blocks;
// Cleanup lifts the quotas and lets the budget go once none is observed.
func (k Kind) Sync(req metacontroller.CompositeRequest, now time.Time) (
	metacontroller.CompositeResponse, metacontroller.Summary, error,
) {
	p, err := DecodeParent(req.Parent)
	if err != nil {
		return metacontroller.CompositeResponse{}, metacontroller.Summary{}, err
	}
	var sum metacontroller.Summary
	resp := reconcile(p, req, func() (metacontroller.CompositeResponse, metacontroller.Action) {
		in := k.Input(p, req.Related, now)
		in.Created = created(k.owner(p.Metadata), in.Budget.Status, req.Children)
		r := evaluate.Evaluate(in)
		sum.State, sum.Reason = string(r.Status.State), r.Reason
		return render(k.owner(p.Metadata), r), metacontroller.RequeueAfter(r.ResyncAfter)
	})
	sum.Attrs = metacontroller.Attrs("budget", metacontroller.Qualified(p.Metadata.Namespace, p.Metadata.Name),
		"state", sum.State, "reason", sum.Reason)
	return resp, sum, nil
}

// Input decodes and validates the budget, computes its period and reads its spend: the evaluation's input.
func (k Kind) Input(p Parent, related metacontroller.ObjectMap, now time.Time) evaluate.Input {
	b, invalid := p.Budget(k.Kind)
	if invalid == nil {
		b.Spec.Default()
		if k.cluster() {
			invalid = b.Spec.ValidateCluster().ToAggregate()
		} else {
			invalid = b.Spec.Validate().ToAggregate()
		}
	}
	in := evaluate.Input{Budget: b, Invalid: invalid, Subject: k.subject(b.Metadata), Now: now}
	if invalid != nil {
		return in
	}
	// Validate loaded the zone: the calendar is computable.
	in.Window = b.Spec.PeriodSpec().Containing(now)
	if err := tooManyNamespaces(b.Spec.Enforcement.Gate, related); k.cluster() && err != nil {
		in.Spend = spend.Reading{Reason: api.ReasonTooManyNamespaces, Message: err.Error()}
		return in
	}
	in.Spend = k.Read(b, related, in.Window)
	return in
}

// tooManyNamespaces refuses a cluster budget that selects more than api.MaxSelectedNamespaces, or with a quota in
// each more than api.MaxQuotaNamespaces, before any is read, since neither its status nor the requests of its
// syncs could hold every namespace: its spend is unknown (TooManyNamespaces, naming the bound). Whoever can
// create or label a Namespace can push a budget past the bound, so, as with any spend that cannot be read, a
// block of this period holds on the namespaces it closed (package evaluate).
func tooManyNamespaces(gate api.Gate, related metacontroller.ObjectMap) error {
	n := len(related[metacontroller.NamespaceGroup])
	if n > api.MaxSelectedNamespaces {
		path := field.NewPath("spec", "namespaceSelector")
		return fmt.Errorf("%s (MaxSelectedNamespaces): narrow the selector or split the budget",
			field.TooMany(path, n, api.MaxSelectedNamespaces).Error())
	}
	if n > api.MaxQuotaNamespaces && slices.Contains(gate.Gates(), api.GateQuota) {
		return field.Invalid(field.NewPath("spec", "enforcement", "gate"), gate, fmt.Sprintf(
			"a ResourceQuota in each of %d namespaces is more than %d (MaxQuotaNamespaces): use gate Policy, "+
				"narrow the selector or split the budget", n, api.MaxQuotaNamespaces))
	}
	return nil
}

// created is when the API server created the Events of the previous status' announcements, as the request's
// children show them (metadata.creationTimestamp, which only the API server sets): an Event announced late is
// kept for evaluate.AnnounceFor from then.
func created(owner Owner, st *api.Status, kids metacontroller.ObjectMap) map[evaluate.Occurrence]time.Time {
	events := kids[metacontroller.GroupKey("v1", "Event")]
	if st == nil || len(events) == 0 {
		return nil
	}
	ns := cmp.Or(owner.Namespace, "default")
	out := map[evaluate.Occurrence]time.Time{}
	for _, a := range st.Announcements {
		id := evaluate.Occurrence{Slug: a.Slug, At: a.At.Unix()}
		raw, ok := events[metacontroller.Key(ns, EventName(owner.Name, id.Slug, id.At))]
		if !ok {
			continue
		}
		var ev struct {
			Metadata struct {
				CreationTimestamp metav1.Time `json:"creationTimestamp"`
			} `json:"metadata"`
		}
		if decode.Lenient(raw, &ev, "children") == nil && !ev.Metadata.CreationTimestamp.IsZero() {
			out[id] = ev.Metadata.CreationTimestamp.Time
		}
	}
	return out
}

// subject is how messages name a budget of this kind.
func (k Kind) subject(m api.ObjectMeta) evaluate.Subject {
	named := k.Kind + " " + m.Name
	s := evaluate.Subject{Named: named, Qualified: named, Where: "the namespaces it selects",
		Quota: k.QuotaPrefix + m.Name, Policy: k.Policy}
	if !k.cluster() {
		s.Qualified, s.Where = k.Kind+" "+m.Namespace+"/"+m.Name, "namespace "+m.Namespace
	}
	return s
}

func (k Kind) owner(m api.ObjectMeta) Owner {
	if k.cluster() {
		return ClusterOwner(m)
	}
	return BudgetOwner(m)
}

// render is an evaluation's answer: the status, its Events, and its quota in each namespace it closes.
func render(owner Owner, r evaluate.Result) metacontroller.CompositeResponse {
	kids := make([]any, 0, len(r.Announcements)+1)
	for _, e := range Events(owner, r.Announcements) {
		kids = append(kids, e)
	}
	if r.Quota != nil {
		quotas := Quotas(owner, r.Quota)
		for i := range quotas {
			kids = append(kids, quotas[i])
		}
	}
	return metacontroller.CompositeResponse{Status: r.Status, Children: kids}
}

// reconcile answers a sync or finalize request for a budget of either kind through the finalizer: apply's answer
// while the budget lives; once it goes, no children (so Metacontroller deletes the quotas and our Events), and
// finalized once no ResourceQuota (in any namespace) is observed.
func reconcile(p Parent, req metacontroller.CompositeRequest,
	apply func() (metacontroller.CompositeResponse, metacontroller.Action)) metacontroller.CompositeResponse {
	res := metacontroller.Finalizer[metacontroller.CompositeResponse]{
		Apply:   apply,
		Cleanup: func() metacontroller.CompositeResponse { return cleanup(p.Status) },
		Remains: func() bool { return len(req.Children[metacontroller.ResourceQuotaGroup]) > 0 },
		Retry:   cleanupRetry,
	}.Reconcile(metacontroller.EventOf(req.Finalizing))
	res.Response.Tail = res.Tail()
	return res.Response
}

// cleanup desires no children and keeps the status as it was: it never decodes the spec, so a budget whose spec
// is broken, or that was never synced, can still be deleted.
func cleanup(status json.RawMessage) metacontroller.CompositeResponse {
	var kept any
	var fields map[string]json.RawMessage // Metacontroller's status is an object
	if decode.Lenient(status, &fields, "status") == nil && fields != nil {
		kept = status
	}
	return metacontroller.CompositeResponse{Status: kept, Children: []any{}}
}

// Parent is a budget of either kind as received, its spec and status kept raw so that a spec of the wrong shape
// is reported, and a foreign status ignored, rather than failing the request.
type Parent struct {
	Metadata api.ObjectMeta  `json:"metadata"`
	Spec     json.RawMessage `json:"spec"`
	Status   json.RawMessage `json:"status"`
	// metaErr is why Metadata did not decode whole (a malformed creationTimestamp or generation): InvalidSpec.
	metaErr error
}

// DecodeParent reads a request's parent; only a parent without a usable name is an error (a
// metacontroller.RequestError).
func DecodeParent(raw json.RawMessage) (Parent, error) {
	var p Parent
	if len(raw) == 0 || string(raw) == "null" {
		return p, metacontroller.BadRequest("request has no parent")
	}
	if err := decode.Lenient(raw, &p, "parent"); err != nil {
		// The least of a parent that a response can be made for: not metacontroller.ObjectMeta, whose labels may be
		// what failed to decode.
		var id struct {
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
				UID       string `json:"uid"`
			} `json:"metadata"`
			Spec   json.RawMessage `json:"spec"`
			Status json.RawMessage `json:"status"`
		}
		if decode.Lenient(raw, &id, "parent") != nil {
			return p, metacontroller.BadRequest("%w", err)
		}
		m := id.Metadata
		md := api.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID}
		p = Parent{Metadata: md, Spec: id.Spec, Status: id.Status, metaErr: err}
	}
	if p.Metadata.Name == "" {
		return p, metacontroller.BadRequest("parent.metadata.name is missing")
	}
	return p, nil
}

// Budget decodes spec and status as a budget of kind; a spec decoding error is for the caller to report as
// InvalidSpec. The spec is decoded strictly: the API server prunes fields the CRD does not know, so an unknown or
// repeated field is one a person wrote (through eval) and must hear about.
func (p Parent) Budget(kind string) (api.LLMCostBudget, error) {
	b := api.LLMCostBudget{APIVersion: api.APIVersion, Kind: kind, Metadata: p.Metadata}
	var st api.Status
	if len(p.Status) > 0 && decode.Lenient(p.Status, &st, "status") == nil {
		b.Status = &st
	}
	switch {
	case p.metaErr != nil:
		return b, p.metaErr
	case len(p.Spec) == 0 || string(p.Spec) == "null":
		return b, errors.New("spec is missing")
	}
	return b, decode.Strict(p.Spec, &b.Spec, "spec")
}
