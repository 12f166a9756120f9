//go:build integration

package integration_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// The hooks never talk to the API server: Metacontroller creates what they answer. These
// tests take the golden responses of test/fixtures (the hooks' answers at a fixed clock,
// checked by test/golden) and do with them what Metacontroller would, against the real API
// server, so an object it would refuse or store differently fails here.

// hookResponse is the part of a composite or decorator hook response these tests use.
type hookResponse struct {
	Status      map[string]any     `json:"status"`
	Children    []map[string]any   `json:"children"`
	Attachments []map[string]any   `json:"attachments"`
	Labels      map[string]*string `json:"labels"`
	Annotations map[string]*string `json:"annotations"`
}

// readResponse reads a golden response; rel is relative to test/fixtures.
func readResponse(t *testing.T, rel string) hookResponse {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "test", "fixtures", filepath.FromSlash(rel)))
	require.NoError(t, err)
	var r hookResponse
	require.NoError(t, json.Unmarshal(data, &r), rel)
	return r
}

func TestEventsAndQuotasOfEveryGoldenResponseAreStoredAsSent(t *testing.T) {
	var files []string
	for _, pattern := range []string{
		"budget/sync/*.response.json", "budget/finalize/*.response.json", "workload/sync/*.response.json",
	} {
		matches, err := filepath.Glob(filepath.Join(repoRoot, "test", "fixtures", filepath.FromSlash(pattern)))
		require.NoError(t, err)
		files = append(files, matches...)
	}
	require.NotEmpty(t, files, "no golden responses under test/fixtures")

	objects := 0
	for _, file := range files {
		rel, err := filepath.Rel(filepath.Join(repoRoot, "test", "fixtures"), file)
		require.NoError(t, err)
		r := readResponse(t, rel)
		objs := append(r.Children, r.Attachments...)
		if len(objs) == 0 {
			continue
		}
		objects += len(objs)
		t.Run(strings.TrimSuffix(filepath.ToSlash(rel), ".response.json"), func(t *testing.T) {
			// Children of different fixtures share names (chatbot.blocking.<time>), so
			// each fixture gets its own namespace.
			ns := kube.Namespace(t, "hooks-children")
			for _, obj := range objs {
				moveToNamespace(obj, ns)
				desc := describeObject(obj)
				_, err := kube.KubectlErr(t, toJSON(t, obj), "create", "-f", "-")
				if !assert.NoError(t, err, "create %s", desc) {
					continue
				}
				stored := getJSON(t, toJSON(t, obj))
				assert.Empty(t, subsetDiff("", obj, stored), "%s as stored by the API server differs from what the hook sent", desc)
			}
		})
	}
	if objects == 0 {
		t.Fatal("no child or attachment in any golden response under " +
			"test/fixtures/{budget/sync,budget/finalize,workload/sync}")
	}
}

func TestOverBudgetQuotaRefusesNewJobsUntilTheNextPeriodLiftsIt(t *testing.T) {
	// Over budget: the sync hook answers with a ResourceQuota among the children.
	overBudget := readResponse(t, "budget/sync/under-to-over-budget-quota-appears.response.json")
	quotas := childrenOfKind(overBudget.Children, "ResourceQuota")
	require.Len(t, quotas, 1, "the over-budget response holds one ResourceQuota")
	quota := quotas[0]
	ns := kube.Namespace(t, "hooks-quota")
	moveToNamespace(quota, ns)
	name := quota["metadata"].(map[string]any)["name"].(string)
	_, err := kube.KubectlErr(t, toJSON(t, quota), "create", "-f", "-")
	require.NoError(t, err, "create %s", describeObject(quota))

	// The quota admission plugin refuses everything a quota covers ("status unknown") until
	// the quota controller has filled in status.hard.
	hard := quota["spec"].(map[string]any)["hard"].(map[string]any)
	require.NotEmpty(t, hard)
	cluster.WaitFor(t, 60*time.Second, "the quota controller to fill in status.hard of "+name, func() (bool, string) {
		out, err := kube.KubectlErr(t, "", "get", "resourcequota", name, "-n", ns, "-o", "jsonpath={.status.hard}")
		if err != nil || strings.TrimSpace(out) == "" {
			return false, out
		}
		var status map[string]any
		if err := json.Unmarshal([]byte(out), &status); err != nil {
			return false, out
		}
		return len(subsetDiff("status.hard", hard, status)) == 0, out
	})

	// ... so a new Job is refused.
	probe := []string{"create", "job", "probe", "--image=registry.k8s.io/pause:3.10", "-n", ns}
	out, err := kube.KubectlErr(t, "", probe...)
	require.Error(t, err, "a Job must be refused while %s is in place; kubectl said:\n%s", name, out)
	assert.Contains(t, out, "exceeded quota")
	assert.Contains(t, out, name)
	t.Logf("over budget, %s in place: %s", name, strings.TrimSpace(out))

	// Next period: the sync hook no longer wants the quota, and says so with an Event.
	nextPeriod := readResponse(t, "budget/sync/rollover-lifts-the-block.response.json")
	require.Empty(t, childrenOfKind(nextPeriod.Children, "ResourceQuota"), "the block is lifted in the next period")
	assert.Contains(t, reasons(nextPeriod.Children), "Unblocked")

	// Metacontroller deletes a child the hook no longer returns ...
	kube.Kubectl(t, "delete", "resourcequota", name, "-n", ns)

	// ... and the same Job is admitted once the admission plugin's quota cache has caught up.
	cluster.WaitFor(t, 30*time.Second, "a Job to be admitted after "+name+" was deleted", func() (bool, string) {
		out, err := kube.KubectlErr(t, "", probe...)
		return err == nil, out
	})
	t.Logf("next period, %s deleted: %s", name,
		strings.TrimSpace(kube.Kubectl(t, "get", "job", "probe", "-n", ns, "-o", "name")))
}

func TestDecorationsPatchARealDeploymentAndCleanupRemovesThem(t *testing.T) {
	sync := readResponse(t, "workload/sync/budget-over-announces-exceeded.response.json")
	require.NotEmpty(t, sync.Labels, "the sync response sets labels")
	require.NotEmpty(t, sync.Annotations, "the sync response sets annotations")
	events := childrenOfKind(sync.Attachments, "Event")
	require.Len(t, events, 1, "the sync response attaches one BudgetExceeded Event")
	event := events[0]
	involved := event["involvedObject"].(map[string]any)
	require.Equal(t, "apps/v1 Deployment", fmt.Sprint(involved["apiVersion"], " ", involved["kind"]),
		"the fixture decorates a Deployment")
	name := involved["name"].(string)

	ns := kube.Namespace(t, "hooks-decorate")
	_, err := kube.KubectlErr(t, deploymentJSON(t, name, ns), "create", "-f", "-")
	require.NoError(t, err)
	before := readDeployment(t, ns, name)
	replicaSets := settledReplicaSets(t, ns, name)
	require.Len(t, replicaSets, 1, "the deployment controller rolled out the new Deployment")

	// Sync: the labels and annotations the decorator answers, applied as a merge patch.
	patchDecorations(t, ns, name, sync)
	decorated := readDeployment(t, ns, name)
	assertDecorations(t, "label", sync.Labels, decorated.Metadata.Labels)
	assertDecorations(t, "annotation", sync.Annotations, decorated.Metadata.Annotations)
	assert.Equal(t, before.Spec, decorated.Spec, "decorating changes no field of the spec")
	// An annotation change bumps a Deployment's generation (the controller copies
	// annotations to its ReplicaSet), but with the same template no rollout starts.
	assert.Equal(t, replicaSets, settledReplicaSets(t, ns, name), "decorating starts no rollout")

	// The BudgetExceeded Event is about this very Deployment: kubectl describe shows it.
	moveToNamespace(event, ns)
	involved["uid"] = decorated.Metadata.UID
	_, err = kube.KubectlErr(t, toJSON(t, event), "create", "-f", "-")
	require.NoError(t, err, "create %s", describeObject(event))
	assert.Empty(t, subsetDiff("", event, getJSON(t, toJSON(t, event))), "%s as stored", describeObject(event))
	described := kube.Kubectl(t, "describe", "deployment", name, "-n", ns)
	assert.Contains(t, described, event["reason"].(string))
	assert.Contains(t, described, event["message"].(string))

	// Cleanup (the label went away, or the workload is being deleted): nulls remove every
	// key that sync set, and only those.
	cleanup := readResponse(t, "workload/finalize/capture-label-removed-decorations-left.response.json")
	patchDecorations(t, ns, name, cleanup)
	cleaned := readDeployment(t, ns, name)
	assert.Empty(t, decorationKeys(cleaned.Metadata.Labels), "labels left after Cleanup")
	assert.Empty(t, decorationKeys(cleaned.Metadata.Annotations), "annotations left after Cleanup")
	assert.Equal(t, "chatbot", cleaned.Metadata.Labels[budgetLabel], "Cleanup leaves the user's own label alone")
	assert.Equal(t, name, cleaned.Metadata.Labels["app"])
	assert.Equal(t, before.Spec, cleaned.Spec, "Cleanup changes no field of the spec")
}

// budgetLabel is the user's label that puts a workload under a budget.
const budgetLabel = "llmbudget.dev/budget"

// deployment is what TestDecorationsPatchARealDeploymentAndCleanupRemovesThem reads of a
// Deployment.
type deployment struct {
	Metadata struct {
		UID         string            `json:"uid"`
		Generation  int64             `json:"generation"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec   map[string]any `json:"spec"`
	Status struct {
		ObservedGeneration int64 `json:"observedGeneration"`
	} `json:"status"`
}

// settledReplicaSets waits until the deployment controller has seen the Deployment's
// latest generation and lists the names of its ReplicaSets.
func settledReplicaSets(t *testing.T, ns, name string) []string {
	t.Helper()
	cluster.WaitFor(t, 30*time.Second, "the deployment controller to observe deployment "+name, func() (bool, string) {
		d := readDeployment(t, ns, name)
		return d.Status.ObservedGeneration == d.Metadata.Generation,
			fmt.Sprintf("generation %d, observedGeneration %d", d.Metadata.Generation, d.Status.ObservedGeneration)
	})
	var list struct {
		Items []struct {
			Metadata struct {
				Name            string `json:"name"`
				OwnerReferences []struct {
					UID string `json:"uid"`
				} `json:"ownerReferences"`
			} `json:"metadata"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "get", "replicasets", "-n", ns, "-o", "json")), &list))
	uid := readDeployment(t, ns, name).Metadata.UID
	var names []string
	for _, rs := range list.Items {
		for _, owner := range rs.Metadata.OwnerReferences {
			if owner.UID == uid {
				names = append(names, rs.Metadata.Name)
			}
		}
	}
	sort.Strings(names)
	return names
}

func readDeployment(t *testing.T, ns, name string) deployment {
	t.Helper()
	var d deployment
	require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "get", "deployment", name, "-n", ns, "-o", "json")), &d))
	require.NotEmpty(t, d.Spec)
	return d
}

// patchDecorations applies a decorator response's labels and annotations to a Deployment
// as one JSON merge patch, where null removes a key. A map the response leaves out is left
// out of the patch (a null map would remove every label).
func patchDecorations(t *testing.T, ns, name string, r hookResponse) {
	t.Helper()
	md := map[string]any{}
	if r.Labels != nil {
		md["labels"] = r.Labels
	}
	if r.Annotations != nil {
		md["annotations"] = r.Annotations
	}
	require.NotEmpty(t, md, "the response decorates nothing")
	kube.Kubectl(t, "patch", "deployment", name, "-n", ns, "--type=merge", "-p", toJSON(t, map[string]any{"metadata": md}))
}

// assertDecorations checks that every key with a value is set to it and every null key is
// absent.
func assertDecorations(t *testing.T, what string, want map[string]*string, got map[string]string) {
	t.Helper()
	for k, v := range want {
		if v == nil {
			assert.NotContains(t, got, k, "%s %s is removed", what, k)
			continue
		}
		if assert.Contains(t, got, k, "%s %s is set", what, k) {
			assert.Equal(t, *v, got[k], "%s %s", what, k)
		}
	}
}

// decorationKeys lists the llmbudget.dev/ keys of m other than the user's budget label.
func decorationKeys(m map[string]string) []string {
	var keys []string
	for k := range m {
		if strings.HasPrefix(k, "llmbudget.dev/") && k != budgetLabel {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// deploymentJSON is a Deployment that draws on budget chatbot.
func deploymentJSON(t *testing.T, name, ns string) string {
	t.Helper()
	labels := map[string]any{"app": name}
	return toJSON(t, map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name":      name,
			"namespace": ns,
			"labels":    map[string]any{"app": name, budgetLabel: "chatbot"},
		},
		"spec": map[string]any{
			"replicas": 1,
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{
					"name": "app", "image": "registry.k8s.io/pause:3.10",
				}}},
			},
		},
	})
}

// moveToNamespace moves obj from the namespace it names (the fixtures' team-ml, which
// tests do not share) to ns, and with it the object an Event is about when that object was
// in the same namespace: an Event whose involvedObject is elsewhere stays so, for the API
// server to judge.
func moveToNamespace(obj map[string]any, ns string) {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return
	}
	from := md["namespace"]
	md["namespace"] = ns
	if ref, ok := obj["involvedObject"].(map[string]any); ok && ref["namespace"] == from {
		ref["namespace"] = ns
	}
}

func childrenOfKind(objs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

func reasons(objs []map[string]any) []string {
	var out []string
	for _, o := range childrenOfKind(objs, "Event") {
		if r, ok := o["reason"].(string); ok {
			out = append(out, r)
		}
	}
	return out
}

func describeObject(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v/%v", obj["kind"], md["namespace"], md["name"])
}

// getJSON reads back from the API server the object that manifest names (by its
// apiVersion, kind, namespace and name), as JSON.
func getJSON(t *testing.T, manifest string) map[string]any {
	t.Helper()
	out, _, err := kube.Run(t.Context(), manifest, "get", "-f", "-", "-o", "json")
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &obj))
	// kubectl get -f prints a List even for a single object.
	if obj["kind"] == "List" {
		items, _ := obj["items"].([]any)
		require.Len(t, items, 1, "kubectl get -f - -o json for one object:\n%s", out)
		obj, _ = items[0].(map[string]any)
	}
	return obj
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

// subsetDiff lists, one line per difference, where got lacks a field of want or holds it
// with another value; fields only got has (uid, resourceVersion, managedFields, eventTime,
// reportingComponent, ...) are what the server adds and are ignored. Strings that both
// parse as RFC 3339 times are compared as instants; a null in want means absent or null.
func subsetDiff(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %s", orRoot(path), show(got))}
		}
		var diffs []string
		for _, k := range sortedKeys(w) {
			gv, present := g[k]
			if !present && w[k] != nil {
				diffs = append(diffs, fmt.Sprintf("%s: missing, want %s", path+"."+k, show(w[k])))
				continue
			}
			diffs = append(diffs, subsetDiff(path+"."+k, w[k], gv)...)
		}
		return diffs
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %s, got %s", orRoot(path), show(want), show(got))}
		}
		var diffs []string
		for i := range w {
			diffs = append(diffs, subsetDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return diffs
	case string:
		if g, ok := got.(string); ok && (g == w || sameInstant(w, g)) {
			return nil
		}
	default:
		if want == got {
			return nil
		}
	}
	return []string{fmt.Sprintf("%s: want %s, got %s", orRoot(path), show(want), show(got))}
}

func sameInstant(a, b string) bool {
	ta, errA := time.Parse(time.RFC3339Nano, a)
	tb, errB := time.Parse(time.RFC3339Nano, b)
	return errA == nil && errB == nil && ta.Equal(tb)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func orRoot(path string) string {
	if path == "" {
		return "."
	}
	return path
}

func show(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
