//go:build integration

package integration_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// recordGroup is the object-map key under which Metacontroller relates TaskRecords.
const recordGroup = "TaskRecord.kelos.dev/v1alpha2"

// installKelosCRD installs Kelos's TaskRecord CRD, as copied into test/kelos/crds.
func installKelosCRD(t *testing.T) {
	t.Helper()
	kube.InstallCRDs(t, filepath.Join(repoRoot, "test", "kelos", "crds", "taskrecords.kelos.dev.yaml"))
}

// relatedRecords reads the TaskRecords of a request file (a wire capture or a fixture), by object-map key.
func relatedRecords(t *testing.T, file string) map[string]map[string]any {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var req struct {
		Related map[string]map[string]map[string]any `json:"related"`
	}
	require.NoError(t, json.Unmarshal(raw, &req), file)
	return req.Related[recordGroup]
}

// asWritten is a stored record as a writer would create it again: name, namespace, labels and spec.
func asWritten(t *testing.T, rec map[string]any) string {
	t.Helper()
	md := rec["metadata"].(map[string]any)
	obj := map[string]any{
		"apiVersion": rec["apiVersion"], "kind": rec["kind"], "spec": rec["spec"],
		"metadata": map[string]any{"name": md["name"], "namespace": md["namespace"], "labels": md["labels"]},
	}
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	return string(data)
}

func TestTheKelosCRDAcceptsTheRecordsTheFixturesUse(t *testing.T) {
	installKelosCRD(t)
	captures, err := filepath.Glob(filepath.Join(repoRoot, "test", "metacontroller", "wire", "*taskrecord*.request.json"))
	require.NoError(t, err)
	fixture := func(name string) string {
		return filepath.Join(repoRoot, "test", "fixtures", filepath.FromSlash(name)+".request.json")
	}
	accepted := 0
	for _, file := range append(captures, fixture("budget/sync/taskrecord-cost-a-json-number")) {
		for key, rec := range relatedRecords(t, file) {
			t.Run(relative(file)+"/"+key, func(t *testing.T) {
				kube.EnsureNamespace(t, rec["metadata"].(map[string]any)["namespace"].(string))
				out, err := kube.ApplyYAMLErr(t, "", asWritten(t, rec), "--dry-run=server")
				require.NoError(t, err, out)
				accepted++
			})
		}
	}
	require.GreaterOrEqual(t, accepted, 15, "the captures' records (including costUSD 1e31) and the number cost")

	// What the fixtures call records the API server would never send: it refuses each.
	for _, tc := range []struct{ fixture, key, refusal string }{
		{"budget/sync/taskrecord-cost-not-a-quantity", "team-agents/triage-record", "spec.usage.costUSD"},
		{"budget/sync/taskrecord-tokens-negative", "team-agents/triage-record", "spec.usage.inputTokens"},
		{"budget/sync/taskrecord-without-completion-time-counts-nothing", "team-agents/refactor-record",
			"spec.completionTime: Required value"},
		{"clusterbudget/sync/taskrecord-unreadable-closed", "team-bots/bots-digest-record",
			"costUSD must be non-negative"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			rec := relatedRecords(t, fixture(tc.fixture))[tc.key]
			require.NotNil(t, rec)
			out, err := kube.ApplyYAMLErr(t, "", asWritten(t, rec), "--dry-run=server")
			require.Error(t, err, "the API server admitted %s", tc.key)
			assert.Contains(t, out, tc.refusal)
		})
	}
}

func TestEvalOverTaskRecordsAnswersAsTheHookOverTheStoredRecords(t *testing.T) {
	installBudgetCRD(t)
	installKelosCRD(t)
	kube.EnsureNamespace(t, "team-ml")
	example := filepath.Join(repoRoot, "examples", "kelos-records")
	files, err := cluster.FindYAML(example)
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		kube.ApplyYAML(t, "", string(data))
	}
	t.Cleanup(func() {
		for _, f := range files {
			_, _, _ = kube.Run(t.Context(), "", "delete", "-f", f, "--ignore-not-found", "--wait=false")
		}
	})
	const now = "2026-11-20T12:00:00Z"
	llmbudget := buildLLMBudget(t)

	// What Metacontroller would send: the stored budget and the stored records its selector matches.
	var parent map[string]any
	require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "get", "llmcostbudgets.llmbudget.dev", "-n", "team-ml",
		"coding-agents", "-o", "json")), &parent))
	var list struct {
		Items []map[string]any `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "get", "taskrecords.kelos.dev", "-n", "team-ml",
		"-l", "team=platform", "-o", "json")), &list))
	require.Len(t, list.Items, 4)
	// eval dates what a budget's first sync finds by the budget's creation, which a file lacks: it takes the
	// evaluation instant. The stored budget was created at the real clock's time, after the fixed instant, so
	// the hook is given the same creation as eval assumes.
	parent["metadata"].(map[string]any)["creationTimestamp"] = now
	records := map[string]any{}
	for _, r := range list.Items {
		records["team-ml/"+r["metadata"].(map[string]any)["name"].(string)] = r
	}
	// Metacontroller relates the budget's Namespace too, for its NamespaceLabel enforcement point.
	var namespace map[string]any
	require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "get", "namespace", "team-ml", "-o", "json")), &namespace))
	req, err := json.Marshal(map[string]any{
		"parent": parent, "children": map[string]any{"Event.v1": map[string]any{}, "ResourceQuota.v1": map[string]any{}},
		"related":    map[string]any{recordGroup: records, "Namespace.v1": map[string]any{"team-ml": namespace}},
		"finalizing": false,
	})
	require.NoError(t, err)
	hook := serveHooks(t, llmbudget, now)
	resp, err := http.Post(hook+"/budget/sync", "application/json", bytes.NewReader(req))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var answer map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))

	out, err := exec.Command(llmbudget, "eval", "-f", example, "--now="+now).CombinedOutput()
	require.NoError(t, err, "llmbudget eval: %s", out)
	var evaluated map[string]any
	require.NoError(t, yaml.Unmarshal(out, &evaluated), "%s", out)

	assert.Equal(t, "OverBudget", dig(answer, "status", "state"))
	assert.Equal(t, "8.875", dig(answer, "status", "observedSpendUSD"))
	// Both ran at the same instant over the same records: the status is the same, field for field.
	want, got := toJSON(t, evaluated["status"]), toJSON(t, answer["status"])
	assert.JSONEq(t, want, got)
}

// serveHooks runs llmbudget serve at the fixed instant now on a free loopback port until the test ends, and
// returns its URL once it is ready.
func serveHooks(t *testing.T, llmbudget, now string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	cmd := exec.Command(llmbudget, "serve", "--addr", addr, "--metrics-addr", "", "--now", now)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr
	cluster.WaitFor(t, 30*time.Second, "llmbudget serve to be ready", func() (bool, string) {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false, fmt.Sprint(err, "; ", strings.TrimSpace(logs.String()))
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return url
}

// dig walks a decoded JSON object by keys.
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
