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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/budget"
	"github.com/llmbudget/llmbudget/internal/children"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/hookwire"
)

// Summary is what a hook call did, for the one log line per call.
type Summary = budget.Summary

// cluster is ClusterLLMCostBudget: the spend of every selected namespace
// summed, a quota in each of them.
var cluster = budget.Kind{
	Name:    api.ClusterKind,
	Owner:   children.ClusterOwner,
	Related: relate,
	Spend: func(b api.LLMCostBudget, related hookwire.ObjectMap) evaluate.Input {
		return evaluate.Input{Pool: poolReader(b.Spec, related)}
	},
	Quotas: func(owner children.Owner, r evaluate.Result) []any {
		kids := make([]any, 0, len(r.Status.Enforcement.Namespaces))
		for _, ns := range r.Status.Enforcement.Namespaces {
			kids = append(kids, children.QuotaIn(owner, r.Quota, ns))
		}
		return kids
	},
}

// Customize relates the selected Namespaces (their labels decide membership)
// and, in them, the ConfigMaps labelled as the budget's spend source.
func Customize(req hookwire.CustomizeRequest) (hookwire.CustomizeResponse, error) {
	return cluster.Customize(req)
}

// Sync answers the sync and finalize hooks: Apply evaluates the summed spend
// and closes every selected namespace while blocking; Cleanup lifts the
// quotas in every namespace and lets the budget go once none is observed.
func Sync(req hookwire.CompositeRequest, now time.Time) (hookwire.CompositeResponse, Summary, error) {
	return cluster.Sync(req, now)
}

func relate(b api.LLMCostBudget) []hookwire.RelatedResourceRule {
	sel := b.Spec.NamespaceSelector
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil || sel == nil || b.Spec.CostSource.SpendSource == "" {
		return nil // sync reports the broken spec
	}
	return []hookwire.RelatedResourceRule{
		{APIVersion: "v1", Resource: "namespaces", LabelSelector: sel},
		{
			APIVersion: "v1", Resource: "configmaps", NamespaceSelector: sel,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{api.LabelSpendSource: b.Spec.CostSource.SpendSource}},
		},
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
	sel, err := metav1.LabelSelectorAsSelector(spec.NamespaceSelector) // nil selects nothing
	if err != nil {
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
	return src.pool
}
