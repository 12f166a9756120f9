package httpapi_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// fuzzHooks feeds arbitrary bodies to a hook: it must answer 200 or a 4xx,
// never panic (a recovered panic is a 500 and fails the target).
func fuzzHook(f *testing.F, path string, seedGlob string) {
	seeds, _ := filepath.Glob(seedGlob)
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(minimalSync))
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

func FuzzBudgetCustomize(f *testing.F) {
	fuzzHook(f, "/budget/customize", "../../test/fixtures/budget/customize/*.request.json")
}

func FuzzBudgetSync(f *testing.F) {
	fuzzHook(f, "/budget/sync", "../../test/fixtures/budget/sync/*.request.json")
}

func FuzzBudgetFinalize(f *testing.F) {
	fuzzHook(f, "/budget/finalize", "../../test/fixtures/budget/finalize/*.request.json")
}

func FuzzWorkloadCustomize(f *testing.F) {
	fuzzHook(f, "/workload/customize", "../../test/fixtures/workload/customize/*.request.json")
}

func FuzzWorkloadSync(f *testing.F) {
	fuzzHook(f, "/workload/sync", "../../test/fixtures/workload/sync/*.request.json")
}

func FuzzWorkloadFinalize(f *testing.F) {
	fuzzHook(f, "/workload/finalize", "../../test/fixtures/workload/finalize/*.request.json")
}

func FuzzClusterBudgetCustomize(f *testing.F) {
	fuzzHook(f, "/clusterbudget/customize", "../../test/fixtures/clusterbudget/customize/*.request.json")
}

func FuzzClusterBudgetSync(f *testing.F) {
	fuzzHook(f, "/clusterbudget/sync", "../../test/fixtures/clusterbudget/*/*.request.json")
}
