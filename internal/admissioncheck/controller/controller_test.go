package controller

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// write is one patch the controller sent.
type write struct {
	resource, subresource, namespace, name string
	patchType                              types.PatchType
	fieldManager                           string
	force                                  bool
	body                                   map[string]any
}

func workload(ns, name string, conditions []any, checks ...map[string]any) *unstructured.Unstructured {
	entries := make([]any, len(checks))
	for i, c := range checks {
		entries[i] = c
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
		"metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": "7"},
		"status":   map[string]any{"conditions": conditions, "admissionChecks": entries},
	}}
}

func check(name, state, message string) map[string]any {
	return map[string]any{"name": name, "state": state, "message": message,
		"lastTransitionTime": "2026-11-30T11:00:00Z"}
}

func condition(typ string) []any {
	return []any{map[string]any{"type": typ, "status": "True", "reason": typ, "message": "",
		"lastTransitionTime": "2026-11-30T11:00:00Z"}}
}

func admissionCheck(name, controllerName string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
		"metadata": map[string]any{"name": name, "generation": int64(3)},
		"spec":     map[string]any{"controllerName": controllerName},
	}}
}

const blockMessage = "LLMCostBudget team-ml/chatbot is OverBudget (512.00 of 500.00 USD this Monthly period, " +
	"ends 2026-12-01T00:00:00+01:00)"

func blockingBudget() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "llmbudget.dev/v1alpha1", "kind": "LLMCostBudget",
		"metadata": map[string]any{"name": "chatbot", "namespace": "team-ml"},
		"status": map[string]any{
			"period":      map[string]any{"start": "2026-11-01T00:00:00+01:00", "end": "2026-12-01T00:00:00+01:00"},
			"enforcement": map[string]any{"blocking": true, "scope": "Namespace", "message": blockMessage},
		},
	}}
}

// run runs a controller over objs until it has written want patches (or 10 s have passed), and returns them.
func run(t *testing.T, want int, objs ...runtime.Object) []write {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{
		Workloads: "WorkloadList", AdmissionChecks: "AdmissionCheckList",
		budgets: "LLMCostBudgetList", clusterBudgets: "ClusterLLMCostBudgetList", jobs: "JobList",
	}
	dyn := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
	var mu sync.Mutex
	var writes []write
	dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchActionImpl)
		var body map[string]any
		require.NoError(t, json.Unmarshal(p.Patch, &body))
		mu.Lock()
		defer mu.Unlock()
		writes = append(writes, write{resource: p.Resource.Resource, subresource: p.Subresource,
			namespace: p.Namespace, name: p.Name, patchType: p.PatchType, fieldManager: p.PatchOptions.FieldManager,
			force: p.PatchOptions.Force != nil && *p.PatchOptions.Force, body: body})
		return true, &unstructured.Unstructured{Object: map[string]any{}}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	c := New(dyn, Config{Now: func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(writes)
		mu.Unlock()
		if n >= want && c.Synced() || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Anything else it would write comes within this.
	time.Sleep(200 * time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	mu.Lock()
	defer mu.Unlock()
	return writes
}

func workloadWrites(ws []write) map[string]write {
	out := map[string]write{}
	for _, w := range ws {
		if w.resource == "workloads" {
			out[w.namespace+"/"+w.name] = w
		}
	}
	return out
}

func TestTheControllerWritesOnlyItsOwnEntryOfTheWorkloadsItMayHold(t *testing.T) {
	objs := []runtime.Object{
		admissionCheck("llm-budget", "llmbudget.dev/budget"),
		admissionCheck("provisioning", "kueue.x-k8s.io/provisioning-request"),
		blockingBudget(),
		workload("team-ml", "held", condition("QuotaReserved"), check("llm-budget", "Pending", ""),
			check("provisioning", "Pending", "")),
		workload("team-web", "free", condition("QuotaReserved"), check("llm-budget", "Pending", "")),
		workload("team-ml", "admitted", condition("Admitted"), check("llm-budget", "Ready", "")),
		workload("team-ml", "current", nil, check("llm-budget", "Pending", "Held by "+blockMessage+".")),
		workload("team-ml", "foreign", nil, check("provisioning", "Pending", "")),
	}
	ws := workloadWrites(run(t, 3, objs...))

	held, ok := ws["team-ml/held"]
	require.True(t, ok, "the held workload's entry is written")
	assert.Equal(t, "status", held.subresource)
	assert.Equal(t, types.ApplyPatchType, held.patchType)
	assert.Equal(t, FieldManager, held.fieldManager)
	assert.True(t, held.force, "applied with force, as Kueue's own check controllers do")
	assert.Equal(t, map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
		"metadata": map[string]any{"name": "held", "namespace": "team-ml", "resourceVersion": "7"},
		"status": map[string]any{"admissionChecks": []any{map[string]any{
			"name": "llm-budget", "state": "Pending", "message": "Held by " + blockMessage + ".",
			// The state did not change: Kueue's transition time stays.
			"lastTransitionTime": "2026-11-30T11:00:00Z",
		}}},
	}, held.body, "only its own entry, conditional on the copy it decided from")

	free, ok := ws["team-web/free"]
	require.True(t, ok, "a workload no budget covers is let go")
	entry := free.body["status"].(map[string]any)["admissionChecks"].([]any)[0].(map[string]any)
	assert.Equal(t, "Ready", entry["state"])
	assert.Equal(t, "2026-11-30T12:00:00Z", entry["lastTransitionTime"], "a new state is dated now")

	for _, name := range []string{"team-ml/admitted", "team-ml/current", "team-ml/foreign"} {
		assert.NotContains(t, ws, name, "an admitted workload, an entry already right and another "+
			"controller's check are not written")
	}
}

func TestTheControllerMarksOnlyItsOwnAdmissionChecksActive(t *testing.T) {
	ws := run(t, 1, admissionCheck("llm-budget", "llmbudget.dev/budget"),
		admissionCheck("provisioning", "kueue.x-k8s.io/provisioning-request"))
	var checks []write
	for _, w := range ws {
		if w.resource == "admissionchecks" {
			checks = append(checks, w)
		}
	}
	require.Len(t, checks, 1)
	assert.Equal(t, "llm-budget", checks[0].name)
	assert.Equal(t, "status", checks[0].subresource)
	assert.Equal(t, FieldManager, checks[0].fieldManager)
	conds := checks[0].body["status"].(map[string]any)["conditions"].([]any)
	require.Len(t, conds, 1)
	c := conds[0].(map[string]any)
	assert.Equal(t, "Active", c["type"])
	assert.Equal(t, "True", c["status"])
	assert.EqualValues(t, 3, c["observedGeneration"])
}

func job(name, uid, budget string) *unstructured.Unstructured {
	j := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": name, "namespace": "team-ml", "uid": uid},
	}}
	if budget != "" {
		j.SetLabels(map[string]string{"llmbudget.dev/budget": budget})
	}
	return j
}

func ownedBy(w *unstructured.Unstructured, jobName, uid string) *unstructured.Unstructured {
	w.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: jobName,
		UID: types.UID(uid), Controller: new(true)}})
	return w
}

func TestALabelledBudgetHoldsTheWorkloadsOfTheJobsLabelledForItWhereKueueDidNotCopyTheLabel(t *testing.T) {
	b := blockingBudget()
	require.NoError(t, unstructured.SetNestedField(b.Object, "Labelled", "status", "enforcement", "scope"))
	copied := workload("team-ml", "copied", nil, check("llm-budget", "Pending", ""))
	copied.SetLabels(map[string]string{"llmbudget.dev/budget": "chatbot"})
	ws := workloadWrites(run(t, 4,
		admissionCheck("llm-budget", "llmbudget.dev/budget"), b,
		job("labelled", "u1", "chatbot"), job("unlabelled", "u2", ""), job("reused", "u4", "chatbot"),
		ownedBy(workload("team-ml", "of-labelled", nil, check("llm-budget", "Pending", "")), "labelled", "u1"),
		ownedBy(workload("team-ml", "of-unlabelled", nil, check("llm-budget", "Pending", "")), "unlabelled", "u2"),
		ownedBy(workload("team-ml", "of-gone", nil, check("llm-budget", "Pending", "")), "gone", "u3"),
		ownedBy(workload("team-ml", "of-reused", nil, check("llm-budget", "Pending", "")), "reused", "u3"),
		copied,
	))
	state := func(name string) string {
		w, ok := ws["team-ml/"+name]
		require.True(t, ok, "%s is written", name)
		return w.body["status"].(map[string]any)["admissionChecks"].([]any)[0].(map[string]any)["state"].(string)
	}
	assert.Equal(t, "Pending", state("of-labelled"), "the Job's label puts its Workload under the budget")
	assert.Equal(t, "Pending", state("copied"), "so does the Workload's own label")
	assert.Equal(t, "Ready", state("of-unlabelled"))
	assert.Equal(t, "Ready", state("of-gone"), "a Workload whose Job is gone")
	assert.Equal(t, "Ready", state("of-reused"), "a Job of the same name but another UID is not the owner")
}
