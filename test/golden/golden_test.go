// Package golden replays hook requests from test/fixtures through the real
// router with a fixed clock and compares each response with its golden file.
// The requests are crafted from Metacontroller's captures (craft_test.go).
// Run `go test ./test/golden -update` (or `make fixtures`) to rewrite the
// requests and then the goldens after an intended change, and review the diff
// like code.
package golden_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

var update = flag.Bool("update", false, "rewrite the golden response files")

// captureTime is when the wire captures were taken; fixtures without a .now
// file are evaluated at this instant.
var captureTime = time.Date(2026, 11, 29, 7, 30, 0, 0, time.UTC)

const fixtures = "../fixtures"

type fixture struct {
	name    string // e.g. budget/sync/warning-threshold-crossed
	path    string // URL path
	request string // file
	golden  string // file
	now     time.Time
}

func loadFixtures(t testing.TB) []fixture {
	t.Helper()
	reqs, err := filepath.Glob(filepath.Join(fixtures, "*", "*", "*.request.json"))
	require.NoError(t, err)
	require.NotEmpty(t, reqs, "no fixtures found")
	sort.Strings(reqs)
	var out []fixture
	for _, req := range reqs {
		rel, err := filepath.Rel(fixtures, req)
		require.NoError(t, err)
		name := strings.TrimSuffix(filepath.ToSlash(rel), ".request.json")
		f := fixture{
			name:    name,
			path:    hookPath(name),
			request: req,
			golden:  strings.TrimSuffix(req, ".request.json") + ".response.json",
			now:     captureTime,
		}
		if b, err := os.ReadFile(strings.TrimSuffix(req, ".request.json") + ".now"); err == nil {
			f.now, err = time.Parse(time.RFC3339, strings.TrimSpace(string(b)))
			require.NoError(t, err, "%s.now", name)
		}
		out = append(out, f)
	}
	return out
}

// hookPath is the route a fixture's request goes to: the first two parts of its name, like /budget/sync.
func hookPath(name string) string {
	return "/" + strings.Join(strings.SplitN(name, "/", 3)[:2], "/")
}

// serve posts body to path through the real router, its clock stopped at now, as Metacontroller would.
func serve(now time.Time, path string, body []byte) (*httptest.ResponseRecorder, error) {
	h, err := controller.NewRouter(metacontroller.Config{
		Now:    func() time.Time { return now },
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, err
	}
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w, nil
}

func post(t testing.TB, f fixture) *httptest.ResponseRecorder {
	t.Helper()
	body, err := os.ReadFile(f.request)
	require.NoError(t, err)
	w, err := serve(f.now, f.path, body)
	require.NoError(t, err)
	return w
}

func TestEveryFixtureAnswersItsGoldenResponse(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			w := post(t, f)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			got := pretty(t, w.Body.Bytes())
			if *update {
				require.NoError(t, os.WriteFile(f.golden, got, 0o644))
			}
			want, err := os.ReadFile(f.golden)
			require.NoError(t, err, "missing golden: run go test ./test/golden -update")
			assert.Equal(t, string(want), string(got))
			assertMetacontrollerDecodes(t, f.path, w.Body.Bytes())
		})
	}
}

func TestResponsesAreByteIdenticalForIdenticalInput(t *testing.T) {
	for _, f := range loadFixtures(t) {
		a, b := post(t, f), post(t, f)
		assert.Equal(t, a.Body.String(), b.Body.String(), f.name)
	}
}

func pretty(t *testing.T, body []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, json.Indent(&out, bytes.TrimSpace(body), "", "  "))
	out.WriteByte('\n')
	return out.Bytes()
}

// These mirror Metacontroller v4.17.2's v2 response types field for field;
// Metacontroller decodes responses strictly, so an unknown field fails a call.
type (
	compositeResponse struct {
		Status             map[string]any   `json:"status"`
		Children           []map[string]any `json:"children"`
		ResyncAfterSeconds float64          `json:"resyncAfterSeconds"`
		Finalized          bool             `json:"finalized"`
	}
	decoratorResponse struct {
		Labels             map[string]*string `json:"labels"`
		Annotations        map[string]*string `json:"annotations"`
		Status             map[string]any     `json:"status"`
		Attachments        []map[string]any   `json:"attachments"`
		ResyncAfterSeconds float64            `json:"resyncAfterSeconds"`
		Finalized          bool               `json:"finalized"`
	}
	customizeResponse struct {
		RelatedResources []struct {
			APIVersion        string         `json:"apiVersion"`
			Resource          string         `json:"resource"`
			LabelSelector     map[string]any `json:"labelSelector"`
			NamespaceSelector map[string]any `json:"namespaceSelector"`
			Namespace         string         `json:"namespace"`
			Names             []string       `json:"names"`
		} `json:"relatedResources"`
	}
)

func assertMetacontrollerDecodes(t *testing.T, path string, body []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var objs []map[string]any
	switch {
	case strings.HasSuffix(path, "/customize"):
		var r customizeResponse
		require.NoError(t, dec.Decode(&r))
	case strings.HasPrefix(path, "/budget/"), strings.HasPrefix(path, "/clusterbudget/"):
		var r compositeResponse
		require.NoError(t, dec.Decode(&r))
		objs = r.Children
	default:
		var r decoratorResponse
		require.NoError(t, dec.Decode(&r))
		assert.Nil(t, r.Status, "the decorator never writes a workload's status")
		objs = r.Attachments
	}
	for _, o := range objs {
		assert.NotEmpty(t, o["apiVersion"])
		assert.NotEmpty(t, o["kind"])
		md, _ := o["metadata"].(map[string]any)
		require.NotNil(t, md)
		assert.NotEmpty(t, md["name"])
		// Metacontroller needs the namespace of every namespaced child of a cluster-scoped parent.
		assert.NotEmpty(t, md["namespace"])
	}
}
