package golden_test

import (
	"encoding/json"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Metacontroller may call a sync hook again before its cache has the status it just wrote: the parent comes with
// the status the first sync was given. Each budget fixture is replayed three times: as it is, as it is a second
// later (the status the first sync wrote withheld), and a second later with that status, as the next sync that
// sees its own status. All three must desire byte-identical children, or Metacontroller would swap the Events
// (each swap a deletion and a second creation), and the withheld sync must record the same announcements and
// thresholds, or the status would alternate between two dates.
func TestAStaleOrRepeatedSyncDesiresByteIdenticalChildren(t *testing.T) {
	reasons := map[string]map[string]bool{}
	for _, f := range loadFixtures(t) {
		if !strings.HasSuffix(f.path, "budget/sync") {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			body, err := os.ReadFile(f.request)
			require.NoError(t, err)
			first := replay(t, f.now, f.path, body)
			withheld := replay(t, f.now.Add(time.Second), f.path, body)
			seen := replay(t, f.now.Add(time.Second), f.path, withStatus(t, body, first.Status))

			assert.JSONEq(t, string(first.Children), string(withheld.Children), "status withheld, a second later")
			assert.JSONEq(t, string(first.Children), string(seen.Children), "its own status seen, a second later")
			for _, field := range []string{"announcements", "thresholds", "conditions", "enforcement", "enforcementPoints"} {
				assert.JSONEq(t, field0(t, first.Status, field), field0(t, withheld.Status, field),
					"status.%s, status withheld", field)
				assert.JSONEq(t, field0(t, first.Status, field), field0(t, seen.Status, field),
					"status.%s, its own status seen", field)
			}
			kind := parentKind(t, body)
			if reasons[kind] == nil {
				reasons[kind] = map[string]bool{}
			}
			for _, r := range eventReasons(t, first.Children) {
				reasons[kind][r] = true
			}
		})
	}
	// Every kind of Event is replayed for both kinds of budget: a fixture that no longer announces one must be
	// replaced, not silently lose the check.
	every := []string{"BudgetWarning", "OverBudget", "BlockingNewWorkloads", "CostSourceMissing", "InvalidCostData"}
	want := map[string][]string{
		"LLMCostBudget": append(every, "ForecastOverBudget", "WouldBlockNewWorkloads", "Unblocked",
			"BudgetPeriodReset", "SpendStale", "CostKeyMissing", "InvalidSpec"),
		"ClusterLLMCostBudget": append(every, "WouldBlockNewWorkloads", "SpendStale"),
	}
	for kind, rs := range want {
		for _, r := range rs {
			assert.True(t, reasons[kind][r], "no %s fixture announces %s", kind, r)
		}
	}
}

type replayed struct {
	Status   json.RawMessage `json:"status"`
	Children json.RawMessage `json:"children"`
}

func replay(t *testing.T, now time.Time, path string, body []byte) replayed {
	t.Helper()
	w, err := serve(now, path, body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var r replayed
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &r))
	return r
}

// withStatus is the request with the parent's status replaced by st, as the next sync after st was written.
func withStatus(t *testing.T, body []byte, st json.RawMessage) []byte {
	t.Helper()
	var req map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &req))
	var parent map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(req["parent"], &parent))
	parent["status"] = st
	var err error
	req["parent"], err = json.Marshal(parent)
	require.NoError(t, err)
	out, err := json.Marshal(req)
	require.NoError(t, err)
	return out
}

func field0(t *testing.T, st json.RawMessage, field string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(st, &m))
	if v, ok := m[field]; ok {
		return string(v)
	}
	return "null"
}

func parentKind(t *testing.T, body []byte) string {
	t.Helper()
	var req struct {
		Parent struct {
			Kind string `json:"kind"`
		} `json:"parent"`
	}
	require.NoError(t, json.Unmarshal(body, &req))
	return req.Parent.Kind
}

func eventReasons(t *testing.T, children json.RawMessage) []string {
	t.Helper()
	var kids []struct {
		Kind   string `json:"kind"`
		Reason string `json:"reason"`
	}
	require.NoError(t, json.Unmarshal(children, &kids))
	var out []string
	for _, k := range kids {
		if k.Kind == "Event" {
			out = append(out, k.Reason)
		}
	}
	sort.Strings(out)
	return out
}
