// Package bench_test measures the hook handlers through the real router
// against their floor: what encoding/json alone needs to read the same
// request body into `any` and to write the same response from `any`. A hook
// call cannot cost less than reading its request and writing its answer, so
// handler/floor is how far the service sits from that floor
// (`go run ./test/bench/cmd/ratio` prints the table; `make bench` runs both).
//
// The bodies are the wire captures in test/fixtures/*/*/capture-*.request.json
// and synthetic ones built from a capture: a budget with a 366-day
// DailyLedger ConfigMap and 10 thresholds, a parent with 20 Event
// children, a namespace sync handed 100 cluster budgets, and budgets
// sent 100, 1,000 and 10,000 Kelos TaskRecords (records_test.go).
package bench_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

// captureTime is when the wire captures were taken (as in test/golden).
var captureTime = time.Date(2026, 11, 29, 7, 30, 0, 0, time.UTC)

const fixtures = "../fixtures"

// body is one request the benchmarks replay.
type body struct {
	name string // e.g. budget/sync/capture-over-budget-with-children
	path string // URL path
	req  []byte
	now  time.Time
	// maxBody is the body limit to serve it with; 0 is the service's default.
	maxBody int64
}

func BenchmarkHook(b *testing.B) {
	for _, bd := range bodies(b) {
		h := newHandler(b, bd.now, bd.maxBody)
		resp := serve(b, h, bd)
		b.Run(bd.name+"/handler", func(b *testing.B) { benchHandler(b, h, bd) })
		b.Run(bd.name+"/floor", func(b *testing.B) { benchFloor(b, bd, resp) })
	}
}

// benchHandler replays the body through the router, reusing the request and
// the response writer so that only the service's own work is measured.
func benchHandler(b *testing.B, h http.Handler, bd body) {
	r, err := http.NewRequest(http.MethodPost, bd.path, nil)
	require.NoError(b, err)
	r.Header.Set("Content-Type", "application/json")
	r.ContentLength = int64(len(bd.req))
	rd := &reusableBody{}
	r.Body = rd
	w := &recorder{header: http.Header{}}
	b.SetBytes(int64(len(bd.req)))
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(bd.req)
		w.reset()
		h.ServeHTTP(w, r)
		if w.status != http.StatusOK {
			b.Fatalf("%s: status %d: %s", bd.name, w.status, w.body.String())
		}
	}
	b.ReportMetric(float64(len(bd.req)), "req-bytes") // after the loop, which resets the metrics

}

// benchFloor decodes the request into `any` and encodes the handler's
// response (decoded once into `any`) with encoding/json, as the handler does
// (HTML escaping off, trailing newline).
func benchFloor(b *testing.B, bd body, resp []byte) {
	var out any
	require.NoError(b, json.Unmarshal(resp, &out))
	var buf bytes.Buffer
	b.SetBytes(int64(len(bd.req)))
	b.ReportAllocs()
	for b.Loop() {
		var in any
		if err := json.Unmarshal(bd.req, &in); err != nil {
			b.Fatal(err)
		}
		buf.Reset()
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBodiesAreAnswered keeps the benchmark bodies honest in `go test ./...`:
// each is answered 200 with a response that names its budget or workload.
func TestBodiesAreAnswered(t *testing.T) {
	for _, bd := range bodies(t) {
		t.Run(bd.name, func(t *testing.T) {
			resp := serve(t, newHandler(t, bd.now, bd.maxBody), bd)
			var v map[string]any
			require.NoError(t, json.Unmarshal(resp, &v))
			require.NotEmpty(t, v)
		})
	}
}

func TestTheClusterBudgetsBodyBlocksItsNamespaceOnce(t *testing.T) {
	bd := clusterBudgetsBody(t)
	req := mustDecode(t, bd.req)
	require.Len(t, dig(req, "related", "ClusterLLMCostBudget.llmbudget.dev/v1alpha1"), clusterBudgets)
	resp := mustDecode(t, serve(t, newHandler(t, bd.now, 0), bd))
	require.Equal(t, "true", dig(resp, "labels", "llmbudget.dev/blocked"))
	require.Equal(t, "ClusterLLMCostBudget ml-department is OverBudget (6100.25 of 5000.00 USD this Monthly period, "+
		"ends 2027-01-01T00:00:00Z)", dig(resp, "annotations", "llmbudget.dev/blocked-by"),
		"only dept-000 selects ml-research (its message is the captured budget's)")
}

func TestSyntheticBodiesHaveTheirAdvertisedShape(t *testing.T) {
	ledger := mustDecode(t, ledgerBody(t).req)
	data := dig(ledger, "related", "ConfigMap.v1", "team-ml/llm-spend", "data").(map[string]any)
	require.Len(t, data, ledgerDays)
	require.Len(t, dig(ledger, "parent", "spec", "thresholds"), 10)
	require.Len(t, dig(ledger, "parent", "status", "thresholds"), 10, "the status of a previous sync is fed back")
	for k, v := range data {
		require.True(t, strings.HasPrefix(k, "spend-"), k)
		require.True(t, strings.HasPrefix(v.(string), "{"), "value %q is a JSON object", v)
	}
	events := mustDecode(t, eventsBody(t).req)
	require.Len(t, dig(events, "children", "Event.v1"), 20)
}

func newHandler(t testing.TB, now time.Time, maxBody int64) http.Handler {
	t.Helper()
	h, err := controller.NewRouter(metacontroller.Config{
		Now:          func() time.Time { return now },
		Logger:       slog.New(slog.NewJSONHandler(io.Discard, nil)),
		MaxBodyBytes: maxBody,
	})
	require.NoError(t, err)
	return h
}

// serve answers bd once and returns the response body, which must be 200.
func serve(t testing.TB, h http.Handler, bd body) []byte {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, bd.path, bytes.NewReader(bd.req))
	require.NoError(t, err)
	r.Header.Set("Content-Type", "application/json")
	w := &recorder{header: http.Header{}}
	h.ServeHTTP(w, r)
	require.Equal(t, http.StatusOK, w.status, "%s: %s", bd.name, w.body.String())
	return bytes.Clone(w.body.Bytes())
}

// bodies lists every capture and the synthetic bodies, in a stable order.
func bodies(t testing.TB) []body {
	t.Helper()
	reqs, err := filepath.Glob(filepath.Join(fixtures, "*", "*", "capture-*.request.json"))
	require.NoError(t, err)
	require.NotEmpty(t, reqs)
	sort.Strings(reqs)
	var out []body
	for _, f := range reqs {
		rel, err := filepath.Rel(fixtures, f)
		require.NoError(t, err)
		name := strings.TrimSuffix(filepath.ToSlash(rel), ".request.json")
		parts := strings.Split(name, "/")
		req, err := os.ReadFile(f)
		require.NoError(t, err)
		out = append(out, body{name: name, path: "/" + parts[0] + "/" + parts[1], req: req, now: captureTime})
	}
	return append(append(out, ledgerBody(t), eventsBody(t), clusterBudgetsBody(t)), recordBodies(t)...)
}

const (
	baseCapture = "budget/sync/capture-over-budget-with-children"
	// A cluster of 1,000 namespaces under 100 department budgets of 10 namespaces each: every namespace's sync
	// is handed all 100 (customize relates every ClusterLLMCostBudget), each with its 10 namespaces in status.
	clusterBudgets      = 100
	namespacesPerBudget = 10
	ledgerDays          = 366
	eventCount          = 20
)

func readCapture(t testing.TB, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtures, filepath.FromSlash(name)+".request.json"))
	require.NoError(t, err)
	return mustDecode(t, raw)
}

// ledgerBody is a budget whose spend ConfigMap is a DailyLedger of 366 days
// of JSON-object values (with the managedFields a writer of those keys
// leaves), with 10 thresholds and the status its previous sync wrote: the
// steady state of a large, long-lived budget.
func ledgerBody(t testing.TB) body {
	t.Helper()
	req := readCapture(t, baseCapture)
	spec := dig(req, "parent", "spec").(map[string]any)
	spec["limitUSD"] = "400"
	spec["costSource"] = map[string]any{"configMapName": "llm-spend", "format": "DailyLedger", "keyPrefix": "spend-"}
	spec["tokenLimits"] = map[string]any{"input": 90_000_000, "output": 20_000_000, "total": 100_000_000}
	var ths []any
	for _, p := range []int{10, 25, 50, 75, 80, 90, 100} {
		ths = append(ths, map[string]any{"percent": p, "basis": "Actual"})
	}
	for _, p := range []int{80, 100, 150} {
		ths = append(ths, map[string]any{"percent": p, "basis": "Forecasted"})
	}
	spec["thresholds"] = ths

	cm := dig(req, "related", "ConfigMap.v1", "team-ml/llm-spend").(map[string]any)
	data := map[string]any{}
	fields := map[string]any{".": map[string]any{}}
	day := captureTime.AddDate(0, 0, 1-ledgerDays)
	for i := range ledgerDays {
		key := "spend-" + day.AddDate(0, 0, i).Format(time.DateOnly)
		data[key] = fmt.Sprintf(`{"costUSD": "%d.%06d", "inputTokens": %d, "outputTokens": %d}`,
			9+i%7, (i*7919)%1_000_000, 1_000_000+i*1013, 200_000+i*317)
		fields["f:"+key] = map[string]any{}
	}
	cm["data"] = data
	cm["metadata"].(map[string]any)["managedFields"] = append(
		dig(cm, "metadata", "managedFields").([]any),
		map[string]any{
			"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "cost-pipeline", "operation": "Apply",
			"time": "2026-11-29T07:00:00Z", "fieldsV1": map[string]any{"f:data": fields},
		})

	// Steady state: Metacontroller sends back the status the last sync wrote.
	delete(dig(req, "parent").(map[string]any), "status")
	bd := body{
		name: "budget/sync/synthetic-ledger-366d-10-thresholds", path: "/budget/sync",
		req: mustEncode(t, req), now: captureTime,
	}
	first := mustDecode(t, serve(t, newHandler(t, bd.now, 0), bd))
	dig(req, "parent").(map[string]any)["status"] = first["status"]
	bd.req = mustEncode(t, req)
	return bd
}

// clusterBudgetsBody is the namespace sync of ml-research among 1,000 namespaces and 100 cluster budgets: the
// captured ml-department budget, copied 100 times as dept-000..099, each selecting 10 namespaces (status.namespaces
// and, for the even ones, which block, status.enforcement.namespaces); dept-000 selects ml-research.
func clusterBudgetsBody(t testing.TB) body {
	t.Helper()
	req := readCapture(t, "namespace/sync/capture-cluster-budget-blocks")
	group := dig(req, "related", "ClusterLLMCostBudget.llmbudget.dev/v1alpha1").(map[string]any)
	probe := mustEncode(t, group["ml-department"])
	budgets := map[string]any{}
	for i := range clusterBudgets {
		b := mustDecode(t, probe)
		name := fmt.Sprintf("dept-%03d", i)
		b["metadata"].(map[string]any)["name"] = name
		b["metadata"].(map[string]any)["uid"] = fmt.Sprintf("5f0c1a2e-7ab2-442d-9576-%012d", i)
		st := b["status"].(map[string]any)
		row := mustEncode(t, dig(st, "namespaces").([]any)[0])
		var names, rows []any
		for j := range namespacesPerBudget {
			ns := fmt.Sprintf("ns-%04d", i*namespacesPerBudget+j)
			if i == 0 && j == 0 {
				ns = "ml-research"
			}
			r := mustDecode(t, row)
			r["namespace"], r["sharePercent"] = ns, 10
			names, rows = append(names, ns), append(rows, r)
		}
		st["namespaces"], st["namespaceCount"] = rows, namespacesPerBudget
		enf := st["enforcement"].(map[string]any)
		enf["namespaces"] = names
		if i%2 == 1 {
			st["enforcement"] = map[string]any{"blocking": false, "reason": "the budget is UnderBudget"}
		}
		budgets[name] = b
	}
	req["related"].(map[string]any)["ClusterLLMCostBudget.llmbudget.dev/v1alpha1"] = budgets
	return body{
		name: "namespace/sync/synthetic-100-cluster-budgets", path: "/namespace/sync", req: mustEncode(t, req),
		now: captureTime,
	}
}

// eventsBody is the over-budget capture with 20 observed Event children,
// each as the API server returns it (managedFields, owner reference,
// last-applied annotation).
func eventsBody(t testing.TB) body {
	t.Helper()
	req := readCapture(t, baseCapture)
	group := dig(req, "children", "Event.v1").(map[string]any)
	probe := mustEncode(t, group["team-ml/chatbot.probe"])
	events := map[string]any{}
	for i := range eventCount {
		ev := mustDecode(t, probe)
		md := ev["metadata"].(map[string]any)
		name := fmt.Sprintf("chatbot.threshold-%d-actual.%d", 5*(i+1), 1795849200+60*i)
		md["name"] = name
		md["uid"] = fmt.Sprintf("714a7581-7ab2-442d-9576-%012d", i)
		md["resourceVersion"] = fmt.Sprint(500 + i)
		ev["message"] = fmt.Sprintf("usage reached %d%% of the limit of 500.00 USD", 5*(i+1))
		events["team-ml/"+name] = ev
	}
	req["children"].(map[string]any)["Event.v1"] = events
	return body{
		name: "budget/sync/synthetic-parent-20-events", path: "/budget/sync", req: mustEncode(t, req), now: captureTime,
	}
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func mustDecode(t testing.TB, raw []byte) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(raw, &v))
	return v
}

func mustEncode(t testing.TB, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return raw
}

// reusableBody is a request body that can be rewound without allocating.
type reusableBody struct{ bytes.Reader }

func (*reusableBody) Close() error { return nil }

// recorder is a minimal http.ResponseWriter that keeps the last response.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}

func (w *recorder) reset() {
	clear(w.header)
	w.status = 0
	w.body.Reset()
}
