// Package clusterbudget holds the ClusterLLMCostBudget CompositeController's hooks. They evaluate a budget as
// LLMCostBudget's do, but over the spend summed from the selected namespaces' ConfigMaps, and close each of those
// namespaces while the budget blocks.
//
// Guarantees, besides package budget's (a bad spec is answered with state Unknown, reason InvalidSpec; only a
// request without a usable parent is refused):
//   - The namespaces are the related Namespaces that match the current selector: one that stops matching is
//     dropped, with its quota, by the first sync that sees it.
//   - A Total source is summed only when its annotation llmbudget.dev/period-start declares the budget's current
//     period; any other makes the sum Unknown (never silently wrong) under either failurePolicy.
//   - An unreadable namespace makes the sum Unknown under failurePolicy Closed; under Open it is reported in
//     status.namespaces and skipped.
//   - status.namespaces lists at most api.MaxNamespaces; the totals cover all.
package clusterbudget

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/budget"
	"github.com/llmbudget/llmbudget/internal/children"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/hookwire"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// cluster is ClusterLLMCostBudget: the spend of every selected namespace summed, a quota in each of them.
var cluster = budget.Kind{
	Name:  api.ClusterKind,
	Owner: children.ClusterOwner,
	Related: func(b api.LLMCostBudget) []hookwire.RelatedResourceRule {
		sel := b.Spec.NamespaceSelector
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil || sel == nil || b.Spec.CostSource.SpendSource == "" {
			return nil // sync reports the broken spec
		}
		spendSource := &metav1.LabelSelector{MatchLabels: map[string]string{api.LabelSpendSource: b.Spec.CostSource.SpendSource}}
		return []hookwire.RelatedResourceRule{
			{APIVersion: "v1", Resource: "namespaces", LabelSelector: sel},
			{APIVersion: "v1", Resource: "configmaps", NamespaceSelector: sel, LabelSelector: spendSource},
		}
	},
	Spend: func(b api.LLMCostBudget, related hookwire.ObjectMap) evaluate.Input {
		return evaluate.Input{Pool: poolReader(b.Spec, related)}
	},
	Closes: func(_ children.Owner, r evaluate.Result) []string { return r.Status.Enforcement.Namespaces },
}

// Customize relates the selected Namespaces (their labels decide membership) and, in them, the ConfigMaps
// labelled as the budget's spend source.
func Customize(req hookwire.CustomizeRequest) (hookwire.CustomizeResponse, error) {
	return cluster.Customize(req)
}

// Sync answers the sync and finalize hooks: Apply evaluates the summed spend and closes every selected namespace
// while blocking; Cleanup lifts the quotas in every namespace and lets the budget go once none is observed.
func Sync(req hookwire.CompositeRequest, now time.Time) (hookwire.CompositeResponse, budget.Summary, error) {
	return cluster.Sync(req, now)
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

// poolReader finds the selected namespaces and their spend sources among the related objects; an invalid selector
// selects nothing (the evaluation reports it as InvalidSpec before reading).
func poolReader(spec api.Spec, related hookwire.ObjectMap) evaluate.PoolReader {
	closed := spec.Enforcement.FailurePolicy == api.FailClosed
	src := sources{label: spec.CostSource.SpendSource, closed: closed, byNamespace: map[string][]object{}}
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

// sources are the spend ConfigMaps of each selected namespace.
type sources struct {
	label       string
	closed      bool // failurePolicy Closed
	byNamespace map[string][]object
}

// reading is one namespace's spend, or why it could not be read.
type reading struct {
	namespace       string
	usage           spend.Usage
	reason, message string
}

// pool sums the readable namespaces and decides whether the sum is known.
func (s sources) pool(src spend.Source, w period.Window) evaluate.Pool {
	p := evaluate.Pool{Selected: slices.Sorted(maps.Keys(s.byNamespace))}
	var read, bad []reading
	for _, ns := range p.Selected {
		r := s.read(ns, src, w)
		p.Usage = p.Usage.Add(r.usage) // an unreadable namespace adds nothing
		if r.reason != "" {
			bad = append(bad, r)
		} else {
			read = append(read, r)
		}
	}
	p.Breakdown, p.Omitted = breakdown(bad, read, p.Usage)
	if i := slices.IndexFunc(bad, func(r reading) bool { return r.reason == api.ReasonPeriodMismatch }); i >= 0 {
		// A source of another period is not unreadable but wrong: skipping it under Open would still announce a sum
		// the data does not support.
		p.Reason, p.Message = bad[i].reason, bad[i].message
		return p
	}
	if len(bad) > 0 && (s.closed || len(read) == 0) {
		p.Reason, p.Message = bad[0].reason, fmt.Sprintf("%s (%d of %d namespaces unreadable)", bad[0].message, len(bad), len(p.Selected))
		return p
	}
	what := fmt.Sprintf("key %q", src.Key)
	if src.Format == api.DailyLedger {
		what = fmt.Sprintf("the period's %d days of keys %q", len(w.Dates()), src.KeyPrefix+"YYYY-MM-DD")
	}
	p.Message = fmt.Sprintf("spend summed over %d namespaces from %s of the ConfigMaps labelled %s=%s",
		len(p.Selected), what, api.LabelSpendSource, s.label)
	if len(bad) > 0 {
		p.Message += fmt.Sprintf("; %d unreadable namespaces skipped (failurePolicy Open), the first: %s", len(bad), bad[0].message)
	}
	return p
}

// read sums the namespace's spend ConfigMaps, in name order so that the same data always reports the same fault.
func (s sources) read(ns string, src spend.Source, w period.Window) reading {
	cms := s.byNamespace[ns]
	if len(cms) == 0 {
		msg := fmt.Sprintf("namespace %s has no ConfigMap labelled %s=%s", ns, api.LabelSpendSource, s.label)
		return reading{namespace: ns, reason: api.ReasonCostSourceMissing, message: msg}
	}
	slices.SortFunc(cms, func(a, b object) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	r := reading{namespace: ns}
	for _, cm := range cms {
		where := fmt.Sprintf("ConfigMap %s/%s", ns, cm.Metadata.Name)
		if src.Format != api.DailyLedger {
			if err := declaresWindow(cm.Metadata.Annotations, w); err != nil {
				return reading{namespace: ns, reason: api.ReasonPeriodMismatch, message: where + ": " + err.Error()}
			}
		}
		u, err := spend.Read(src, cm.Data, w)
		if err != nil {
			return reading{namespace: ns, reason: string(spend.ReasonOf(err)), message: fmt.Sprintf("%s: %v", where, err)}
		}
		r.usage = r.usage.Add(u)
	}
	return r
}

// declaresWindow checks that a Total source says its key covers w.
func declaresWindow(annotations map[string]string, w period.Window) error {
	start := w.Start.Format(time.RFC3339)
	v, ok := annotations[api.AnnotationPeriodStart]
	if !ok {
		return fmt.Errorf("format Total needs the annotation %s, the start of the period its key covers (the budget's period starts %s)", api.AnnotationPeriodStart, start)
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return fmt.Errorf("annotation %s: %q is not an RFC 3339 time", api.AnnotationPeriodStart, v)
	}
	if !t.Equal(w.Start) {
		return fmt.Errorf("annotation %s says its key covers the period starting %s, but the budget's period starts %s", api.AnnotationPeriodStart, v, start)
	}
	return nil
}

// breakdown is status.namespaces: unreadable namespaces first (they need someone's attention), then by spend,
// largest first. It lists at most api.MaxNamespaces and returns how many it leaves out.
func breakdown(bad, read []reading, total spend.Usage) ([]api.NamespaceStatus, int32) {
	// A stable sort keeps ties in name order.
	slices.SortStableFunc(read, func(a, b reading) int { return b.usage.CostUSD.Cmp(a.usage.CostUSD) })
	listed := append(slices.Clone(bad), read...)
	n := min(len(listed), api.MaxNamespaces)
	out := make([]api.NamespaceStatus, 0, n)
	for _, r := range listed[:n] {
		st := api.NamespaceStatus{Namespace: r.namespace, Reading: api.ReadingOK}
		if r.reason != "" {
			st.Reading, st.Message = r.reason, r.message
		} else {
			st.ObservedSpendUSD, st.SharePercent = r.usage.CostUSD.String(), new(r.usage.CostUSD.PercentOf(total.CostUSD))
		}
		out = append(out, st)
	}
	return out, int32(len(listed) - n)
}
