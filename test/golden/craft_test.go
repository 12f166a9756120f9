package golden_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The request fixtures are crafted from Metacontroller's own requests, captured in test/metacontroller/wire:
// each starts from a capture and changes only what its case is about, so that every fixture keeps the exact
// shape Metacontroller sends. To add a fixture, add a case to crafts and run go test ./test/golden -update,
// which writes the requests (and .now files) before it writes the golden responses.

const wire = "../metacontroller/wire"

// object is a decoded JSON object; numbers stay json.Number, as written.
type object = map[string]any

// craft is one request fixture: test/fixtures/<name>.request.json, made from capture by change. A verbatim
// fixture is the capture byte for byte; now, when set, is the instant its .now file evaluates it at.
type craft struct {
	name     string
	capture  string
	verbatim bool
	change   func(req object)
	// written rewrites the encoded request, for what an object cannot hold: a member written twice.
	written func([]byte) []byte
	now     string
}

// clusterNow is a minute after the cluster captures were taken.
const clusterNow = "2026-12-01T08:46:00Z"

var crafts = slices.Concat(budgetCrafts, modelCrafts, workloadCrafts, clusterCrafts, recordCrafts,
	namespaceCrafts, staleCrafts, gateCrafts, projectionCrafts)

// gateCrafts are the gate decorator's: the label by which the admission policies' bindings select the budgets that
// block.
var gateCrafts = []craft{
	{name: "gate/customize/capture-budget", capture: "gate-customize", verbatim: true},
	{name: "gate/sync/capture-not-blocking", capture: "gate-sync-not-blocking", verbatim: true},
	{name: "gate/sync/capture-blocking-labels-it", capture: "gate-sync-blocking", verbatim: true},
	{name: "gate/sync/capture-blocking-already-labelled", capture: "gate-sync-blocking-labelled", verbatim: true},
	{name: "gate/sync/lifted-removes-the-label", capture: "gate-sync-blocking-labelled", change: func(r object) {
		at(r, "object", "status", "enforcement")["blocking"] = false
	}},
}

// namespaceCrafts are the namespace decorator's: its label follows the budgets that block the namespace.
var namespaceCrafts = []craft{
	{name: "namespace/customize/capture-new-namespace", capture: "namespace-customize", verbatim: true},
	{name: "namespace/sync/capture-no-budgets", capture: "namespace-sync-no-budgets", verbatim: true},
	{name: "namespace/sync/capture-budget-blocks", capture: "namespace-sync-budget-blocks", verbatim: true},
	{name: "namespace/sync/capture-cluster-budget-blocks", capture: "namespace-sync-cluster-budget-blocks",
		verbatim: true},
	{name: "namespace/sync/capture-cluster-budget-blocks-elsewhere",
		capture: "namespace-sync-cluster-budget-blocks-elsewhere", verbatim: true},
	{name: "namespace/sync/capture-last-block-gone", capture: "namespace-sync-last-block-gone", verbatim: true},
	// A warn-mode budget refuses nothing: it never labels the namespace, and removes a label left from Deny.
	{name: "namespace/sync/warn-mode-budget-does-not-label", capture: "namespace-sync-budget-blocks",
		change: func(r object) {
			at(r, "object", "metadata", "labels")["llmbudget.dev/blocked"] = "true"
			at(r, "related", "LLMCostBudget.llmbudget.dev/v1alpha1", "team-support/chatbot", "status",
				"enforcement")["mode"] = "Warn"
		}},
}

var budgetCrafts = []craft{
	{name: "budget/customize/capture-first-customize", capture: "budget-customize", verbatim: true},
	{name: "budget/customize/spec-without-cost-source", capture: "budget-customize",
		change: spec(object{"costSource": nil})},
	{name: "budget/sync/capture-first-sync-under-budget", capture: "budget-sync-first", verbatim: true},
	{name: "budget/sync/capture-over-budget-with-children", capture: "budget-sync-over-budget-with-children",
		verbatim: true},
	{name: "budget/sync/capture-configmap-deleted-open", capture: "budget-sync-configmap-deleted", verbatim: true},
	{name: "budget/finalize/capture-finalize-quota-gone", capture: "budget-finalize", verbatim: true},
	{name: "budget/finalize/finalize-quota-still-observed", capture: "budget-finalize", change: func(r object) {
		over := capture("budget-sync-over-budget-with-children")
		at(r, "children")["ResourceQuota.v1"] = at(over, "children", "ResourceQuota.v1")
	}},
	{name: "budget/finalize/finalize-with-invalid-spec", capture: "budget-finalize", change: func(r object) {
		at(r, "parent")["spec"] = object{"limitUSD": "zero"}
	}},
	{name: "budget/sync/under-to-over-budget-policy-refuses", capture: "budget-sync-first",
		change: spend(object{"total-usd": "612.00"})},
	{name: "budget/sync/under-to-over-budget-quota-appears", capture: "budget-sync-first",
		change: all(spend(object{"total-usd": "612.00"}), enforcement(object{"gate": "Quota"}))},
	{name: "budget/sync/over-budget-both-gates", capture: "budget-sync-first",
		change: all(spend(object{"total-usd": "612.00"}), enforcement(object{"gate": "Both"}))},
	{name: "budget/sync/over-budget-labelled-scope", capture: "budget-sync-first",
		change: all(spend(object{"total-usd": "612.00"}), enforcement(object{"scope": "Labelled"}))},
	{name: "budget/sync/invalid-spec-labelled-scope-through-quota", capture: "budget-sync-first",
		change: all(spend(object{"total-usd": "612.00"}), enforcement(object{"gate": "Quota", "scope": "Labelled"}))},
	// The hook or Metacontroller was down for two hours, during which the spend (unstamped) crossed the limit: the
	// inputs date the crossing at the last evaluation, before its Event's window, and the first sync to find it
	// announces it all the same. The next syncs keep its Events for 55 minutes from their creation, then let them go.
	{name: "budget/sync/crossing-found-after-an-outage-is-announced", capture: "budget-sync-first",
		now: "2026-11-29T09:30:00Z", change: all(statusAfter("budget/sync/capture-first-sync-under-budget"),
			spend(object{"total-usd": "612.00"}))},
	{name: "budget/sync/late-events-kept-from-their-creation", capture: "budget-sync-first",
		now: "2026-11-29T10:24:00Z", change: all(spend(object{"total-usd": "612.00"}),
			statusAfter("budget/sync/crossing-found-after-an-outage-is-announced"),
			eventsAfter("budget/sync/crossing-found-after-an-outage-is-announced", "2026-11-29T09:30:02Z"))},
	{name: "budget/sync/late-events-go-55-minutes-after-their-creation", capture: "budget-sync-first",
		now: "2026-11-29T10:25:02Z", change: all(spend(object{"total-usd": "612.00"}),
			statusAfter("budget/sync/crossing-found-after-an-outage-is-announced"),
			eventsAfter("budget/sync/crossing-found-after-an-outage-is-announced", "2026-11-29T09:30:02Z"))},
	{name: "budget/sync/warning-threshold-crossed", capture: "budget-sync-first",
		change: spend(object{"total-usd": "410.00"})},
	{name: "budget/sync/configmap-deleted-closed-blocks", capture: "budget-sync-configmap-deleted",
		change: enforcement(object{"failurePolicy": "Closed", "gate": "Quota"})},
	{name: "budget/sync/cost-key-missing", capture: "budget-sync-first", change: spend(object{"spend": "1"})},
	// A block rests on the spend it read this period: a source that goes, or turns unreadable, does not lift it.
	{name: "budget/sync/blocking-then-the-configmap-goes", capture: "budget-sync-over-budget-with-children",
		now: "2026-11-29T07:40:00Z", change: all(statusAfter("budget/sync/capture-over-budget-with-children"),
			func(r object) { at(r, "related")["ConfigMap.v1"] = object{} })},
	{name: "budget/sync/blocking-then-the-key-is-garbage", capture: "budget-sync-over-budget-with-children",
		now: "2026-11-29T07:40:00Z", change: all(statusAfter("budget/sync/capture-over-budget-with-children"),
			spend(object{"total-usd": "garbage"}))},
	// A ConfigMap without the spend-source label was made by someone other than a spend writer (a team squatting
	// its future spend source, say): it is untrusted and not read, whatever it holds.
	{name: "budget/sync/configmap-unlabelled-is-untrusted-open", capture: "budget-sync-first",
		change: unlabelled},
	{name: "budget/sync/configmap-unlabelled-closed-blocks", capture: "budget-sync-first",
		change: all(unlabelled, spend(object{"total-usd": "0"}),
			enforcement(object{"failurePolicy": "Closed", "gate": "Quota"}))},
	{name: "budget/sync/blocking-then-the-label-goes", capture: "budget-sync-over-budget-with-children",
		now: "2026-11-29T07:40:00Z", change: all(statusAfter("budget/sync/capture-over-budget-with-children"),
			unlabelled)},
	// failurePolicy Open keeps its meaning for a source that blocked nothing.
	{name: "budget/sync/not-blocking-source-unreadable-open", capture: "budget-sync-first",
		now: "2026-11-29T07:40:00Z", change: all(statusAfter("budget/sync/capture-first-sync-under-budget"),
			func(r object) { at(r, "related")["ConfigMap.v1"] = object{} })},
	// Warn mode: the policy warns with the refusal's sentence, and no quota is kept whatever the gate.
	{name: "budget/sync/over-budget-warn-mode-would-refuse", capture: "budget-sync-first",
		change: all(spend(object{"total-usd": "612.00"}), enforcement(object{"gate": "Both", "mode": "Warn"}))},
	{name: "budget/sync/over-budget-warn-mode-drops-the-quota", capture: "budget-sync-over-budget-with-children",
		change: enforcement(object{"mode": "Warn"})},
	{name: "budget/sync/warn-mode-under-again-no-longer-warns", capture: "budget-sync-first",
		now: "2026-11-29T07:40:00Z", change: all(statusAfter("budget/sync/over-budget-warn-mode-would-refuse"),
			spend(object{"total-usd": "120.00"}), enforcement(object{"gate": "Both", "mode": "Warn"}))},
	// Related objects the API server would never send: each is named, never read as no spend.
	{name: "budget/sync/cost-value-not-a-string", capture: "budget-sync-first",
		change: spend(object{"total-usd": json.Number("120.5")})},
	{name: "budget/sync/cost-key-written-twice", capture: "budget-sync-first",
		change: spend(object{"total-usd": "620.50"}), written: twice(`"total-usd": "0.00"`, `"total-usd": "620.50"`)},
	{name: "budget/sync/configmap-label-not-a-string", capture: "budget-sync-first", change: func(r object) {
		md := at(r, "related", "ConfigMap.v1", "team-ml/llm-spend", "metadata")
		md["labels"] = object{"cost-center": json.Number("4711")}
	}},
	{name: "budget/sync/invalid-cost-data-comma", capture: "budget-sync-first",
		change: spend(object{"total-usd": "12,50"})},
	{name: "budget/sync/invalid-cost-data-exponent", capture: "budget-sync-first",
		change: spend(object{"total-usd": "1e3"})},
	{name: "budget/sync/invalid-spec-zero-limit", capture: "budget-sync-first", change: spec(object{"limitUSD": "0"})},
	{name: "budget/sync/invalid-spec-start-day-not-a-number", capture: "budget-sync-first",
		change: spec(object{"period": object{"type": "Monthly", "startDay": "first"}})},
	{name: "budget/sync/invalid-spec-unknown-time-zone", capture: "budget-sync-first",
		change: spec(object{"period": object{"type": "Monthly", "timeZone": "Mars/Olympus"}})},
	{name: "budget/sync/invalid-spec-block-without-resources", capture: "budget-sync-first",
		change: spec(object{"enforcement": object{"action": "BlockNewWorkloads"}})},
	// 07:30 UTC is 02:30 in New York: still 2026-11-29 there.
	{name: "budget/sync/daily-ledger-new-york-with-tokens", capture: "budget-sync-first", now: "2026-11-29T07:30:00Z",
		change: all(newYorkLedger, spend(object{
			"spend-2026-11-28": `{"costUSD": "30.10", "inputTokens": 2500000, "outputTokens": 500000}`,
			"spend-2026-11-29": `{"costUSD": "12.40", "inputTokens": 900000, "outputTokens": 120000}`,
			"other-key":        "ignored",
		}))},
	{name: "budget/sync/output-tokens-past-limit", capture: "budget-sync-first", now: "2026-11-29T07:30:00Z",
		change: all(newYorkLedger, spend(object{
			"spend-2026-11-29": `{"costUSD": "3", "inputTokens": 1700000, "outputTokens": 410000}`,
		}))},
	{name: "budget/sync/ledger-key-with-bad-date", capture: "budget-sync-first", now: "2026-11-29T07:30:00Z",
		change: all(newYorkLedger, spend(object{"spend-2026-11-29": "1", "spend-2026-13-01": "2"}))},
	// The fall-back day in New York is 25 hours long.
	{name: "budget/sync/dst-fall-back-day-new-york", capture: "budget-sync-first", now: "2026-11-01T12:00:00Z",
		change: all(newYorkLedger, spend(object{"spend-2026-11-01": "5"}))},
	// 15 of 30 days of November gone in Berlin: 300 spent forecasts 600.
	{name: "budget/sync/forecast-over-budget", capture: "budget-sync-first", now: "2026-11-15T23:00:00Z",
		change: all(spend(object{"total-usd": "300"}), spec(object{"thresholds": []any{
			object{"percent": 90, "basis": "Actual"}, object{"percent": 100, "basis": "Forecasted"},
		}}))},
	{name: "budget/sync/weekly-from-sunday-auckland", capture: "budget-sync-first",
		change: spec(object{"period": object{"type": "Weekly", "startDay": 7, "timeZone": "Pacific/Auckland"}})},
	{name: "budget/sync/suspended-over-budget", capture: "budget-sync-over-budget-with-children",
		change: spec(object{"suspend": true})},
	// The budget was over in October and blocked; November has begun.
	{name: "budget/sync/rollover-lifts-the-block", capture: "budget-sync-over-budget-with-children",
		now: "2026-11-01T00:20:00+01:00",
		change: all(enforcement(object{"gate": "Quota"}), spend(object{"total-usd": "3.20"}),
			func(r object) {
				at(r, "parent", "metadata")["creationTimestamp"] = "2026-09-15T10:00:00Z"
				at(r, "parent")["status"] = object{
					"observedGeneration": 1,
					"state":              "OverBudget",
					"limitUSD":           "500.00",
					"observedSpendUSD":   "612.00",
					"percentUsed":        122,
					"period":             object{"start": "2026-10-01T00:00:00+02:00", "end": "2026-11-01T00:00:00+01:00"},
					"thresholds": []any{
						object{"percent": 80, "basis": "Actual", "crossedAt": "2026-10-20T09:00:00Z"},
						object{"percent": 100, "basis": "Actual", "crossedAt": "2026-10-28T09:00:00Z"},
					},
					"enforcement": object{"blocking": true, "quotaName": "llmbudget-chatbot"},
					"conditions": []any{object{
						"type": "Blocking", "status": "True", "reason": "BlockingNewWorkloads", "message": "blocking",
						"lastTransitionTime": "2026-10-28T09:00:00Z", "observedGeneration": 1,
					}},
				}
			})},
	// Crossed two hours ago: recorded, no longer announced.
	{name: "budget/sync/warning-already-announced", capture: "budget-sync-first",
		change: all(spend(object{"total-usd": "450"}), func(r object) {
			at(r, "parent")["status"] = object{
				"period":     object{"start": "2026-11-01T00:00:00+01:00", "end": "2026-12-01T00:00:00+01:00"},
				"thresholds": []any{object{"percent": 80, "basis": "Actual", "crossedAt": "2026-11-29T05:30:00Z"}},
			}
		})},
}

// staleCrafts age the spend against costSource.maxAge by the ConfigMap's llmbudget.dev/spend-as-of stamp, at the
// capture's 07:30 (the cluster's at 08:46): fresh, then stale under each failurePolicy.
var staleCrafts = []craft{
	{name: "budget/sync/spend-fresh-within-max-age", capture: "budget-sync-first",
		change: all(costSource(object{"maxAge": "15m"}), stamped("2026-11-29T07:25:00Z"))},
	// The resync the fresh case asked for, at 07:40, with nothing changed: the spend has turned stale.
	{name: "budget/sync/spend-turns-stale-at-the-resync-it-asked-for", capture: "budget-sync-first",
		now: "2026-11-29T07:40:00Z", change: all(costSource(object{"maxAge": "15m"}), stamped("2026-11-29T07:25:00Z"),
			statusAfter("budget/sync/spend-fresh-within-max-age"))},
	{name: "budget/sync/spend-stale-open-evaluated-on-last-figures", capture: "budget-sync-first",
		change: all(costSource(object{"maxAge": "15m"}), stamped("2026-11-29T07:00:00Z"))},
	{name: "budget/sync/spend-stale-closed-is-unknown-and-blocks", capture: "budget-sync-first",
		change: all(costSource(object{"maxAge": "15m"}), stamped("2026-11-29T07:00:00Z"),
			enforcement(object{"failurePolicy": "Closed", "gate": "Quota"}))},
	// A Prometheus source is aged by default (15m), and a ConfigMap its writer never stamped is stale.
	{name: "budget/sync/prometheus-source-unstamped-is-stale", capture: "budget-sync-first",
		change: costSource(object{"prometheus": object{"source": "litellm", "selector": object{"team": "ml"}}})},
	{name: "clusterbudget/sync/spend-stale-member-closed-is-unknown", capture: "clusterbudget-sync-first",
		now: clusterNow, change: all(costSource(object{"maxAge": "30m"}),
			clusterStamp("ml-research", "2026-12-01T08:40:00Z"), clusterStamp("ml-serving", "2026-12-01T08:10:00Z"))},
}

// projectionCrafts project 490 of 500 USD, sampled at 07:29:45, at 600 USD/h: the limit is reached at 07:30:45.
// The capture's 07:30 asks for a resync then; at 07:30:45 the budget blocks on the projection, and a second later
// (the same stale status, the same inputs) it desires the same children.
var projectionCrafts = []craft{
	{name: "budget/sync/projected-crossing-ahead-asks-for-a-resync-at-it", capture: "budget-sync-first",
		change: burning(`{"asOf":"2026-11-29T07:29:50Z","sampledAt":"2026-11-29T07:29:45Z","window":"1m0s",` +
			`"usdPerHour":"600"}`)},
	{name: "budget/sync/projected-crossing-blocks", capture: "budget-sync-first", now: "2026-11-29T07:30:45Z",
		change: all(burning(`{"asOf":"2026-11-29T07:29:50Z","sampledAt":"2026-11-29T07:29:45Z","window":"1m0s",`+
			`"usdPerHour":"600"}`), statusAfter("budget/sync/projected-crossing-ahead-asks-for-a-resync-at-it"))},
	{name: "budget/sync/projected-crossing-blocks-the-same-a-second-later", capture: "budget-sync-first",
		now: "2026-11-29T07:30:46Z",
		change: all(burning(`{"asOf":"2026-11-29T07:29:50Z","sampledAt":"2026-11-29T07:29:45Z","window":"1m0s",`+
			`"usdPerHour":"600"}`), statusAfter("budget/sync/projected-crossing-ahead-asks-for-a-resync-at-it"))},
	{name: "budget/sync/projected-crossing-measured-only-does-not-block", capture: "budget-sync-first",
		now: "2026-11-29T07:30:45Z",
		change: all(burning(`{"asOf":"2026-11-29T07:29:50Z","sampledAt":"2026-11-29T07:29:45Z","window":"1m0s",`+
			`"usdPerHour":"600"}`), enforcement(object{"blockOn": "Measured"}))},
	// No later figures came: 5 minutes past its sample the projection lapses, and the block is lifted then.
	{name: "budget/sync/projected-block-lapses-at-its-bound", capture: "budget-sync-first",
		now: "2026-11-29T07:34:50Z",
		change: all(burning(`{"asOf":"2026-11-29T07:29:50Z","sampledAt":"2026-11-29T07:29:45Z","window":"1m0s",`+
			`"usdPerHour":"600"}`), statusAfter("budget/sync/projected-crossing-blocks"))},
	{name: "budget/sync/burn-rate-of-other-figures-is-unused", capture: "budget-sync-first",
		change: burning(`{"asOf":"2026-11-29T07:29:35Z","sampledAt":"2026-11-29T07:29:30Z","window":"1m0s",` +
			`"usdPerHour":"600"}`)},
}

// burning says the team's spend ConfigMap holds 490 USD as of 07:29:50, with the burn rate rate.
func burning(rate string) func(object) {
	return all(spend(object{"total-usd": "490.00"}), func(r object) {
		merge(at(r, "related", "ConfigMap.v1", "team-ml/llm-spend", "metadata", "annotations"),
			object{"llmbudget.dev/spend-as-of": "2026-11-29T07:29:50Z", "llmbudget.dev/burn-rate": rate}, false)
	})
}

// costSource sets fields of the parent's spec.costSource.
func costSource(fields object) func(object) {
	return func(r object) { merge(at(r, "parent", "spec", "costSource"), fields, true) }
}

// stamped says the team's spend ConfigMap holds the spend as of asOf.
func stamped(asOf string) func(object) {
	return func(r object) {
		merge(at(r, "related", "ConfigMap.v1", "team-ml/llm-spend", "metadata", "annotations"),
			object{"llmbudget.dev/spend-as-of": asOf}, false)
	}
}

// clusterStamp says a namespace's spend ConfigMap holds the spend as of asOf.
func clusterStamp(namespace, asOf string) func(object) {
	return func(r object) {
		merge(at(r, "related", "ConfigMap.v1", namespace+"/llm-spend", "metadata", "annotations"),
			object{"llmbudget.dev/spend-as-of": asOf}, false)
	}
}

// newYorkLedger turns the first capture's budget into a daily one in New York with token limits, read from a
// DailyLedger.
var newYorkLedger = spec(object{
	"limitUSD":    "25",
	"period":      object{"type": "Daily", "timeZone": "America/New_York"},
	"tokenLimits": object{"total": 2000000, "output": 400000},
	"costSource":  object{"configMapName": "llm-spend", "format": "DailyLedger", "keyPrefix": "spend-"},
	"enforcement": nil,
})

const modelBreakdown = `{"costUSD": "150.00", "inputTokens": 12000, "outputTokens": 2000, "models": {` +
	`"gpt-4o": {"costUSD": "120.00", "inputTokens": 9000, "outputTokens": 1000}, ` +
	`"claude-3-5-haiku": {"costUSD": "30.00", "inputTokens": 3000, "outputTokens": 1000}}}`

var modelCrafts = []craft{
	{name: "budget/sync/model-over-while-total-under", capture: "budget-sync-first", change: all(
		spec(object{"modelLimits": []any{
			object{"model": "gpt-4o", "limitUSD": "100"},
			object{"model": "claude-3-5-haiku", "limitUSD": "50", "tokenLimits": object{"output": 5000}},
		}}),
		spend(object{"total-usd": modelBreakdown}))},
	{name: "budget/sync/model-absent-from-data", capture: "budget-sync-first", change: all(
		spec(object{"modelLimits": []any{object{"model": "o1-preview", "limitUSD": "10"}}}),
		spend(object{"total-usd": modelBreakdown}))},
	{name: "budget/sync/model-name-not-a-valid-key-in-data", capture: "budget-sync-first", change: all(
		spec(object{"modelLimits": []any{object{"model": "gpt-4o", "limitUSD": "100"}}}),
		spend(object{"total-usd": `{"costUSD": "1", "models": {"gpt 4o": {"costUSD": "1"}}}`}))},
	{name: "budget/sync/model-name-not-a-valid-key-in-spec", capture: "budget-sync-first", change: all(
		spec(object{"modelLimits": []any{object{"model": "gpt 4o", "limitUSD": "100"}}}),
		spend(object{"total-usd": "1"}))},
}

var workloadCrafts = []craft{
	{name: "workload/customize/capture-labelled", capture: "workload-customize", verbatim: true},
	{name: "workload/customize/capture-label-removed", capture: "workload-customize-label-removed", verbatim: true},
	{name: "workload/sync/capture-budget-over-with-foreign-status", capture: "workload-sync", verbatim: true},
	// The unlabelled decorator's sync of a Deployment whose budget label was removed: every decoration null.
	{name: "workload/sync/capture-label-removed-decorations-left", capture: "workload-sync-label-removed",
		verbatim: true},
	{name: "workload/finalize/capture-label-removed-decorations-left", capture: "workload-finalize", verbatim: true},
	{name: "workload/finalize/decorations-gone", capture: "workload-finalize", change: func(r object) {
		md := at(r, "object", "metadata")
		delete(at(md, "labels"), "llmbudget.dev/state")
		if anns, ok := md["annotations"].(object); ok {
			for k := range anns {
				if strings.HasPrefix(k, "llmbudget.dev/") {
					delete(anns, k)
				}
			}
		}
	}},
	{name: "workload/sync/budget-not-found", capture: "workload-sync", change: func(r object) {
		at(r, "related")["LLMCostBudget.llmbudget.dev/v1alpha1"] = object{}
	}},
	{name: "workload/sync/budget-not-evaluated", capture: "workload-sync", change: func(r object) {
		delete(relatedBudget(r), "status")
	}},
	{name: "workload/sync/budget-over-announces-exceeded", capture: "workload-sync", change: budgetOver},
	{name: "workload/sync/budget-under", capture: "workload-sync", change: all(budgetOver, budgetStatus(object{
		"state": "UnderBudget", "observedSpendUSD": "120.50", "remainingUSD": "379.50", "percentUsed": 24,
		"thresholds": []any{}, "enforcement": object{"blocking": false}, "lastEvaluatedTime": "2026-11-29T07:29:36Z",
	}))},
	{name: "workload/sync/budget-unknown", capture: "workload-sync", change: all(budgetOver, budgetStatus(object{
		"state": "Unknown", "observedSpendUSD": nil, "percentUsed": nil, // JSON null, not absent
	}))},
}

// budgetOver gives the workload's budget the status of one that went over at 07:20.
func budgetOver(r object) {
	relatedBudget(r)["status"] = object{
		"observedGeneration": 1, "state": "OverBudget", "limitUSD": "500.00", "observedSpendUSD": "612.00",
		"remainingUSD": "0.00", "percentUsed": 122,
		"period": object{"start": "2026-11-01T00:00:00+01:00", "end": "2026-12-01T00:00:00+01:00"},
		"thresholds": []any{
			object{"percent": 80, "basis": "Actual", "crossedAt": "2026-11-29T07:00:00Z"},
			object{"percent": 100, "basis": "Actual", "crossedAt": "2026-11-29T07:20:00Z"},
		},
		"enforcement": object{"blocking": true, "quotaName": "llmbudget-chatbot", "reason": "over"},
	}
}

func relatedBudget(r object) object {
	return at(r, "related", "LLMCostBudget.llmbudget.dev/v1alpha1", "team-ml/chatbot")
}

// budgetStatus sets fields of the workload's budget's status.
func budgetStatus(fields object) func(object) {
	return func(r object) { merge(at(relatedBudget(r), "status"), fields, false) }
}

// The ClusterLLMCostBudget ml-department covers the namespaces labelled department=ml.
var clusterCrafts = []craft{
	{name: "clusterbudget/customize/capture", capture: "clusterbudget-customize", verbatim: true},
	{name: "clusterbudget/sync/capture-first-sync-under-budget", capture: "clusterbudget-sync-first", now: clusterNow},
	{name: "clusterbudget/finalize/capture-quotas-in-three-namespaces", capture: "clusterbudget-finalize-quotas",
		now: clusterNow},
	{name: "clusterbudget/finalize/capture-quotas-gone", capture: "clusterbudget-finalize-done", now: clusterNow},
	// Closed (the example's policy) and a namespace without its ConfigMap: Unknown, blocking everywhere.
	{name: "clusterbudget/sync/capture-configmap-missing-closed-blocks", capture: "clusterbudget-sync-configmap-missing",
		now: clusterNow},
	{name: "clusterbudget/sync/configmap-missing-open-skips", capture: "clusterbudget-sync-configmap-missing",
		now: clusterNow, change: enforcement(object{"failurePolicy": "Open"})},
	// ml-serving left the selector while the department is over budget: quotas stay only in the namespaces still
	// selected (Metacontroller deletes the third).
	{name: "clusterbudget/sync/capture-namespace-left-while-over-budget", capture: "clusterbudget-sync-namespace-left",
		now: clusterNow, change: clusterSpend("ml-research", object{"2026-12-01": "19999.50"}, nil)},
	// 16000 + 3890 of 20000 USD, burning 6000 USD/h (sampled 08:45:00) and 2000 USD/h (08:45:04): 8000 USD/h from
	// 08:45:01 reaches the limit at 08:45:51, before the capture's 08:46.
	{name: "clusterbudget/sync/projected-crossing-of-the-summed-rates-blocks", capture: "clusterbudget-sync-first",
		now: clusterNow, change: all(
			clusterSpend("ml-research", object{"2026-12-01": "16000"}, burnRate("08:45:00", "6000")),
			clusterSpend("ml-serving", object{"2026-12-01": "3890"}, burnRate("08:45:04", "2000")))},
	// Total sources must declare the budget's period.
	{name: "clusterbudget/sync/total-sources-of-the-period-are-summed", capture: "clusterbudget-sync-first",
		now: clusterNow, change: clusterTotal},
	{name: "clusterbudget/sync/total-source-of-another-period-is-unknown", capture: "clusterbudget-sync-first",
		now: clusterNow, change: all(clusterTotal, clusterSpend("ml-serving", object{"spend-usd": "1200.50"},
			object{"llmbudget.dev/period-start": "2026-11-01T00:00:00Z"}))},
	// Over budget blocks under Open too; a namespace's source that goes then does not lift the block.
	{name: "clusterbudget/sync/over-budget-open-blocks", capture: "clusterbudget-sync-namespace-left",
		now: clusterNow, change: all(clusterSpend("ml-research", object{"2026-12-01": "19999.50"}, nil),
			enforcement(object{"failurePolicy": "Open"}))},
	{name: "clusterbudget/sync/over-budget-warn-mode-would-refuse", capture: "clusterbudget-sync-namespace-left",
		now: clusterNow, change: all(clusterSpend("ml-research", object{"2026-12-01": "19999.50"}, nil),
			enforcement(object{"mode": "Warn"}))},
	{name: "clusterbudget/sync/blocking-then-a-namespaces-configmap-goes", capture: "clusterbudget-sync-namespace-left",
		now: "2026-12-01T08:56:00Z", change: all(
			statusAfter("clusterbudget/sync/over-budget-open-blocks"),
			enforcement(object{"failurePolicy": "Open"}),
			func(r object) { delete(at(r, "related", "ConfigMap.v1"), "ml-research/llm-spend") })},
	// One namespace too many for a quota in each (MaxQuotaNamespaces): the spend is not read, and the block of
	// this period holds where it was, saying why.
	{name: "clusterbudget/sync/blocking-then-one-namespace-too-many-keeps-the-block",
		capture: "clusterbudget-sync-namespace-left", now: "2026-12-01T08:56:00Z", change: all(
			statusAfter("clusterbudget/sync/over-budget-open-blocks"),
			enforcement(object{"failurePolicy": "Open"}),
			moreNamespaces(8000)),
		written: compactNamespaces},
	// Related objects the API server would never send: each is named, never skipped as if absent.
	{name: "clusterbudget/sync/configmap-value-not-a-string", capture: "clusterbudget-sync-first", now: clusterNow,
		change: clusterSpend("ml-serving", object{"2026-12-01": json.Number("3890")}, nil)},
	{name: "clusterbudget/sync/configmap-key-written-twice", capture: "clusterbudget-sync-first", now: clusterNow,
		change: clusterSpend("ml-serving", object{"2026-12-01": "0.00"}, nil),
		written: twice(`"2026-12-01": "{\"costUSD\": \"3890.00\", \"inputTokens\": 41000000, \"outputTokens\": 12000000}"`,
			`"2026-12-01": "0.00"`)},
	{name: "clusterbudget/sync/namespace-label-not-a-string", capture: "clusterbudget-sync-first", now: clusterNow,
		change: func(r object) {
			at(r, "related", "Namespace.v1", "ml-research", "metadata", "labels")["cost-center"] = json.Number("4711")
		}},
	{name: "clusterbudget/sync/configmap-listed-twice-counts-once", capture: "clusterbudget-sync-first", now: clusterNow,
		change: func(r object) {
			cms := at(r, "related", "ConfigMap.v1")
			first := capture("clusterbudget-sync-first")
			cms["ml-serving/llm-spend-copy"] = at(first, "related", "ConfigMap.v1", "ml-serving/llm-spend")
		}},
}

// craftsByName finds a case by its name. It is filled in by init, since the cases that look others up are part
// of crafts themselves.
var craftsByName = map[string]craft{}

func init() {
	for _, c := range crafts {
		craftsByName[c.name] = c
	}
}

// statusAfter sets the parent's status to what the fixture named answered, as Metacontroller would have written
// it: the case follows that sync.
func statusAfter(name string) func(object) {
	return func(r object) { at(r, "parent")["status"] = responseOf(name)["status"] }
}

// eventsAfter adds the Events the fixture named desired to the request's children, as the API server shows them
// once Metacontroller created them at created.
func eventsAfter(name, created string) func(object) {
	return func(r object) {
		events := at(r, "children", "Event.v1")
		for _, k := range responseOf(name)["children"].([]any) {
			child := k.(object)
			if child["kind"] != "Event" {
				continue
			}
			md := at(child, "metadata")
			md["creationTimestamp"] = created
			events[md["namespace"].(string)+"/"+md["name"].(string)] = child
		}
	}
}

// responseOf is what the fixture named answered.
func responseOf(name string) object {
	c, ok := craftsByName[name]
	if !ok {
		panic(fmt.Sprintf("fixture case: no case %q", name))
	}
	now := captureTime
	if c.now != "" {
		now, _ = time.Parse(time.RFC3339, c.now)
	}
	w, err := serve(now, hookPath(name), c.request())
	if err != nil {
		panic(err)
	}
	resp, err := decodeObject(w.Body.Bytes())
	if w.Code != http.StatusOK || err != nil {
		panic(fmt.Sprintf("fixture case: %s answered %d: %v", name, w.Code, err))
	}
	return resp
}

// twice writes the member last of the encoded request as first, then last: the same member written twice.
func twice(first, last string) func([]byte) []byte {
	return func(b []byte) []byte {
		i := bytes.Index(b, []byte(last))
		if i < 0 {
			panic(fmt.Sprintf("fixture case: no %s in the request", last))
		}
		line := bytes.LastIndexByte(b[:i], '\n') + 1
		indent := string(b[line:i])
		return slices.Concat(b[:i], []byte(first+",\n"+indent), b[i:])
	}
}

// clusterTotal makes the cluster budget read Total sources, both of which declare the current period.
var clusterTotal = all(
	func(r object) {
		at(r, "parent", "spec")["costSource"] = object{"spendSource": "llm-spend", "format": "Total", "key": "spend-usd"}
	},
	clusterSpend("ml-research", object{"spend-usd": "7000"},
		object{"llmbudget.dev/period-start": "2026-12-01T00:00:00Z"}),
	clusterSpend("ml-serving", object{"spend-usd": "1200.50"},
		object{"llmbudget.dev/period-start": "2026-12-01T00:00:00+00:00"}),
)

// moreNamespaces adds n minimal Namespaces labelled department=ml, named ml-more-00001 on.
func moreNamespaces(n int) func(object) {
	return func(r object) {
		ns := at(r, "related", "Namespace.v1")
		for i := 1; i <= n; i++ {
			name := fmt.Sprintf("ml-more-%05d", i)
			ns[name] = object{"metadata": object{"name": name, "labels": object{"department": "ml"}}}
		}
	}
}

// compactNamespaces writes each Namespace moreNamespaces added on one line, so that the fixture stays readable.
func compactNamespaces(b []byte) []byte {
	return moreNamespace.ReplaceAll(b, []byte(`"$1": {"metadata": {"labels": {"department": "ml"}, "name": "$1"}}`))
}

var moreNamespace = regexp.MustCompile(`"(ml-more-\d+)": \{\s*"metadata": \{\s*"labels": \{\s*` +
	`"department": "ml"\s*\},\s*"name": "ml-more-\d+"\s*\}\s*\}`)

// burnRate is a spend ConfigMap's stamp at 08:45:10 on the cluster capture's day, with its burn rate.
func burnRate(sampled, usdPerHour string) object {
	return object{"llmbudget.dev/spend-as-of": "2026-12-01T08:45:10Z", "llmbudget.dev/burn-rate": `{"asOf":` +
		`"2026-12-01T08:45:10Z","sampledAt":"2026-12-01T` + sampled + `Z","window":"1m0s","usdPerHour":"` +
		usdPerHour + `"}`}
}

// all applies changes in order.
func all(changes ...func(object)) func(object) {
	return func(r object) {
		for _, c := range changes {
			c(r)
		}
	}
}

// spec sets fields of the parent's spec; a nil value removes the field.
func spec(fields object) func(object) {
	return func(r object) { merge(at(r, "parent", "spec"), fields, true) }
}

// enforcement sets fields of the parent's spec.enforcement.
func enforcement(fields object) func(object) {
	return func(r object) { merge(at(r, "parent", "spec", "enforcement"), fields, true) }
}

// unlabelled removes the spend-source label from the team's spend ConfigMap.
func unlabelled(r object) {
	delete(at(r, "related", "ConfigMap.v1", "team-ml/llm-spend", "metadata", "labels"), "llmbudget.dev/spend-source")
}

// spend replaces the data of the team's spend ConfigMap.
func spend(data object) func(object) {
	return func(r object) { at(r, "related", "ConfigMap.v1", "team-ml/llm-spend")["data"] = data }
}

// clusterSpend replaces the data of a namespace's spend ConfigMap and adds annotations to it.
func clusterSpend(namespace string, data, annotations object) func(object) {
	return func(r object) {
		cm := at(r, "related", "ConfigMap.v1", namespace+"/llm-spend")
		cm["data"] = data
		if annotations == nil {
			return
		}
		md := at(cm, "metadata")
		if _, ok := md["annotations"]; !ok {
			md["annotations"] = object{}
		}
		merge(at(md, "annotations"), annotations, false)
	}
}

// merge sets each of fields in o; with nilRemoves, a nil value removes the field instead.
func merge(o, fields object, nilRemoves bool) {
	for k, v := range fields {
		if v == nil && nilRemoves {
			delete(o, k)
		} else {
			o[k] = v
		}
	}
}

// at walks keys down from o to an object; a missing one is a mistake in the case table.
func at(o object, keys ...string) object {
	for _, k := range keys {
		next, ok := o[k].(object)
		if !ok {
			panic(fmt.Sprintf("fixture case: no object at %q in %v", k, keys))
		}
		o = next
	}
	return o
}

// captures holds the wire captures by name, read once by readCaptures.
var captures map[string][]byte

func readCaptures() error {
	files, err := filepath.Glob(filepath.Join(wire, "*.request.json"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no captures in %s: %v", wire, err)
	}
	captures = make(map[string][]byte, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if _, err := decodeObject(b); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		captures[strings.TrimSuffix(filepath.Base(f), ".request.json")] = b
	}
	return nil
}

// capture is a fresh copy of a capture, for a case to change.
func capture(name string) object {
	b, ok := captures[name]
	if !ok {
		panic(fmt.Sprintf("fixture case: no capture %q in %s", name, wire))
	}
	o, _ := decodeObject(b) // readCaptures decoded it once already
	return o
}

func decodeObject(b []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var o object
	return o, dec.Decode(&o)
}

// request is the bytes of c's request file.
func (c craft) request() []byte {
	if c.verbatim {
		return captures[c.capture]
	}
	r := capture(c.capture)
	if c.change != nil {
		c.change(r)
	}
	var buf bytes.Buffer
	writeJSON(&buf, r, "")
	buf.WriteByte('\n')
	if c.written != nil {
		return c.written(buf.Bytes())
	}
	return buf.Bytes()
}

func (c craft) path(suffix string) string {
	return filepath.Join(fixtures, filepath.FromSlash(c.name)+suffix)
}

// writeFixtures writes every crafted request and its .now file, and removes a .now file a case no longer has.
func writeFixtures() error {
	if err := readCaptures(); err != nil {
		return err
	}
	for _, c := range crafts {
		if err := os.MkdirAll(filepath.Dir(c.path("")), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(c.path(".request.json"), c.request(), 0o644); err != nil {
			return err
		}
		now := c.path(".now")
		if c.now != "" {
			if err := os.WriteFile(now, []byte(c.now+"\n"), 0o644); err != nil {
				return err
			}
		} else if err := os.Remove(now); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// TestMain crafts the request fixtures first under -update, so that the golden responses are written for them.
func TestMain(m *testing.M) {
	flag.Parse()
	if *update {
		if err := writeFixtures(); err != nil {
			fmt.Fprintln(os.Stderr, "craft fixtures:", err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

func TestEveryRequestFixtureIsWhatItsCaseCrafts(t *testing.T) {
	require.NoError(t, readCaptures())
	crafted := make(map[string]bool, len(crafts))
	for _, c := range crafts {
		require.False(t, crafted[c.name], "%s is crafted twice", c.name)
		crafted[c.name] = true
		got, err := os.ReadFile(c.path(".request.json"))
		require.NoError(t, err, "run go test ./test/golden -update")
		// Not assert.Equal: its diff of two captures runs to thousands of lines.
		assert.True(t, bytes.Equal(c.request(), got),
			"%s is not what its case crafts: run go test ./test/golden -update and review the diff", c.name)
		now, err := os.ReadFile(c.path(".now"))
		if c.now == "" {
			assert.ErrorIs(t, err, fs.ErrNotExist, "%s has a .now file its case does not set", c.name)
		} else {
			assert.Equal(t, c.now+"\n", string(now), c.name)
		}
	}
	for _, f := range loadFixtures(t) {
		assert.True(t, crafted[f.name], "%s is in test/fixtures but no case crafts it", f.name)
	}
}

// writeJSON writes v as the fixtures are written: two-space indentation, keys sorted, every character outside
// printable ASCII escaped, so that a crafted fixture's diff against its capture shows only what its case changes.
func writeJSON(buf *bytes.Buffer, v any, indent string) {
	switch v := v.(type) {
	case object:
		if len(v) == 0 {
			buf.WriteString("{}")
			return
		}
		buf.WriteString("{")
		for i, k := range slices.Sorted(maps.Keys(v)) {
			if i > 0 {
				buf.WriteString(",")
			}
			buf.WriteString("\n" + indent + "  ")
			writeString(buf, k)
			buf.WriteString(": ")
			writeJSON(buf, v[k], indent+"  ")
		}
		buf.WriteString("\n" + indent + "}")
	case []any:
		if len(v) == 0 {
			buf.WriteString("[]")
			return
		}
		buf.WriteString("[")
		for i, e := range v {
			if i > 0 {
				buf.WriteString(",")
			}
			buf.WriteString("\n" + indent + "  ")
			writeJSON(buf, e, indent+"  ")
		}
		buf.WriteString("\n" + indent + "]")
	case string:
		writeString(buf, v)
	case json.Number:
		buf.WriteString(v.String())
	case int:
		fmt.Fprint(buf, v)
	case bool:
		fmt.Fprint(buf, v)
	case nil:
		buf.WriteString("null")
	default:
		panic(fmt.Sprintf("fixture case: a value of type %T", v))
	}
}

func writeString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			buf.WriteByte('\\')
			buf.WriteRune(r)
		case r == '\n':
			buf.WriteString(`\n`)
		case r == '\r':
			buf.WriteString(`\r`)
		case r == '\t':
			buf.WriteString(`\t`)
		case r == '\b':
			buf.WriteString(`\b`)
		case r == '\f':
			buf.WriteString(`\f`)
		case r >= ' ' && r <= '~':
			buf.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(buf, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(buf, `\u%04x`, r)
		}
	}
	buf.WriteByte('"')
}

// recordsNow is a minute after the TaskRecords captures were taken. Their budget team-agents/agents is Daily in
// Europe/Berlin (2026-12-01 there runs from 2026-11-30T23:00Z to 2026-12-01T23:00Z), limit 10 USD and 8 for opus,
// over the TaskRecords labelled team=agents; ClusterLLMCostBudget agents-department is Monthly in Berlin over the
// namespaces labelled department=agents.
const recordsNow = "2026-12-01T21:02:00Z"

const recordGroup = "TaskRecord.kelos.dev/v1alpha2"

var recordCrafts = []craft{
	{name: "budget/customize/capture-taskrecords", capture: "budget-customize-taskrecords", verbatim: true},
	{name: "budget/sync/capture-taskrecords-first-record", capture: "budget-sync-taskrecord-first", now: recordsNow},
	// Six records: two opus and one haiku in the Berlin day (one at 00:30 Berlin, 23:30 UTC the day before), one
	// opus of the previous Berlin day, one without usage, and the opus record that takes both limits past.
	{name: "budget/sync/capture-taskrecords-over-budget", capture: "budget-sync-taskrecords-over-budget",
		now: recordsNow},
	// The API server admitted costUSD "1e31" (Kelos's pattern allows any exponent): the budget is Unknown, naming
	// the record, and the block it had stays.
	{name: "budget/sync/capture-taskrecord-unreadable-keeps-the-block", capture: "budget-sync-taskrecord-unreadable",
		now: recordsNow},
	// The same records in New York's day (2026-12-01T05:00Z to 2026-12-02T05:00Z): the record of 23:30 UTC on
	// November 30th is of the day before there, and so is the one of 22:30.
	{name: "budget/sync/taskrecords-new-york-day", capture: "budget-sync-taskrecords-over-budget", now: recordsNow,
		change: spec(object{"period": object{"type": "Daily", "timeZone": "America/New_York"}})},
	// Related objects the API server would never send, or that eval may be given.
	{name: "budget/sync/taskrecord-cost-not-a-quantity", capture: "budget-sync-taskrecords-over-budget",
		now: recordsNow, change: recordUsage("team-agents/triage-record", object{"costUSD": "0.125 USD"})},
	{name: "budget/sync/taskrecord-cost-a-json-number", capture: "budget-sync-taskrecords-over-budget",
		now: recordsNow, change: recordUsage("team-agents/triage-record", object{"costUSD": json.Number("3")})},
	{name: "budget/sync/taskrecord-tokens-negative", capture: "budget-sync-taskrecords-over-budget",
		now: recordsNow, change: recordUsage("team-agents/triage-record", object{"inputTokens": json.Number("-1")})},
	{name: "budget/sync/taskrecord-without-completion-time-counts-nothing", capture: "budget-sync-taskrecords-over-budget",
		now: recordsNow, change: func(r object) {
			delete(at(r, "related", recordGroup, "team-agents/refactor-record", "spec"), "completionTime")
		}},
	{name: "budget/sync/taskrecords-of-another-team-or-namespace-are-ignored",
		capture: "budget-sync-taskrecords-over-budget", now: recordsNow, change: func(r object) {
			recs := at(r, "related", recordGroup)
			web := capture("budget-sync-taskrecords-over-budget")
			other := at(web, "related", recordGroup, "team-agents/refactor-record")
			at(other, "metadata", "labels")["team"] = "web"
			recs["team-agents/refactor-record"] = other
			elsewhere := at(capture("budget-sync-taskrecords-over-budget"), "related", recordGroup,
				"team-agents/triage-record")
			at(elsewhere, "metadata")["namespace"] = "team-web"
			recs["team-web/triage-record"] = elsewhere
		}},
	{name: "budget/customize/taskrecords-selector-invalid", capture: "budget-customize-taskrecords",
		change: spec(object{"costSource": object{"format": "TaskRecords", "selector": object{
			"matchExpressions": []any{object{"key": "team", "operator": "In"}}}}})},
	{name: "budget/sync/invalid-spec-taskrecords-with-configmap", capture: "budget-sync-taskrecords-over-budget",
		now: recordsNow, change: spec(object{"costSource": object{"format": "TaskRecords", "configMapName": "llm-spend",
			"selector": object{"matchLabels": object{"team": "agents"}}}})},
	{name: "budget/sync/invalid-spec-taskrecords-without-selector", capture: "budget-sync-taskrecords-over-budget",
		now: recordsNow, change: spec(object{"costSource": object{"format": "TaskRecords"}})},
	{name: "clusterbudget/customize/capture-taskrecords", capture: "clusterbudget-customize-taskrecords",
		verbatim: true},
	{name: "clusterbudget/sync/capture-taskrecords-first", capture: "clusterbudget-sync-taskrecords-first",
		now: recordsNow},
	{name: "clusterbudget/sync/taskrecord-unreadable-closed", capture: "clusterbudget-sync-taskrecords-first",
		now: recordsNow, change: all(enforcement(object{"failurePolicy": "Closed"}),
			recordUsage("team-bots/bots-digest-record", object{"costUSD": "-0.8"}))},
	{name: "clusterbudget/sync/taskrecord-unreadable-open-skips", capture: "clusterbudget-sync-taskrecords-first",
		now: recordsNow, change: all(enforcement(object{"failurePolicy": "Open"}),
			recordUsage("team-bots/bots-digest-record", object{"costUSD": "-0.8"}))},
}

// recordUsage merges fields into the spec.usage of the related TaskRecord key.
func recordUsage(key string, fields object) func(object) {
	return func(r object) { merge(at(r, "related", recordGroup, key, "spec", "usage"), fields, false) }
}
