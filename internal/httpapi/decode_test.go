package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncStatus posts minimalSync with old replaced by new and returns the
// budget's state and BudgetEvaluated condition, which must be answered 200.
func syncStatus(t *testing.T, old, new string) (state, reason, message string) {
	t.Helper()
	require.Contains(t, minimalSync, old)
	w := do(newHandler(t, nil, 0), http.MethodPost, "/budget/sync", "application/json", strings.Replace(minimalSync, old, new, 1))
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

func TestFieldNamesMatchCaseSensitively(t *testing.T) {
	for _, name := range []string{"limitusd", "LIMITUSD", "LimitUSD"} {
		t.Run(name, func(t *testing.T) {
			state, reason, message := syncStatus(t, `"limitUSD":"10"`, `"`+name+`":"1000000"`)
			assert.Equal(t, "Unknown", state, "never read as limitUSD")
			assert.Equal(t, "InvalidSpec", reason)
			assert.Contains(t, message, `unknown field "spec.`+name+`"`)
		})
	}
}

func TestARepeatedSpecFieldIsAnInvalidSpec(t *testing.T) {
	state, reason, message := syncStatus(t, `"limitUSD":"10"`, `"limitUSD":"10","limitUSD":"20"`)
	assert.Equal(t, "Unknown", state)
	assert.Equal(t, "InvalidSpec", reason)
	assert.Contains(t, message, `duplicate field "spec.limitUSD"`)
}

func TestUnparseableParentMetadataIsAnsweredUnknown(t *testing.T) {
	cases := map[string]struct{ old, new, message string }{
		"a creationTimestamp that is not a time": {`"generation":1`, `"generation":1,"creationTimestamp":"yesterday"`, `parent: parsing time "yesterday"`},
		"a generation that is a string":          {`"generation":1`, `"generation":"1"`, `parent.metadata.generation: must be an integer, got JSON string`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			state, reason, message := syncStatus(t, tc.old, tc.new)
			assert.Equal(t, "Unknown", state)
			assert.Equal(t, "InvalidSpec", reason)
			assert.Contains(t, message, tc.message)
			assert.NotContains(t, message, "parent: parent:", "no repeated prefix")
			assert.NotContains(t, message, "Go ", "no Go type names")
		})
	}
}

func TestASpendValueThatIsNotAStringIsInvalidCostData(t *testing.T) {
	const ledger = `"key":"k"}}},"children":{},"related":{"ConfigMap.v1":{"ns/cm":{"data":{"k":"2.50"}}}}`
	cases := map[string]struct{ old, new, message string }{
		"Total":                          {`"data":{"k":"2.50"}`, `"data":{"k":2.5}`, `key "k": the value is 2.5, not a string`},
		"a key other than the Total key": {`"data":{"k":"2.50"}`, `"data":{"k":"2.50","other":{"costUSD":"1"}}`, `key "other": the value is an object, not a string`},
		"DailyLedger": {ledger, `"format":"DailyLedger","keyPrefix":"spend-"}}},"children":{},"related":{"ConfigMap.v1":{"ns/cm":{"data":{"spend-2026-11-01":"1","spend-2026-11-02":true}}}}`,
			`key "spend-2026-11-02": the value is true, not a string`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			state, reason, message := syncStatus(t, tc.old, tc.new)
			assert.Equal(t, "Unknown", state)
			assert.Equal(t, "InvalidCostData", reason)
			assert.Contains(t, message, tc.message)
		})
	}
}
