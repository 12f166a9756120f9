package clusterbudget

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
)

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
	rs := make([]reading, len(p.Selected))
	for i, ns := range p.Selected {
		rs[i] = s.read(ns, src, w)
		p.Usage = p.Usage.Add(rs[i].usage) // an unreadable namespace adds nothing
	}
	p.Breakdown, p.Omitted = breakdown(rs, p.Usage)
	bad := slices.DeleteFunc(slices.Clone(rs), func(r reading) bool { return r.reason == "" })
	if i := slices.IndexFunc(bad, func(r reading) bool { return r.reason == api.ReasonPeriodMismatch }); i >= 0 {
		// A source of another period is not unreadable but wrong: skipping it
		// under Open would still announce a sum the data does not support.
		p.Reason, p.Message = bad[i].reason, bad[i].message
		return p
	}
	if len(bad) > 0 && (s.closed || len(bad) == len(rs)) {
		p.Reason = bad[0].reason
		p.Message = fmt.Sprintf("%s (%d of %d namespaces unreadable)", bad[0].message, len(bad), len(rs))
		return p
	}
	p.Description = s.describe(src, w, len(rs), bad)
	return p
}

// read sums the namespace's spend ConfigMaps, in name order so that the same
// data always reports the same fault.
func (s sources) read(ns string, src spend.Source, w period.Window) reading {
	cms := s.byNamespace[ns]
	if len(cms) == 0 {
		return reading{namespace: ns, reason: api.ReasonCostSourceMissing, message: fmt.Sprintf("namespace %s has no ConfigMap labelled %s=%s", ns, api.LabelSpendSource, s.label)}
	}
	slices.SortFunc(cms, func(a, b object) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	r := reading{namespace: ns}
	for _, cm := range cms {
		where := fmt.Sprintf("ConfigMap %s/%s", ns, cm.Metadata.Name)
		if src.Format != spend.DailyLedger {
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

// breakdown is status.namespaces: unreadable namespaces first (they need
// someone's attention), then by spend, largest first; at most
// api.MaxNamespaces, and how many it leaves out.
func breakdown(rs []reading, total spend.Usage) ([]api.NamespaceStatus, int32) {
	sorted := slices.Clone(rs)
	slices.SortStableFunc(sorted, func(a, b reading) int {
		if (a.reason == "") != (b.reason == "") {
			if a.reason != "" {
				return -1
			}
			return 1
		}
		return b.usage.CostUSD.Cmp(a.usage.CostUSD) // rs is in name order, kept for ties
	})
	n := min(len(sorted), api.MaxNamespaces)
	out := make([]api.NamespaceStatus, 0, n)
	for _, r := range sorted[:n] {
		st := api.NamespaceStatus{Namespace: r.namespace, Reading: api.ReadingOK}
		if r.reason != "" {
			st.Reading, st.Message = r.reason, r.message
		} else {
			share := r.usage.CostUSD.PercentOf(total.CostUSD)
			st.ObservedSpendUSD, st.SharePercent = r.usage.CostUSD.String(), &share
		}
		out = append(out, st)
	}
	return out, int32(len(sorted) - n)
}

// describe is the BudgetEvaluated message of a known sum.
func (s sources) describe(src spend.Source, w period.Window, namespaces int, skipped []reading) string {
	what := fmt.Sprintf("key %q", src.Key)
	if src.Format == spend.DailyLedger {
		what = fmt.Sprintf("the period's %d days of keys %q", len(w.Dates()), src.KeyPrefix+"YYYY-MM-DD")
	}
	msg := fmt.Sprintf("spend summed over %d namespaces from %s of the ConfigMaps labelled %s=%s", namespaces, what, api.LabelSpendSource, s.label)
	if len(skipped) > 0 {
		msg += fmt.Sprintf("; %d unreadable namespaces skipped (failurePolicy Open), the first: %s", len(skipped), skipped[0].message)
	}
	return msg
}
