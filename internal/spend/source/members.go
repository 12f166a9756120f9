package source

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/text"
)

// ReadCluster reads a validated ClusterLLMCostBudget's spend in the period w from the related objects: the spend
// of each namespace it selects (see the package's guarantees), summed into one Reading.
func ReadCluster(b api.LLMCostBudget, related metacontroller.ObjectMap, w period.Window) spend.Reading {
	spec := b.Spec
	ms := members(spec, related)
	if spec.CostSource.Format == api.TaskRecords {
		ms = withRecords(ms, spec.CostSource, related)
	}
	return sumOf(readAll(ms, spec.CostSource, w), spec, w)
}

// member is a selected namespace and its spend sources: ConfigMaps, or TaskRecords.
type member struct {
	namespace string
	err       error // why its Namespace object, or one of its TaskRecords, does not decode
	sources   []configMapSource
	records   []Record
}

// withRecords gives each member its TaskRecords that the source's selector matches.
func withRecords(ms []member, cs api.CostSource, related metacontroller.ObjectMap) []member {
	index := make(map[string]int, len(ms))
	for i, m := range ms {
		index[m.namespace] = i
	}
	rs, bad := DecodeRecords(related, func(ns string) bool { _, ok := index[ns]; return ok },
		Selector(cs.Selector.Meta()))
	out := slices.Clone(ms)
	for _, r := range rs {
		m := &out[index[r.Namespace]]
		m.records = append(m.records, r)
	}
	for ns, err := range bad {
		if m := &out[index[ns]]; m.err == nil {
			m.err = err
		}
	}
	return out
}

// configMapSource is one spend ConfigMap, or why it does not decode.
type configMapSource struct {
	name string
	cm   ConfigMap
	err  error
}

// namespaceObject is the part of a related Namespace that decides membership: its name and labels. Not its
// annotations, which the namespace decorator and kubectl fill (some hundreds of bytes each, 10,000 times over).
type namespaceObject struct {
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
}

// decodeNamespace reads a related Namespace; an error names the first label whose value is not a string.
func decodeNamespace(raw []byte) (namespaceObject, error) {
	var ns namespaceObject
	err := decode.Unique(raw, &ns, "")
	if err == nil {
		return ns, nil
	}
	var loose looseObject
	if decode.Lenient(raw, &loose, "") == nil {
		for _, k := range slices.Sorted(maps.Keys(loose.Metadata.Labels)) {
			if v := loose.Metadata.Labels[k]; v[0] != '"' && string(v) != "null" {
				return ns, fmt.Errorf("label %s: the value is not a string", text.Quote(k))
			}
		}
	}
	return ns, err
}

// members finds the selected namespaces and their spend sources among the related objects, in name order; an
// invalid selector selects nothing (validation has reported it already).
func members(spec api.Spec, related metacontroller.ObjectMap) []member {
	sel := Selector(spec.NamespaceSelector.Meta())
	byName := map[string]*member{}
	for _, key := range slices.Sorted(maps.Keys(related[metacontroller.NamespaceGroup])) {
		// Metacontroller selected the Namespace by its labels: one whose labels do not decode is a member whose
		// spend cannot be read.
		switch ns, err := decodeNamespace(related[metacontroller.NamespaceGroup][key]); {
		case err != nil:
			byName[key] = &member{namespace: key, err: fmt.Errorf("namespace %s: %w", key, err)}
		case ns.Metadata.Name != "" && sel.Matches(labels.Set(ns.Metadata.Labels)):
			byName[ns.Metadata.Name] = &member{namespace: ns.Metadata.Name}
		}
	}
	seen := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(related[metacontroller.ConfigMapGroup])) {
		cm, err := DecodeConfigMap(related[metacontroller.ConfigMapGroup][key])
		ns, name, _ := strings.Cut(key, "/")
		if err == nil {
			if cm.Metadata.Labels[api.LabelSpendSource] != spec.CostSource.SpendSource {
				continue // not a source of this budget
			}
			ns, name = cm.Metadata.Namespace, cm.Metadata.Name
		}
		if m := byName[ns]; m != nil && !seen[ns+"/"+name] {
			seen[ns+"/"+name] = true
			m.sources = append(m.sources, configMapSource{name: name, cm: cm, err: err})
		}
	}
	out := make([]member, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		m := *byName[name]
		// In name order, so that the same data always reports the same fault.
		slices.SortFunc(m.sources, func(a, b configMapSource) int { return strings.Compare(a.name, b.name) })
		out = append(out, m)
	}
	return out
}

// memberReading is one namespace's spend, or why it could not be read.
type memberReading struct {
	namespace       string
	usage           spend.Usage
	reason, message string
	records         RecordSum     // what a TaskRecords source counted
	stamp           spend.Stamp   // the oldest of its ConfigMaps'
	sources         int           // how many ConfigMaps it read
	rates           []*spend.Rate // of its ConfigMaps that state one
}

func readAll(ms []member, cs api.CostSource, w period.Window) []memberReading {
	out := make([]memberReading, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.read(cs, w))
	}
	return out
}

// read sums the namespace's spend ConfigMaps.
func (m member) read(cs api.CostSource, w period.Window) memberReading {
	src := keysOf(cs)
	unread := func(reason, message string) memberReading {
		return memberReading{namespace: m.namespace, reason: reason, message: message}
	}
	switch {
	case m.err != nil:
		return unread(api.ReasonInvalidCostData, m.err.Error())
	case cs.Format == api.TaskRecords:
		// A namespace without records has spent nothing, as in Kelos.
		sum, err := SumRecords(m.records, w)
		if err != nil {
			return unread(api.ReasonInvalidCostData, err.Error())
		}
		return memberReading{namespace: m.namespace, usage: sum.Usage, records: sum}
	case len(m.sources) == 0:
		return unread(api.ReasonCostSourceMissing, fmt.Sprintf("namespace %s has no ConfigMap labelled %s=%s",
			m.namespace, api.LabelSpendSource, cs.SpendSource))
	}
	r := memberReading{namespace: m.namespace}
	for _, s := range m.sources {
		where := fmt.Sprintf("ConfigMap %s/%s", m.namespace, s.name)
		if s.err != nil {
			return unread(api.ReasonInvalidCostData, fmt.Sprintf("%s: %v", where, s.err))
		}
		if src.Format != api.DailyLedger {
			if err := declaresWindow(s.cm.Metadata.Annotations, w); err != nil {
				return unread(api.ReasonPeriodMismatch, where+": "+err.Error())
			}
		}
		u, err := Data(src, s.cm.Data, w)
		if err != nil {
			return unread(ReasonOf(err), fmt.Sprintf("%s: %v", where, err))
		}
		r.usage = r.usage.Add(u)
		stamp := StampOf(where, s.cm.Metadata.Annotations)
		r.stamp = r.stamp.Older(stamp)
		r.sources++
		if rate := RateOf(where, s.cm.Metadata.Annotations, stamp); rate != nil {
			r.rates = append(r.rates, rate)
		}
	}
	return r
}

// declaresWindow checks that a Total source says its key covers w.
func declaresWindow(annotations map[string]string, w period.Window) error {
	start := w.Start.Format(time.RFC3339)
	v, ok := annotations[api.AnnotationPeriodStart]
	if !ok {
		return fmt.Errorf("format Total needs the annotation %s, the start of the period its key covers "+
			"(the budget's period starts %s)", api.AnnotationPeriodStart, start)
	}
	// The value is the namespace's to write, up to 256 KiB: it is echoed shortened, or as the time it parsed to.
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return fmt.Errorf("annotation %s: %s is not an RFC 3339 time", api.AnnotationPeriodStart, text.Quote(v))
	}
	if !t.Equal(w.Start) {
		return fmt.Errorf("annotation %s says its key covers the period starting %s, but the budget's period "+
			"starts %s", api.AnnotationPeriodStart, t.Format(time.RFC3339Nano), start)
	}
	return nil
}

// sumOf sums the readable namespaces and decides whether the sum is known.
func sumOf(rs []memberReading, spec api.Spec, w period.Window) spend.Reading {
	ns := &spend.Namespaces{Selected: make([]string, 0, len(rs))}
	sp := spend.Reading{Namespaces: ns}
	var read, bad []memberReading
	for _, r := range rs {
		ns.Selected = append(ns.Selected, r.namespace)
		sp.Usage = sp.Usage.Add(r.usage) // an unreadable namespace adds nothing
		if r.reason != "" {
			bad = append(bad, r)
		} else {
			read = append(read, r)
		}
	}
	ns.Breakdown, ns.Omitted = breakdown(bad, read, sp.Usage)
	if i := slices.IndexFunc(bad, func(r memberReading) bool { return r.reason == api.ReasonPeriodMismatch }); i >= 0 {
		// A source of another period is not unreadable but wrong: skipping it under Open would still announce a sum
		// the data does not support.
		sp.Reason, sp.Message = bad[i].reason, bad[i].message
		return sp
	}
	if len(bad) > 0 && (spec.Enforcement.FailurePolicy == api.FailClosed || len(read) == 0) {
		sp.Reason = bad[0].reason
		sp.Message = fmt.Sprintf("%s (%d of %d namespaces unreadable)", bad[0].message, len(bad), len(rs))
		return sp
	}
	sp.Message = summedFrom(read, len(rs), spec.CostSource, w)
	sp.Stamp = oldest(read)
	var rates []*spend.Rate
	for _, r := range read {
		rates = append(rates, r.rates...)
	}
	sp.Rate = SumRates(rates)
	if len(bad) > 0 {
		sp.Skipped = fmt.Sprintf("%d unreadable namespaces, the first: %s", len(bad), bad[0].message)
		sp.Message += fmt.Sprintf("; %d unreadable namespaces skipped (failurePolicy Open), the first: %s",
			len(bad), bad[0].message)
	}
	return sp
}

// oldest is the stamp that ages a sum: the oldest of the sources read, named as such when there were others.
func oldest(read []memberReading) spend.Stamp {
	var st spend.Stamp
	n := 0
	for _, r := range read {
		st, n = st.Older(r.stamp), n+r.sources
	}
	if n > 1 {
		st.Source += fmt.Sprintf(" (the oldest of %d spend sources)", n)
	}
	return st
}

// summedFrom says what a sum over n namespaces read: which keys of which ConfigMaps, or which TaskRecords.
func summedFrom(read []memberReading, n int, src api.CostSource, w period.Window) string {
	switch src.Format {
	case api.TaskRecords:
		var total RecordSum
		for _, r := range read {
			total = addCounts(total, r.records)
		}
		return RecordsRead(total, Selector(src.Selector.Meta()), fmt.Sprintf(" over %d namespaces", n))
	case api.DailyLedger:
		return fmt.Sprintf("spend summed over %d namespaces from the period's %d days of keys %q of the ConfigMaps "+
			"labelled %s=%s", n, len(w.Dates()), src.KeyPrefix+"YYYY-MM-DD", api.LabelSpendSource, src.SpendSource)
	}
	return fmt.Sprintf("spend summed over %d namespaces from key %q of the ConfigMaps labelled %s=%s",
		n, src.Key, api.LabelSpendSource, src.SpendSource)
}

// addCounts adds up how many records each namespace counted and left out.
func addCounts(a, b RecordSum) RecordSum {
	return RecordSum{Counted: a.Counted + b.Counted, Outside: a.Outside + b.Outside,
		Incomplete: a.Incomplete + b.Incomplete, NoUsage: a.NoUsage + b.NoUsage}
}

// breakdown is status.namespaces: unreadable namespaces first (they need someone's attention), then by spend,
// largest first. It lists at most api.MaxNamespaces and returns how many it leaves out.
func breakdown(bad, read []memberReading, total spend.Usage) ([]api.NamespaceStatus, int32) {
	// A stable sort keeps ties in name order.
	slices.SortStableFunc(read, func(a, b memberReading) int { return b.usage.CostUSD.Cmp(a.usage.CostUSD) })
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
