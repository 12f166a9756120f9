package bench_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

// A budget with a TaskRecords source is sent every matching TaskRecord on every sync. The record bodies are the
// over-budget TaskRecords capture with n records as Kelos writes them: no kubectl annotation, managedFields of
// kelos-controller, the default ttlSecondsAfterCompletion of 30 days, and completion times spread evenly over
// those 30 days, so that about a thirtieth fall in the budget's Berlin day.
const (
	recordsCapture = "budget/sync/capture-taskrecords-over-budget"
	recordGroup    = "TaskRecord.kelos.dev/v1alpha2"
	recordTTL      = 30 * 24 * 60 * 60 // Kelos's default, in seconds
)

// recordCounts are the sizes measured; the largest is past the default body limit, and is measured with a limit
// raised to fit it.
var recordCounts = []int{100, 1_000, 10_000}

// recordsNow is a minute after the TaskRecords captures (as in test/golden).
var recordsNow = time.Date(2026, 12, 1, 21, 2, 0, 0, time.UTC)

// builtRecords keeps each record body once built: the largest takes a second to build, and every test of the
// package lists the bodies.
var builtRecords = map[int]body{}

func recordsBody(t testing.TB, n int) body {
	t.Helper()
	if bd, ok := builtRecords[n]; ok {
		return bd
	}
	bd := buildRecordsBody(t, n)
	builtRecords[n] = bd
	return bd
}

func buildRecordsBody(t testing.TB, n int) body {
	t.Helper()
	req := readCapture(t, recordsCapture)
	group := dig(req, "related", recordGroup).(map[string]any)
	template := mustEncode(t, group["team-agents/fix-login-record"])
	records := map[string]any{}
	models := []string{"opus", "sonnet", "haiku"}
	for i := range n {
		rec := mustDecode(t, template)
		uid := fmt.Sprintf("5f0c9a2e-7d41-4b8a-9c3e-%012d", i)
		completed := recordsNow.Add(-time.Duration(i) * 30 * 24 * time.Hour / time.Duration(n)).Format(time.RFC3339)
		md := rec["metadata"].(map[string]any)
		md["name"], md["uid"], md["resourceVersion"] = uid, uid, fmt.Sprint(1000+i)
		md["creationTimestamp"] = completed
		delete(md, "annotations")
		md["managedFields"] = []any{map[string]any{
			"apiVersion": "kelos.dev/v1alpha2", "fieldsType": "FieldsV1", "manager": "kelos-controller",
			"operation": "Update", "time": completed,
			"fieldsV1": map[string]any{
				"f:metadata": map[string]any{"f:labels": map[string]any{".": map[string]any{}, "f:team": map[string]any{}}},
				"f:spec": map[string]any{".": map[string]any{}, "f:completionTime": map[string]any{},
					"f:model": map[string]any{}, "f:phase": map[string]any{}, "f:startTime": map[string]any{},
					"f:taskRef": map[string]any{
						".": map[string]any{}, "f:name": map[string]any{}, "f:uid": map[string]any{},
					},
					"f:ttlSecondsAfterCompletion": map[string]any{}, "f:type": map[string]any{},
					"f:usage": map[string]any{".": map[string]any{}, "f:costUSD": map[string]any{},
						"f:inputTokens": map[string]any{}, "f:outputTokens": map[string]any{}}},
			},
		}}
		spec := rec["spec"].(map[string]any)
		spec["taskRef"] = map[string]any{"name": fmt.Sprintf("agent-task-%d", i), "uid": uid}
		spec["model"] = models[i%len(models)]
		spec["startTime"], spec["completionTime"] = completed, completed
		spec["ttlSecondsAfterCompletion"] = recordTTL
		spec["usage"] = map[string]any{"costUSD": fmt.Sprintf("%d.%04d", i%3, (i*7919)%10_000),
			"inputTokens": 40_000 + i%50_000, "outputTokens": 5_000 + i%9_000}
		records["team-agents/"+uid] = rec
	}
	req["related"].(map[string]any)[recordGroup] = records
	name := fmt.Sprintf("budget/sync/synthetic-taskrecords-%d", n)
	raw := mustEncode(t, req)
	return body{name: name, path: "/budget/sync", req: raw, now: recordsNow, maxBody: int64(len(raw))}
}

func recordBodies(t testing.TB) []body {
	out := make([]body, 0, len(recordCounts))
	for _, n := range recordCounts {
		out = append(out, recordsBody(t, n))
	}
	return out
}

func TestRecordBodiesHaveTheirAdvertisedShape(t *testing.T) {
	for _, n := range recordCounts {
		bd := recordsBody(t, n)
		req := mustDecode(t, bd.req)
		require.Len(t, dig(req, "related", recordGroup), n)
		t.Logf("%d TaskRecords: a request of %d bytes, %d per record", n, len(bd.req), len(bd.req)/n)
	}
}

// TestTheBodyLimitBoundsTheRecordsOfABudget finds how many records of this shape fit the default 4 MiB limit,
// and checks what the hook answers past it: 413, with no status, so that Metacontroller keeps the last status
// it wrote and reports a SyncError.
func TestTheBodyLimitBoundsTheRecordsOfABudget(t *testing.T) {
	small, large := recordsBody(t, 100), recordsBody(t, 1_000)
	perRecord := (len(large.req) - len(small.req)) / 900
	rest := len(small.req) - 100*perRecord
	fit := (metacontroller.DefaultMaxBodyBytes - rest) / perRecord
	t.Logf("each record adds %d bytes to a request of %d: %d records fit in %d bytes",
		perRecord, rest, fit, metacontroller.DefaultMaxBodyBytes)
	assert.Greater(t, fit, 2_500, "docs/benchmarks.md states the bound")

	past := recordsBody(t, 10_000)
	require.Greater(t, len(past.req), metacontroller.DefaultMaxBodyBytes)
	h := newHandler(t, past.now, 0)
	r, err := http.NewRequest(http.MethodPost, past.path, nil)
	require.NoError(t, err)
	rd := &reusableBody{}
	rd.Reset(past.req)
	r.Body, r.ContentLength = rd, int64(len(past.req))
	r.Header.Set("Content-Type", "application/json")
	w := &recorder{header: http.Header{}}
	h.ServeHTTP(w, r)
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.status)
	assert.Contains(t, w.body.String(), "exceeds the limit of 4194304 bytes")
}
