package budget

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/hookwire"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// RecordsRule relates the TaskRecords sel matches: in namespace, or (namespace "") in the namespaces nsSel selects.
func RecordsRule(namespace string, nsSel, sel *metav1.LabelSelector) hookwire.RelatedResourceRule {
	return hookwire.RelatedResourceRule{
		APIVersion: hookwire.KelosAPIVersion, Resource: hookwire.TaskRecordsResource,
		Namespace: namespace, NamespaceSelector: nsSel, LabelSelector: sel,
	}
}

// Selector is a validated spec's label selector (of namespaces, or of records); an absent or invalid one (which
// validation reports) selects nothing.
func Selector(s *metav1.LabelSelector) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(s) // nil selects nothing
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// Usable reports whether a related-resource rule can carry s: it is given, and valid.
func Usable(s *metav1.LabelSelector) bool {
	_, err := metav1.LabelSelectorAsSelector(s)
	return s != nil && err == nil
}

// DecodeRecords reads the related TaskRecords in the namespaces member admits that sel matches, in key order.
// Metacontroller selected them already; they are matched again so that eval, which reads every record it is given,
// counts the same ones. A record that does not decode is the first error of its namespace (a record whose labels
// did not decode is taken as Metacontroller's match), never skipped: bad maps namespace to it.
func DecodeRecords(related hookwire.ObjectMap, member func(string) bool,
	sel labels.Selector) (rs []spend.Record, bad map[string]error) {
	bad = map[string]error{}
	objs := related[hookwire.TaskRecordGroup]
	for _, key := range slices.Sorted(maps.Keys(objs)) {
		r, err := spend.DecodeRecord(key, objs[key])
		ns := r.Namespace
		if r.Name == "" {
			ns, _, _ = strings.Cut(key, "/")
		}
		switch {
		case !member(ns), r.Name != "" && !sel.Matches(labels.Set(r.Labels)):
		case err != nil:
			if bad[ns] == nil {
				bad[ns] = err
			}
		default:
			rs = append(rs, r)
		}
	}
	return rs, bad
}

// RecordsRead words what a sum of records is: the period's records summed (where: " over 3 namespaces", or ""),
// and those that count nothing.
func RecordsRead(s spend.RecordSum, sel labels.Selector, where string) string {
	which := "every TaskRecord"
	if !sel.Empty() {
		which = "the TaskRecords labelled " + sel.String()
	}
	msg := fmt.Sprintf("spend summed%s from %d of %s, those completed in the period", where, s.Counted, which)
	if s.Outside > 0 {
		msg += fmt.Sprintf("; %d completed outside it", s.Outside)
	}
	var none []string
	if s.NoUsage > 0 {
		none = append(none, fmt.Sprintf("%d without spec.usage", s.NoUsage))
	}
	if s.Incomplete > 0 {
		none = append(none, fmt.Sprintf("%d without spec.completionTime", s.Incomplete))
	}
	if len(none) > 0 {
		msg += "; " + strings.Join(none, " and ") + " count nothing, as in Kelos"
	}
	return msg
}

// readRecords sums the budget's TaskRecords completed in w.
func readRecords(b api.LLMCostBudget, related hookwire.ObjectMap, w period.Window) evaluate.Spend {
	ns, sel := b.Metadata.Namespace, Selector(b.Spec.CostSource.Selector.Meta())
	rs, bad := DecodeRecords(related, func(n string) bool { return n == ns }, sel)
	if err := bad[ns]; err != nil {
		return evaluate.Spend{Reason: api.ReasonInvalidCostData, Message: err.Error()}
	}
	sum, err := spend.SumRecords(rs, w)
	if err != nil {
		return evaluate.Spend{Reason: api.ReasonInvalidCostData, Message: err.Error()}
	}
	return evaluate.Spend{Usage: sum.Usage, Message: RecordsRead(sum, sel, "")}
}
