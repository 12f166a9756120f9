// Package source reads every source of a budget's spend into one spend.Reading (Read): the spend ConfigMap a team
// budget names, the ConfigMaps of the namespaces a cluster budget selects, or Kelos TaskRecords. A ConfigMap value
// is a plain USD decimal ("12.34") or a JSON object of cost, token counts and models (see ParseValue), in one of
// two formats:
//
//   - Total: one key holds the current period's spend; the writer resets it when a period starts.
//   - DailyLedger: each key "<prefix>YYYY-MM-DD" holds one local day's spend; a period's is the sum of its days.
//
// It also reads the stamp a writer puts on the ConfigMap, the time its figures are for (StampOf), and Kelos
// TaskRecords (DecodeRecord), summing those completed in a period (SumRecords) as Kelos does.
//
// Guarantees:
//   - No amount passes through float64: a JSON number's text is parsed, so 12.345678901 is refused, not rounded.
//   - Reading is strict: negative, NaN, Inf, exponents, empty values, whitespace around a decimal, unknown or
//     repeated JSON fields and trailing data are errors that name the key and say what is wrong.
//   - Keys and models are read in sorted order, so the same data always reports the same fault.
//   - No related object is skipped silently: a Namespace, ConfigMap or TaskRecord that does not decode makes its
//     namespace unreadable, and the message names it; a ConfigMap that the request lists twice counts once.
//   - For a cluster budget, a Total source is summed only when its annotation llmbudget.dev/period-start declares
//     the budget's current period; any other makes the sum Unknown (never silently wrong) under either
//     failurePolicy. An unreadable namespace makes the sum Unknown under failurePolicy Closed; under Open it is
//     reported in the breakdown and skipped. The breakdown lists at most api.MaxNamespaces; the totals cover all.
//     The sum is as old as its oldest source (by annotation llmbudget.dev/spend-as-of).
package source

import (
	"fmt"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// Read reads a validated budget's spend in the period w from the related objects: a cluster budget's from its
// members (see Members), a team budget's from its spend ConfigMap or its TaskRecords.
func Read(b api.LLMCostBudget, related metacontroller.ObjectMap, w period.Window) spend.Reading {
	switch {
	case b.Kind == api.ClusterKind:
		return readMembers(b.Spec, related, w)
	case b.Spec.CostSource.Format == api.TaskRecords:
		return readRecords(b, related, w)
	}
	return readConfigMap(b, related, w)
}

// readConfigMap reads the budget's spend ConfigMap, the one related object it names, for the period w;
// a ConfigMap's stamp says when its figures are for.
func readConfigMap(b api.LLMCostBudget, related metacontroller.ObjectMap, w period.Window) spend.Reading {
	name, ns := b.Spec.CostSource.ConfigMapName, b.Metadata.Namespace
	raw, found := related[metacontroller.ConfigMapGroup][metacontroller.Key(ns, name)]
	if !found {
		msg := fmt.Sprintf("ConfigMap %q not found in namespace %q", name, ns)
		return spend.Reading{Reason: api.ReasonCostSourceMissing, Message: msg}
	}
	src := SourceOf(b.Spec.CostSource)
	cm, err := DecodeConfigMap(raw)
	u := spend.Usage{}
	if err == nil {
		u, err = Data(src, cm.Data, w)
	}
	if err != nil {
		return spend.Reading{Reason: ReasonOf(err), Message: fmt.Sprintf("ConfigMap %q: %v", name, err)}
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
	stamp := StampOf(fmt.Sprintf("ConfigMap %s/%s", ns, name), cm.Metadata.Annotations)
	return spend.Reading{Usage: u, Message: read, Stamp: stamp}
}

// SourceOf is where in a spend ConfigMap's data the spec's spend is.
func SourceOf(c api.CostSource) Source {
	return Source{Format: c.Format, Key: c.Key, KeyPrefix: c.KeyPrefix}
}
