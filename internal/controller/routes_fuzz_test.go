package controller_test

import (
	"net/http"
	"testing"
)

// Seeds are small literals, a few hundred bytes each: the fuzzer mutates and minimises every seed it is given, so
// a 20 KB wire capture holds it up for the whole run. The golden tests replay the captures themselves.
const (
	budgetParent = `{"apiVersion":"llmbudget.dev/v1alpha1","kind":"LLMCostBudget",` +
		`"metadata":{"name":"b","namespace":"ns","generation":1},"spec":{"limitUSD":"10",` +
		`"costSource":{"configMapName":"cm","key":"k"},"enforcement":{"action":"BlockNewWorkloads","resources":["jobs"]}}}`
	ledgerParent = `{"metadata":{"name":"b","namespace":"ns"},"spec":{"limitUSD":"10","period":{"type":"Daily"},` +
		`"tokenLimits":{"total":100},"modelLimits":[{"model":"m","limitUSD":"1"}],` +
		`"costSource":{"configMapName":"cm","format":"DailyLedger","keyPrefix":"d-"}}}`
	clusterParent = `{"metadata":{"name":"d"},"spec":{"limitUSD":"10",` +
		`"namespaceSelector":{"matchLabels":{"team":"ml"}},"costSource":{"spendSource":"s","format":"DailyLedger"}}}`
	workloadObject = `{"apiVersion":"apps/v1","kind":"Deployment",` +
		`"metadata":{"name":"w","namespace":"ns","labels":{"llmbudget.dev/budget":"b"}}}`
	relatedBudget = `{"LLMCostBudget.llmbudget.dev/v1alpha1":{"ns/b":{"metadata":{"name":"b","namespace":"ns"},` +
		`"status":{"state":"OverBudget","percentUsed":120,"enforcement":{"blocking":true}}}}}`
)

var hookSeeds = map[string][]string{
	"/budget/customize": {`{"parent":` + budgetParent + `}`, `{"parent":` + ledgerParent + `}`},
	"/budget/sync": {
		minimalSync,
		`{"parent":` + budgetParent + `,"related":{"ConfigMap.v1":{"ns/cm":{"data":{"k":"12.5"}}}}}`,
		`{"parent":` + ledgerParent + `,"related":{"ConfigMap.v1":{"ns/cm":{"data":` +
			`{"d-2026-11-29":"{\"costUSD\":\"2\",\"inputTokens\":5,\"models\":{\"m\":{\"costUSD\":\"1\"}}}"}}}}}`,
		// TaskRecords: one with a wrong-typed label, one under two keys.
		`{"parent":{"metadata":{"name":"b","namespace":"ns"},"spec":{"limitUSD":"10","costSource":` +
			`{"format":"TaskRecords","selector":{"matchLabels":{"team":"ml"}}}}},"related":{"TaskRecord.kelos.dev/v1alpha2":{` +
			`"ns/a":{"metadata":{"name":"a","namespace":"ns","labels":{"team":1}},"spec":{}},` +
			`"ns/c":{"metadata":{"name":"c","namespace":"ns","labels":{"team":"ml"}},"spec":{"usage":{"costUSD":"1"}}},` +
			`"c":{"metadata":{"name":"c","namespace":"ns","labels":{"team":"ml"}},"spec":{"usage":{"costUSD":"1"}}}}}}`,
	},
	"/budget/finalize": {
		`{"parent":` + budgetParent + `,"children":{"ResourceQuota.v1":{"ns/b":{"metadata":{"name":"b"}}}},` +
			`"finalizing":true}`,
	},
	"/workload/customize": {`{"parent":` + workloadObject + `}`},
	"/workload/sync": {
		`{"object":` + workloadObject + `,"related":` + relatedBudget + `}`,
		// A crafted status (no label value, an amount too long) and a workload marked exceeded in a later period.
		`{"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"w","namespace":"ns",` +
			`"labels":{"llmbudget.dev/budget":"b"},"annotations":{"llmbudget.dev/exceeded-at":"2099-01-01T00:00:00Z"}}},` +
			`"related":{"LLMCostBudget.llmbudget.dev/v1alpha1":{"ns/b":{"metadata":{"name":"b","namespace":"ns"},` +
			`"status":{"state":"Over Budget!","observedSpendUSD":"1.0000000000000000000000000000000000000000000000000001",` +
			`"period":{"start":"2026-11-01T00:00:00Z","end":"x"}}}}}}`,
	},
	"/workload/finalize": {
		`{"object":{"metadata":{"name":"w","namespace":"ns","labels":{"llmbudget.dev/state":"OverBudget"},` +
			`"annotations":{"llmbudget.dev/percent-used":"120"}}},"related":{},"finalizing":true}`,
	},
	"/clusterbudget/customize": {`{"parent":` + clusterParent + `}`},
	"/namespace/customize":     {`{"parent":{"metadata":{"name":"ns"}}}`},
	"/namespace/sync": {
		`{"object":{"metadata":{"name":"ns"}},"related":` + relatedBudget + `}`,
		// One budget under two keys.
		`{"object":{"metadata":{"name":"ns"}},"related":{"LLMCostBudget.llmbudget.dev/v1alpha1":{` +
			`"ns/b":{"metadata":{"name":"b","namespace":"ns"},"status":{"enforcement":{"blocking":true}}},` +
			`"b":{"metadata":{"name":"b","namespace":"ns"},"status":{"enforcement":{"blocking":true}}}}}}`,
		`{"object":{"metadata":{"name":"ml"}},"related":{"ClusterLLMCostBudget.llmbudget.dev/v1alpha1":{"d":` +
			`{"metadata":{"name":"d"},"status":{"enforcement":{"blocking":true,"namespaces":["ml"]}}}}}}`,
	},
	"/clusterbudget/sync": {
		`{"parent":` + clusterParent + `,"related":{"Namespace.v1":{"ml":{"metadata":{"name":"ml",` +
			`"labels":{"team":"ml"}}}},"ConfigMap.v1":{"ml/cm":{"metadata":{"name":"cm","namespace":"ml",` +
			`"labels":{"llmbudget.dev/spend-source":"s"}},"data":{"2026-11-29":"5"}}}}}`,
		// Crafted to grow the answer: minimal namespaces, each closed by a quota, written a child at a time.
		clusterSync(300, 0),
	},
}

// fuzzHook feeds arbitrary bodies to a hook: it must answer 200 or 400, never 500 (a hook's own failure, or a
// recovered panic).
func fuzzHook(f *testing.F, path string) {
	for _, s := range hookSeeds[path] {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"parent":null}`))
	f.Add([]byte(`{"object":{"metadata":{"name":"x","labels":{"llmbudget.dev/budget":"b"}}}}`))
	h := newHandler(f, nil, 0)
	f.Fuzz(func(t *testing.T, body []byte) {
		w := do(h, http.MethodPost, path, "application/json", string(body))
		if w.Code != http.StatusOK && w.Code != http.StatusBadRequest {
			t.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	})
}

func TestEverySeedIsAnsweredNotRefused(t *testing.T) {
	h := newHandler(t, nil, 0)
	for path, seeds := range hookSeeds {
		for _, s := range seeds {
			w := do(h, http.MethodPost, path, "application/json", s)
			if w.Code != http.StatusOK {
				t.Errorf("%s: status %d for %s: %s", path, w.Code, s, w.Body.String())
			}
		}
	}
}

func FuzzBudgetCustomize(f *testing.F)        { fuzzHook(f, "/budget/customize") }
func FuzzBudgetSync(f *testing.F)             { fuzzHook(f, "/budget/sync") }
func FuzzBudgetFinalize(f *testing.F)         { fuzzHook(f, "/budget/finalize") }
func FuzzWorkloadCustomize(f *testing.F)      { fuzzHook(f, "/workload/customize") }
func FuzzWorkloadSync(f *testing.F)           { fuzzHook(f, "/workload/sync") }
func FuzzWorkloadFinalize(f *testing.F)       { fuzzHook(f, "/workload/finalize") }
func FuzzClusterBudgetCustomize(f *testing.F) { fuzzHook(f, "/clusterbudget/customize") }
func FuzzClusterBudgetSync(f *testing.F)      { fuzzHook(f, "/clusterbudget/sync") }
func FuzzNamespaceCustomize(f *testing.F)     { fuzzHook(f, "/namespace/customize") }
func FuzzNamespaceSync(f *testing.F)          { fuzzHook(f, "/namespace/sync") }
