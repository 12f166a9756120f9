// Package budget holds LLMCostBudget's hooks, and the parts of a hook that both budget kinds share: decoding
// the parent, the finalizer's Cleanup, and rendering an evaluation as children. A sync reads straight down:
// decode the parent, validate the spec, compute the period, read the spend ConfigMap, evaluate, render.
//
// A well-formed request about a bad budget is answered, not refused: a spec that cannot be decoded or validated
// yields state Unknown with reason InvalidSpec. Only a request without a usable parent is an error
// (a hookwire.RequestError), which the HTTP layer turns into 400.
package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/children"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/finalizer"
	"github.com/llmbudget/llmbudget/internal/hookwire"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// The names of what deploy/ installs for LLMCostBudgets and what the hooks create for them.
const (
	PolicyName  = "llmbudget-budgets" // the ValidatingAdmissionPolicy of the Policy gate
	quotaPrefix = "llmbudget-"        // the ResourceQuota of the Quota gate is quotaPrefix + the budget's name
)

// cleanupRetry is how soon Cleanup asks to be called again while a quota is still observed; Metacontroller
// usually calls sooner, on the quota's deletion.
const cleanupRetry = 5 * time.Second

// Summary is what a hook call did, for the one log line per call.
type Summary struct {
	Namespace, Name string
	State           api.State
	Reason          string
}

// Customize names the spend ConfigMap, or the TaskRecords the spec selects, as related, so that Metacontroller
// watches them and passes them to sync; a spec that does not decode relates nothing (sync reports it).
func Customize(req hookwire.CustomizeRequest) (hookwire.CustomizeResponse, error) {
	p, err := DecodeParent(req.Parent)
	if err != nil {
		return hookwire.CustomizeResponse{}, err
	}
	resp := hookwire.CustomizeResponse{RelatedResources: []hookwire.RelatedResourceRule{}}
	b, err := p.Budget(api.Kind)
	switch cs := b.Spec.CostSource; {
	case err != nil:
		// sync reports the broken spec
	case cs.Format == api.TaskRecords && cs.Selector != nil:
		if Usable(cs.Selector.Meta()) {
			resp.RelatedResources = append(resp.RelatedResources, RecordsRule(b.Metadata.Namespace, nil, cs.Selector.Meta()))
		}
	case cs.ConfigMapName != "":
		resp.RelatedResources = append(resp.RelatedResources, hookwire.RelatedResourceRule{
			APIVersion: "v1", Resource: "configmaps",
			Namespace: b.Metadata.Namespace, Names: []string{b.Spec.CostSource.ConfigMapName},
		})
	}
	return resp, nil
}

// Sync answers the sync and finalize hooks: Apply evaluates the budget, Cleanup lifts enforcement and lets the
// budget go once no quota remains.
func Sync(req hookwire.CompositeRequest, now time.Time) (hookwire.CompositeResponse, Summary, error) {
	p, err := DecodeParent(req.Parent)
	if err != nil {
		return hookwire.CompositeResponse{}, Summary{}, err
	}
	sum := Summary{Namespace: p.Metadata.Namespace, Name: p.Metadata.Name}
	resp := Reconcile(p, req, func() (hookwire.CompositeResponse, finalizer.Action) {
		r := evaluate.Evaluate(input(p, req.Related, now))
		sum.State, sum.Reason = r.Status.State, r.Reason
		return Render(children.BudgetOwner(p.Metadata), r), finalizer.RequeueAfter(r.ResyncAfter)
	})
	return resp, sum, nil
}

// input decodes and validates the budget, computes its period and reads its spend: the evaluation's input.
func input(p Parent, related hookwire.ObjectMap, now time.Time) evaluate.Input {
	b, invalid := p.Budget(api.Kind)
	if invalid == nil {
		b.Spec.Default()
		invalid = b.Spec.Validate().ToAggregate()
	}
	in := evaluate.Input{Budget: b, Invalid: invalid, Subject: subjectOf(b.Metadata), Now: now}
	if invalid == nil {
		// Validate loaded the zone: the calendar is computable.
		in.Window = b.Spec.PeriodSpec().Containing(now)
		in.Spend = readSpend(b, related, in.Window)
	}
	return in
}

func subjectOf(m api.ObjectMeta) evaluate.Subject {
	return evaluate.Subject{
		Named: api.Kind + " " + m.Name, Qualified: api.Kind + " " + m.Namespace + "/" + m.Name,
		Where: "namespace " + m.Namespace, Quota: quotaPrefix + m.Name, Policy: PolicyName,
	}
}

// readSpend reads the budget's spend ConfigMap, the one related object it names, or its TaskRecords, for the period w;
// a ConfigMap's stamp says when its figures are for.
func readSpend(b api.LLMCostBudget, related hookwire.ObjectMap, w period.Window) evaluate.Spend {
	if b.Spec.CostSource.Format == api.TaskRecords {
		return readRecords(b, related, w)
	}
	name, ns := b.Spec.CostSource.ConfigMapName, b.Metadata.Namespace
	raw, found := related[hookwire.ConfigMapGroup][hookwire.Key(ns, name)]
	if !found {
		msg := fmt.Sprintf("ConfigMap %q not found in namespace %q", name, ns)
		return evaluate.Spend{Reason: api.ReasonCostSourceMissing, Message: msg}
	}
	src := SourceOf(b.Spec.CostSource)
	cm, err := spend.DecodeConfigMap(raw)
	u := spend.Usage{}
	if err == nil {
		u, err = spend.Read(src, cm.Data, w)
	}
	if err != nil {
		return evaluate.Spend{Reason: spend.ReasonOf(err), Message: fmt.Sprintf("ConfigMap %q: %v", name, err)}
	}
	read := fmt.Sprintf("spend read from key %q of ConfigMap %q", src.Key, name)
	if src.Format == api.DailyLedger {
		days := len(w.Dates())
		unit := "days"
		if days == 1 {
			unit = "day"
		}
		read = fmt.Sprintf("spend summed over the period's %d %s of keys %q of ConfigMap %q",
			days, unit, src.KeyPrefix+"YYYY-MM-DD", name)
	}
	stamp := spend.StampOf(fmt.Sprintf("ConfigMap %s/%s", ns, name), cm.Metadata.Annotations)
	return evaluate.Spend{Usage: u, Message: read, Stamp: stamp}
}

// SourceOf is where in a spend ConfigMap's data the spec's spend is.
func SourceOf(c api.CostSource) spend.Source {
	return spend.Source{Format: c.Format, Key: c.Key, KeyPrefix: c.KeyPrefix}
}

// Render is an evaluation's answer: the status, its Events, and its quota in each namespace it closes.
func Render(owner children.Owner, r evaluate.Result) hookwire.CompositeResponse {
	kids := make([]any, 0, len(r.Announcements)+1)
	for _, e := range children.Events(owner, r.Announcements) {
		kids = append(kids, e)
	}
	if r.Quota != nil {
		for _, ns := range r.Quota.Namespaces {
			kids = append(kids, children.Quota(owner, r.Quota, ns))
		}
	}
	return hookwire.CompositeResponse{Status: r.Status, Children: kids}
}

// Reconcile answers a sync or finalize request for a budget of either kind through the finalizer: apply's answer
// while the budget lives; once it goes, no children (so Metacontroller deletes the quotas and our Events), and
// finalized once no ResourceQuota (in any namespace) is observed.
func Reconcile(p Parent, req hookwire.CompositeRequest,
	apply func() (hookwire.CompositeResponse, finalizer.Action)) hookwire.CompositeResponse {
	res := finalizer.Controller[hookwire.CompositeResponse]{
		Apply:   apply,
		Cleanup: func() hookwire.CompositeResponse { return cleanup(p.Status) },
		Remains: func() bool { return len(req.Children[hookwire.ResourceQuotaGroup]) > 0 },
		Retry:   cleanupRetry,
	}.Reconcile(finalizer.EventOf(req.Finalizing))
	res.Response.Tail = res.Tail()
	return res.Response
}

// cleanup desires no children and keeps the status as it was: it never decodes the spec, so a budget whose spec
// is broken, or that was never synced, can still be deleted.
func cleanup(status json.RawMessage) hookwire.CompositeResponse {
	var kept any
	var fields map[string]json.RawMessage // Metacontroller's status is an object
	if decode.Lenient(status, &fields, "status") == nil && fields != nil {
		kept = status
	}
	return hookwire.CompositeResponse{Status: kept, Children: []any{}}
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

// DecodeParent reads a request's parent; only a parent without a usable name is an error (hookwire.RequestError).
func DecodeParent(raw json.RawMessage) (Parent, error) {
	var p Parent
	if len(raw) == 0 || string(raw) == "null" {
		return p, hookwire.BadRequest("request has no parent")
	}
	if err := decode.Lenient(raw, &p, "parent"); err != nil {
		// The least of a parent that a response can be made for.
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
			return p, hookwire.BadRequest("%w", err)
		}
		m := id.Metadata
		md := api.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID}
		p = Parent{Metadata: md, Spec: id.Spec, Status: id.Status, metaErr: err}
	}
	if p.Metadata.Name == "" {
		return p, hookwire.BadRequest("parent.metadata.name is missing")
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
