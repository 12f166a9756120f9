package controller_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

// clusterSync is a blocking ClusterLLMCostBudget's sync (gate Both, no spend: Unknown under Closed) over n
// namespaces, each name padded to pad bytes of JSON; with quotas, each namespace's ResourceQuota is observed.
func clusterSync(n, pad int) string {
	var b strings.Builder
	b.WriteString(`{"parent":{"metadata":{"name":"dept","uid":"u","generation":1},"spec":{"limitUSD":"1",` +
		`"namespaceSelector":{},"costSource":{"format":"DailyLedger","spendSource":"s"},"enforcement":{` +
		`"action":"BlockNewWorkloads","gate":"Both","failurePolicy":"Closed","resources":["jobs.batch"]}}},` +
		`"children":{},"related":{"ConfigMap.v1":{},"Namespace.v1":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"ns-%06d":{"metadata":{"name":"ns-%06d","annotations":{"pad":%q}}}`, i, i,
			strings.Repeat("x", pad))
	}
	b.WriteString(`}}}`)
	return b.String()
}

func listHandler(t *testing.T, maxBody, maxList int64) http.Handler {
	t.Helper()
	h, err := controller.NewRouter(metacontroller.Config{
		Now: func() time.Time { return fixed }, Logger: slog.New(slog.DiscardHandler),
		MaxBodyBytes: maxBody, MaxInFlightBytes: maxBody, MaxListBodyBytes: maxList,
	})
	require.NoError(t, err)
	return h
}

func TestClusterSizedListsHaveTheirOwnBodyLimit(t *testing.T) {
	h := listHandler(t, 64<<10, 4<<20)
	body := clusterSync(2_000, 200) // about 0.5 MB: past the ordinary limit, within the list limit
	require.Greater(t, len(body), 64<<10)

	w := do(h, http.MethodPost, "/clusterbudget/sync", "application/json", body)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var resp struct {
		Status   api.Status `json:"status"`
		Children []struct {
			Kind     string `json:"kind"`
			Metadata struct{ Namespace string }
		} `json:"children"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
	assert.Len(t, resp.Status.Enforcement.Namespaces, 2_000, "every selected namespace is closed")
	quotas := 0
	for _, c := range resp.Children {
		if c.Kind == "ResourceQuota" {
			quotas++
		}
	}
	assert.Equal(t, 2_000, quotas, "a quota in each namespace")

	w = do(h, http.MethodPost, "/namespace/sync", "application/json", `{"object":{"metadata":{"name":"a"}},`+
		`"related":{"Pad.v1":{"x":"`+strings.Repeat("x", 100<<10)+`"}}}`)
	assert.Equal(t, http.StatusOK, w.Code, "a Namespace's sync is a list route: %s", w.Body.String())

	w = do(h, http.MethodPost, "/budget/sync", "application/json", body)
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code, "a team budget's sync keeps the ordinary limit")
	w = do(h, http.MethodPost, "/clusterbudget/customize", "application/json", body)
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code, "customize keeps the ordinary limit")
	w = do(h, http.MethodPost, "/clusterbudget/sync", "application/json", clusterSync(20_000, 200))
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	assert.Contains(t, w.Body.String(), "exceeds the limit of 4194304 bytes")
}

func TestALargeBodyReadsTheSameDeclaredOrChunked(t *testing.T) {
	h := listHandler(t, 64<<10, 4<<20)
	body := clusterSync(3_000, 100)
	declared := do(h, http.MethodPost, "/clusterbudget/sync", "application/json", body)
	r := httptest.NewRequest(http.MethodPost, "/clusterbudget/sync", io.MultiReader(strings.NewReader(body)))
	r.ContentLength = -1
	r.Header.Set("Content-Type", "application/json")
	chunked := httptest.NewRecorder()
	h.ServeHTTP(chunked, r)
	require.Equal(t, http.StatusOK, declared.Code, declared.Body.String())
	assert.Equal(t, declared.Body.String(), chunked.Body.String())
}

func TestABodyShorterThanItsContentLengthIsRefused(t *testing.T) {
	h := listHandler(t, 64<<10, 4<<20)
	body := clusterSync(3_000, 100)
	r := httptest.NewRequest(http.MethodPost, "/clusterbudget/sync", strings.NewReader(body))
	r.ContentLength = int64(len(body) + 10)
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
}
