// Package budget holds LLMCostBudget's hooks and the ones both budget kinds share (Kind): pure functions from
// Metacontroller requests and the clock to responses.
//
// A well-formed request about a bad budget is answered, not refused: a spec that cannot be decoded or validated
// yields state Unknown with reason InvalidSpec. Only a request without a usable parent is an error
// (a hookwire.RequestError), which the HTTP layer turns into 400.
package budget

import (
	"encoding/json"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/children"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/finalizer"
	"github.com/llmbudget/llmbudget/internal/hookwire"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// cleanupRetry is how soon Cleanup asks to be called again while the quota is still observed; Metacontroller
// usually calls sooner, on the quota's deletion.
const cleanupRetry = 5 * time.Second

// Summary is what a hook call did, for the one log line per call.
type Summary struct {
	Namespace, Name string
	State           api.State
	Reason          string
}

// parent is a budget of either kind as received, its spec and status kept raw so that a spec of the wrong shape is
// reported, and a foreign status ignored, rather than failing the request.
type parent struct {
	Metadata api.ObjectMeta  `json:"metadata"`
	Spec     json.RawMessage `json:"spec"`
	Status   json.RawMessage `json:"status"`
	// metaErr is why Metadata did not decode whole (a malformed creationTimestamp or generation): InvalidSpec.
	metaErr error
}

// decodeParent reads a request's parent; only a parent without a usable name is an error (hookwire.RequestError).
func decodeParent(raw json.RawMessage) (parent, error) {
	var p parent
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
		p = parent{Metadata: md, Spec: id.Spec, Status: id.Status, metaErr: err}
	}
	if p.Metadata.Name == "" {
		return p, hookwire.BadRequest("parent.metadata.name is missing")
	}
	return p, nil
}

// Budget decodes spec and status as a budget of kind; a spec decoding error is for the caller to report as
// InvalidSpec. The spec is decoded strictly: the API server prunes fields the CRD does not know, so an unknown or
// repeated field is one a person wrote (through eval) and must hear about.
func (p parent) Budget(kind string) (api.LLMCostBudget, error) {
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

// Kind is what a budget kind brings to the hooks both kinds share.
type Kind struct {
	Name    string // api.Kind or api.ClusterKind
	Owner   func(api.ObjectMeta) children.Owner
	Related func(b api.LLMCostBudget) []hookwire.RelatedResourceRule
	// Spend finds the spend among the related objects: the evaluation's input, except Budget, SpecErr and Now.
	Spend  func(b api.LLMCostBudget, related hookwire.ObjectMap) evaluate.Input
	Closes func(owner children.Owner, r evaluate.Result) []string // the namespaces that get r.Quota
}

// namespaced is LLMCostBudget: one spend ConfigMap, one quota, both in the budget's namespace.
var namespaced = Kind{
	Name:  api.Kind,
	Owner: children.BudgetOwner,
	Related: func(b api.LLMCostBudget) []hookwire.RelatedResourceRule {
		name := b.Spec.CostSource.ConfigMapName
		if name == "" {
			return nil // sync reports the broken spec
		}
		return []hookwire.RelatedResourceRule{{APIVersion: "v1", Resource: "configmaps", Namespace: b.Metadata.Namespace, Names: []string{name}}}
	},
	Spend: func(b api.LLMCostBudget, related hookwire.ObjectMap) (in evaluate.Input) {
		if raw, ok := related[hookwire.ConfigMapGroup][hookwire.Key(b.Metadata.Namespace, b.Spec.CostSource.ConfigMapName)]; ok {
			in.SpendData, in.SpendDataErr = spend.DecodeData(raw)
		}
		return in
	},
	Closes: func(owner children.Owner, _ evaluate.Result) []string { return []string{owner.Namespace} },
}

// Customize names the spend ConfigMap as related, so that Metacontroller watches it and passes it to sync.
func Customize(req hookwire.CustomizeRequest) (hookwire.CustomizeResponse, error) {
	return namespaced.Customize(req)
}

// Sync answers the sync and finalize hooks: Apply evaluates the budget, Cleanup lifts enforcement and lets the
// budget go once no quota remains.
func Sync(req hookwire.CompositeRequest, now time.Time) (hookwire.CompositeResponse, Summary, error) {
	return namespaced.Sync(req, now)
}

// Customize relates what k.Related names, or nothing while the spec does not decode.
func (k Kind) Customize(req hookwire.CustomizeRequest) (hookwire.CustomizeResponse, error) {
	p, err := decodeParent(req.Parent)
	if err != nil {
		return hookwire.CustomizeResponse{}, err
	}
	resp := hookwire.CustomizeResponse{RelatedResources: []hookwire.RelatedResourceRule{}}
	if b, err := p.Budget(k.Name); err == nil {
		resp.RelatedResources = append(resp.RelatedResources, k.Related(b)...)
	}
	return resp, nil
}

// Sync answers the sync and finalize hooks of a budget of kind k.
func (k Kind) Sync(req hookwire.CompositeRequest, now time.Time) (hookwire.CompositeResponse, Summary, error) {
	p, err := decodeParent(req.Parent)
	if err != nil {
		return hookwire.CompositeResponse{}, Summary{}, err
	}
	sum := Summary{Namespace: p.Metadata.Namespace, Name: p.Metadata.Name}
	res := finalizer.Reconcile(p, req.Finalizing, func(ev finalizer.Event[parent]) finalizer.Result[hookwire.CompositeResponse] {
		if ev.Action == finalizer.Cleanup {
			return cleanup(ev.Object.Status, req)
		}
		return k.apply(ev.Object, req.Related, now, &sum)
	})
	res.Response.Tail = res.Tail()
	return res.Response, sum, nil
}

func (k Kind) apply(p parent, related hookwire.ObjectMap, now time.Time, sum *Summary) finalizer.Result[hookwire.CompositeResponse] {
	b, specErr := p.Budget(k.Name)
	in := k.Spend(b, related)
	in.Budget, in.SpecErr, in.Now = b, specErr, now
	r := evaluate.Evaluate(in)
	sum.State = r.Status.State
	if c := meta.FindStatusCondition(r.Status.Conditions, api.ConditionBudgetEvaluated); c != nil {
		sum.Reason = c.Reason
	}
	owner := k.Owner(p.Metadata)
	kids := make([]any, 0, len(r.Announcements)+1)
	for _, e := range children.Events(owner, r.Announcements) {
		kids = append(kids, e)
	}
	if r.Quota != nil {
		for _, ns := range k.Closes(owner, r) {
			kids = append(kids, children.Quota(owner, r.Quota, ns))
		}
	}
	resp := hookwire.CompositeResponse{Status: r.Status, Children: kids}
	return finalizer.Result[hookwire.CompositeResponse]{Response: resp, Requeue: finalizer.RequeueAfter(r.ResyncAfter)}
}

// cleanup desires no children, so Metacontroller deletes the quotas (and our Events) first; the budget may go once
// no ResourceQuota (in any namespace) is observed. The status is kept as it was: cleanup never decodes the spec, so
// a budget whose spec is broken, or that was never synced, can still be deleted.
func cleanup(status json.RawMessage, req hookwire.CompositeRequest) finalizer.Result[hookwire.CompositeResponse] {
	done := len(req.Children[hookwire.ResourceQuotaGroup]) == 0
	var kept any
	var fields map[string]json.RawMessage // Metacontroller's status is an object
	if decode.Lenient(status, &fields, "status") == nil && fields != nil {
		kept = status
	}
	requeue := finalizer.AwaitChange()
	if !done {
		requeue = finalizer.RequeueAfter(cleanupRetry)
	}
	resp := hookwire.CompositeResponse{Status: kept, Children: []any{}}
	return finalizer.Result[hookwire.CompositeResponse]{Response: resp, Finalized: done, Requeue: requeue}
}
