// Package clusterbudget holds the ClusterLLMCostBudget CompositeController's
// hooks: the evaluation of package evaluate, the one LLMCostBudget uses, run
// over the spend summed from the spend ConfigMaps of the namespaces the
// budget selects, with its children rendered in each of those namespaces.
//
// Guarantees:
//   - The namespaces are those of the request's related Namespaces that match
//     the budget's current selector: a namespace that stops matching is
//     dropped by the first sync that sees it, and so is its quota.
//   - A Total source is summed only when it declares, in the annotation
//     llmbudget.dev/period-start, the budget's current period: any other
//     declaration makes the sum Unknown (never silently wrong) under either
//     failure policy.
//   - An unreadable namespace makes the sum Unknown under failurePolicy
//     Closed; under Open it is reported in status.namespaces and skipped.
//   - status.namespaces lists at most api.MaxNamespaces namespaces; the
//     totals cover all of them.
//
// As in package budget, a bad spec is answered with state Unknown (reason
// InvalidSpec); only a request without a usable parent is ErrBadRequest.
package clusterbudget

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/budget"
	"github.com/llmbudget/llmbudget/internal/children"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/finalizer"
	"github.com/llmbudget/llmbudget/internal/hookwire"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// Summary is what a hook call did, for the one log line per call.
type Summary struct {
	Name      string
	State     api.State
	Reason    string
	Finalized bool
}

// Customize relates the selected Namespaces (their labels decide membership)
// and, in them, the ConfigMaps labelled as the budget's spend source.
func Customize(req hookwire.CustomizeRequest) (hookwire.CustomizeResponse, error) {
	p, err := budget.DecodeParent(req.Parent)
	if err != nil {
		return hookwire.CustomizeResponse{}, err
	}
	resp := hookwire.CustomizeResponse{RelatedResources: []hookwire.RelatedResourceRule{}}
	b, err := p.Budget(api.ClusterKind)
	sel := b.Spec.NamespaceSelector
	if err != nil || sel == nil || b.Spec.CostSource.SpendSource == "" {
		return resp, nil // sync reports the broken spec
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return resp, nil
	}
	ns := &hookwire.LabelSelector{MatchLabels: sel.MatchLabels, MatchExpressions: sel.MatchExpressions}
	resp.RelatedResources = append(resp.RelatedResources,
		hookwire.RelatedResourceRule{APIVersion: "v1", Resource: "namespaces", LabelSelector: ns},
		hookwire.RelatedResourceRule{
			APIVersion: "v1", Resource: "configmaps", NamespaceSelector: ns,
			LabelSelector: &hookwire.LabelSelector{MatchLabels: map[string]string{api.LabelSpendSource: b.Spec.CostSource.SpendSource}},
		})
	return resp, nil
}

// Sync answers the sync and finalize hooks: Apply evaluates the summed spend
// and closes every selected namespace while blocking; Cleanup lifts the
// quotas in every namespace and lets the budget go once none is observed.
func Sync(req hookwire.CompositeRequest, now time.Time) (hookwire.CompositeResponse, Summary, error) {
	p, err := budget.DecodeParent(req.Parent)
	if err != nil {
		return hookwire.CompositeResponse{}, Summary{}, err
	}
	sum := Summary{Name: p.Metadata.Name}
	res := finalizer.Reconcile(p, req.Finalizing, func(ev finalizer.Event[budget.Parent]) finalizer.Result[hookwire.CompositeResponse] {
		if ev.Action == finalizer.Cleanup {
			// Desiring no children makes Metacontroller delete the quota of
			// every namespace (and the Events) before the budget goes.
			return budget.Cleanup(ev.Object.Status, req)
		}
		return apply(ev.Object, req, now, &sum)
	})
	res.Response.Tail = res.Tail()
	sum.Finalized = res.Finalized
	return res.Response, sum, nil
}

func apply(p budget.Parent, req hookwire.CompositeRequest, now time.Time, sum *Summary) finalizer.Result[hookwire.CompositeResponse] {
	b, specErr := p.Budget(api.ClusterKind)
	in := evaluate.Input{Budget: b, Now: now, Pool: poolReader(b.Spec, req.Related)}
	var r evaluate.Result
	if specErr != nil {
		r = evaluate.Invalid(in, specErr)
	} else {
		r = evaluate.Evaluate(in)
	}
	sum.State = r.Status.State
	if c := meta.FindStatusCondition(r.Status.Conditions, api.ConditionBudgetEvaluated); c != nil {
		sum.Reason = c.Reason
	}
	owner := children.ClusterOwner(p.Metadata)
	kids := make([]any, 0, len(r.Announcements))
	for _, e := range children.Events(owner, r.Announcements) {
		kids = append(kids, e)
	}
	if r.Quota != nil {
		for _, ns := range r.Status.Enforcement.Namespaces {
			kids = append(kids, children.QuotaIn(owner, r.Quota, ns))
		}
	}
	return finalizer.Result[hookwire.CompositeResponse]{
		Response: hookwire.CompositeResponse{Status: r.Status, Children: kids},
		Requeue:  finalizer.RequeueAfter(r.ResyncAfter),
	}
}

// object is the part of a related Namespace or ConfigMap the hooks read.
type object struct {
	Metadata struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
}

// poolReader finds the selected namespaces and their spend sources among
// the related objects; an invalid selector selects nothing (the evaluation
// reports it as InvalidSpec before reading).
func poolReader(spec api.Spec, related hookwire.ObjectMap) evaluate.PoolReader {
	src := sources{label: spec.CostSource.SpendSource, closed: spec.Enforcement.FailurePolicy == api.FailClosed, byNamespace: map[string][]object{}}
	sel, err := metav1.LabelSelectorAsSelector(spec.NamespaceSelector)
	if spec.NamespaceSelector == nil || err != nil {
		sel = labels.Nothing()
	}
	for _, raw := range related[hookwire.NamespaceGroup] {
		var ns object
		if decode.Lenient(raw, &ns, "namespace") == nil && ns.Metadata.Name != "" && sel.Matches(labels.Set(ns.Metadata.Labels)) {
			src.byNamespace[ns.Metadata.Name] = []object{}
		}
	}
	for _, raw := range related[hookwire.ConfigMapGroup] {
		var cm object
		if decode.Lenient(raw, &cm, "configmap") != nil || cm.Metadata.Labels[api.LabelSpendSource] != src.label {
			continue
		}
		if list, ok := src.byNamespace[cm.Metadata.Namespace]; ok {
			src.byNamespace[cm.Metadata.Namespace] = append(list, cm)
		}
	}
	return func(s spend.Source, w period.Window) evaluate.Pool { return src.pool(s, w) }
}
