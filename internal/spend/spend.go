// Package spend holds what a budget's spend is once read: the Usage (exact USD, tokens, per model), the Stamp that
// says when its figures are for, and the Reading that the evaluation takes, with why it could not be read and, for
// a cluster budget, the namespaces it covers. It parses nothing: package spend/source reads every source into a
// Reading.
//
// Guarantees: no amount passes through float64; token sums saturate at math.MaxInt64, never overflow.
package spend

import (
	"maps"
	"math"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
)

// Reading is a budget's spend in the current period as its sources were read: the usage, or why it is unknown.
type Reading struct {
	Usage Usage
	// Reason is empty when Usage was read; otherwise the BudgetEvaluated reason why it could not be.
	Reason string
	// Message says what was read, or what could not be, naming the ConfigMap and key.
	Message string
	// Skipped says what could not be read and was left out of Usage (a cluster budget's unreadable namespaces
	// under failurePolicy Open); empty when everything was read.
	Skipped string
	// Stamp is when the figures are for, as their source says (of a sum of sources, the oldest's): checked
	// against spec.costSource.maxAge when one applies.
	Stamp Stamp
	// Namespaces is, for a ClusterLLMCostBudget, the namespaces it covers; nil for an LLMCostBudget.
	Namespaces *Namespaces
	// Rate is how fast the spend grew just before its figures, as their writer said; nil when it said nothing.
	Rate *Rate
}

// Rate is how fast the spend grew in a window ending at its figures' latest sample, as their writer measured it.
type Rate struct {
	SampledAt  time.Time // the latest sample the figures count: a projection runs from here
	Window     time.Duration
	USDPerHour money.Amount
	Models     map[string]money.Amount // by model name: those the budget limits in USD
	// Unused is why the source's rate cannot be used, said of the source ("has annotation ... for other
	// figures"); the other fields are then zero.
	Unused string
}

// Namespaces is what was found in the namespaces a ClusterLLMCostBudget selects.
type Namespaces struct {
	Selected  []string              // sorted; each is closed while the budget blocks
	Breakdown []api.NamespaceStatus // status.namespaces
	Omitted   int32                 // how many namespaces Breakdown leaves out
}

// Usage is spend observed over some time: cost, LLM tokens and optionally the same per model.
type Usage struct {
	CostUSD      money.Amount
	InputTokens  int64
	OutputTokens int64
	Models       map[string]Usage // by model name; nil when the data has none, and in a model
}

// TotalTokens is InputTokens + OutputTokens, saturating at math.MaxInt64.
func (u Usage) TotalTokens() int64 { return addSaturating(u.InputTokens, u.OutputTokens) }

// Add returns the sum of u and v; token sums saturate rather than overflow.
func (u Usage) Add(v Usage) Usage {
	sum := Usage{
		CostUSD:      u.CostUSD.Add(v.CostUSD),
		InputTokens:  addSaturating(u.InputTokens, v.InputTokens),
		OutputTokens: addSaturating(u.OutputTokens, v.OutputTokens),
	}
	if len(u.Models)+len(v.Models) > 0 {
		sum.Models = make(map[string]Usage, len(u.Models)+len(v.Models))
		maps.Copy(sum.Models, u.Models)
		for name, m := range v.Models {
			sum.Models[name] = sum.Models[name].Add(m)
		}
	}
	return sum
}

// addSaturating adds token counts, which Read never lets be negative.
func addSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Stamp is what a spend source says of its figures' time, in its annotation api.AnnotationSpendAsOf.
type Stamp struct {
	Source string    // the source, as messages name it: "ConfigMap team-ml/llm-spend"
	AsOf   time.Time // the instant the figures are for; zero when Problem says why there is none
	// Problem is, when AsOf is zero, what is wrong with the stamp, said of Source: "has no ... annotation".
	Problem string
}

// Older is the older of two stamps, s on a tie: a stamp without AsOf is older than any (its figures' age is
// unknown), and the zero Stamp, of no source, is younger than any.
func (s Stamp) Older(t Stamp) Stamp {
	switch {
	case t.Source == "" || s.Source != "" && s.AsOf.IsZero():
		return s
	case s.Source == "" || t.AsOf.IsZero() || t.AsOf.Before(s.AsOf):
		return t
	}
	return s
}
