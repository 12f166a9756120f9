package controller_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncStatus posts minimalSync with old replaced by replacement and returns the
// budget's state and BudgetEvaluated condition, which must be answered 200.
func syncStatus(t *testing.T, old, replacement string) (state, reason, message string) {
	t.Helper()
	require.Contains(t, minimalSync, old)
	body := strings.Replace(minimalSync, old, replacement, 1)
	w := do(newHandler(t, nil, 0), http.MethodPost, "/budget/sync", "application/json", body)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var resp struct {
		Status struct {
			State      string
			Conditions []struct{ Type, Reason, Message string }
		}
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
	for _, c := range resp.Status.Conditions {
		if c.Type == "BudgetEvaluated" {
			return resp.Status.State, c.Reason, c.Message
		}
	}
	t.Fatalf("no BudgetEvaluated condition in %s", w.Body.String())
	return "", "", ""
}

// assertUnknown checks that minimalSync with old replaced by replacement leaves the
// budget Unknown for reason, with a message containing want.
func assertUnknown(t *testing.T, old, replacement, reason, want string) {
	t.Helper()
	state, gotReason, message := syncStatus(t, old, replacement)
	assert.Equal(t, "Unknown", state)
	assert.Equal(t, reason, gotReason)
	assert.Contains(t, message, want)
	assert.NotContains(t, message, "parent: parent:", "no repeated prefix")
	assert.NotContains(t, message, "Go ", "no Go type names")
}

func TestFieldNamesMatchCaseSensitively(t *testing.T) {
	for _, name := range []string{"limitusd", "LIMITUSD", "LimitUSD"} {
		t.Run(name, func(t *testing.T) {
			assertUnknown(t, `"limitUSD":"10"`, `"`+name+`":"1000000"`, "InvalidSpec", `unknown field "spec.`+name+`"`)
		})
	}
}

func TestARepeatedSpecFieldIsAnInvalidSpec(t *testing.T) {
	assertUnknown(t, `"limitUSD":"10"`, `"limitUSD":"10","limitUSD":"20"`, "InvalidSpec",
		`duplicate field "spec.limitUSD"`)
}

func TestUnparseableParentMetadataIsAnsweredUnknown(t *testing.T) {
	cases := map[string]struct{ old, new, message string }{
		"a creationTimestamp that is not a time": {
			`"generation":1`, `"generation":1,"creationTimestamp":"yesterday"`, `parent: parsing time "yesterday"`,
		},
		"a generation that is a string": {
			`"generation":1`, `"generation":"1"`,
			`parent.metadata.generation: Invalid value: "string": must be of type integer`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assertUnknown(t, tc.old, tc.new, "InvalidSpec", tc.message) })
	}
}

func TestASpendValueThatIsNotAStringIsInvalidCostData(t *testing.T) {
	const source = `"metadata":{"labels":{"llmbudget.dev/spend-source":"cm"}},`
	const ledger = `"key":"k"}}},"children":{},"related":{"ConfigMap.v1":{"ns/cm":{` + source + `"data":{"k":"2.50"}}}}`
	cases := map[string]struct{ old, new, message string }{
		"Total": {`"data":{"k":"2.50"}`, `"data":{"k":2.5}`, `key "k": the value is 2.5, not a string`},
		"a key other than the Total key": {
			`"data":{"k":"2.50"}`, `"data":{"k":"2.50","other":{"costUSD":"1"}}`,
			`key "other": the value is an object, not a string`,
		},
		"DailyLedger": {ledger, `"format":"DailyLedger","keyPrefix":"spend-"}}},"children":{},"related":` +
			`{"ConfigMap.v1":{"ns/cm":{` + source + `"data":{"spend-2026-11-01":"1","spend-2026-11-02":true}}}}`,
			`key "spend-2026-11-02": the value is true, not a string`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assertUnknown(t, tc.old, tc.new, "InvalidCostData", tc.message) })
	}
}

func TestABudgetWithUnparseableMetadataCanStillBeFinalized(t *testing.T) {
	body := strings.Replace(minimalSync, `"generation":1`, `"generation":1,"creationTimestamp":"yesterday"`, 1)
	body = strings.Replace(body, `"finalizing":false`, `"finalizing":true`, 1)
	w := do(newHandler(t, nil, 0), http.MethodPost, "/budget/finalize", "application/json", body)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var resp struct{ Finalized bool }
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
	assert.True(t, resp.Finalized, "no quota is observed, so the budget may go")
}
