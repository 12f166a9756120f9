//go:build integration

package integration_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// llmbudget's admission check against a real Kueue v0.17.0: the ClusterQueue of examples/kueue/admission-check
// lists the AdmissionCheck llm-budget and selects every namespace; `llmbudget admissioncheck` holds a Workload
// while its namespace's budget blocks, and lets it go when the block lifts.

// checkEntry is a Workload's status.admissionChecks entry as the test reads it.
type checkEntry struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Message string `json:"message"`
}

// workloadChecks returns the Workload of Job job in namespace (nil while there is none) and its check entries.
func workloadChecks(t *testing.T, namespace, job string) (*kueueWorkload, map[string]checkEntry) {
	t.Helper()
	wl := workloadOf(t, namespace, job)
	if wl == nil {
		return nil, nil
	}
	var st struct {
		Status struct {
			AdmissionChecks []checkEntry `json:"admissionChecks"`
		} `json:"status"`
	}
	out := kube.Kubectl(t, "get", "workloads.kueue.x-k8s.io", wl.Name, "-n", namespace, "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	checks := map[string]checkEntry{}
	for _, c := range st.Status.AdmissionChecks {
		checks[c.Name] = c
	}
	return wl, checks
}

// checkScene is a namespace ns whose budget batch blocks (period end end), a real Kueue with examples/kueue's
// ResourceFlavor, admission-check/ AdmissionCheck and ClusterQueue and the LocalQueue of ns, and `llmbudget
// admissioncheck` with args, once the AdmissionCheck is Active. It returns the budget's enforcement message and
// a reader of examples/kueue's files.
func checkScene(t *testing.T, ns, end string, args ...string) (string, func(string) []byte) {
	t.Helper()
	installBudgetCRD(t)
	installClusterBudgetCRD(t)
	dir := filepath.Join(repoRoot, "examples", "kueue")
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return data
	}
	kube.EnsureNamespace(t, ns)
	t.Cleanup(func() {
		_, _ = kube.KubectlErr(t, "", "delete", "namespace", ns, "--wait=true", "--timeout=90s")
	})
	kube.EnsureNamespace(t, "llmbudget-system")

	// The budget blocks before anything is queued: its status as a sync writes it while over the limit.
	kube.ApplyYAML(t, "", inNamespace(t, read("budget.yaml"), ns))
	message := "LLMCostBudget " + ns + "/batch is OverBudget (412.35 of 400.00 USD this Monthly period, ends " +
		end + ")"
	writeStatus(t, ns, "batch", map[string]any{
		"state": "OverBudget", "observedSpendUSD": "412.35", "limitUSD": "400.00",
		"period": map[string]any{"start": "2026-11-01T00:00:00+01:00", "end": end},
		"enforcement": map[string]any{"blocking": true, "gates": []any{"Policy"}, "scope": "Namespace",
			"resources": []any{"deployments.apps"}, "message": message},
	})

	startKueue(t)
	work := t.TempDir()
	startLogged(t, work, "admissioncheck", buildLLMBudget(t), append([]string{"admissioncheck", "--kubeconfig",
		kube.Kubeconfig, "--probe-addr", freeAddr(t), "--leader-election-namespace", "llmbudget-system",
		"--leader-election-name", ns}, args...)...)

	queue := []string{"resourceflavor.yaml", "admission-check/admissioncheck.yaml",
		"admission-check/clusterqueue.yaml"}
	t.Cleanup(func() {
		del := []string{"delete", "--ignore-not-found", "--wait=true", "--timeout=60s"}
		if out, err := kube.KubectlErr(t, "", append(del, "-n", ns, "job/finetune", "localqueue/llm-batch")...); err != nil {
			t.Logf("delete the queued Job: %v\n%s", err, out)
		}
		args := del
		for i := len(queue) - 1; i >= 0; i-- {
			args = append(args, "-f", filepath.Join(dir, queue[i]))
		}
		if out, err := kube.KubectlErr(t, "", args...); err != nil {
			t.Logf("delete the Kueue example: %v\n%s", err, out)
		}
	})
	for _, f := range queue {
		kube.ApplyYAML(t, "", string(read(f)))
	}
	kube.ApplyYAML(t, "", inNamespace(t, read("localqueue.yaml"), ns))

	// The controller marks its AdmissionCheck Active, as Kueue requires of every check a ClusterQueue lists.
	cluster.WaitFor(t, 30*time.Second, "the AdmissionCheck llm-budget to be Active", func() (bool, string) {
		out := kube.Kubectl(t, "get", "admissionchecks.kueue.x-k8s.io", "llm-budget", "-o",
			`jsonpath={.status.conditions[?(@.type=="Active")].status}`)
		return out == "True", "Active " + out
	})

	return message, read
}

func TestAJobQueuedWhileItsBudgetBlocksIsHeldByTheAdmissionCheckAndAdmittedWithinTwoSecondsOfTheLift(
	t *testing.T) {
	const ns, end = "kueue-check", "2026-12-01T00:00:00+01:00"
	message, read := checkScene(t, ns, end)
	out, err := kube.KubectlErr(t, inNamespace(t, read("job.yaml"), ns), "create", "-f", "-")
	require.NoError(t, err, "the queued Job is accepted while its budget blocks: %s", out)

	var wl *kueueWorkload
	var checks map[string]checkEntry
	cluster.WaitFor(t, time.Minute, "the check to hold the Workload with the budget's message", func() (bool, string) {
		wl, checks = workloadChecks(t, ns, "finetune")
		c := checks["llm-budget"]
		return c.State == "Pending" && strings.Contains(c.Message, message),
			fmt.Sprintf("workload %v, checks %+v", wl != nil, checks)
	})
	assert.Equal(t, "Held by "+message+".", checks["llm-budget"].Message)
	// Held by the check, not by quota: Kueue reserved the quota and waits for the check alone.
	cluster.WaitFor(t, 30*time.Second, "Kueue to reserve quota for the held Workload", func() (bool, string) {
		wl = workloadOf(t, ns, "finetune")
		return meta.IsStatusConditionTrue(wl.Status.Conditions, "QuotaReserved"), fmt.Sprint(wl.Status.Conditions)
	})
	describe := kube.Kubectl(t, "describe", "workload", wl.Name, "-n", ns)
	assert.Contains(t, describe, message, "kubectl describe workload shows the budget's message")

	// However long it waits, it is not admitted, and its Job stays suspended.
	time.Sleep(2 * time.Second)
	wl, checks = workloadChecks(t, ns, "finetune")
	assert.False(t, meta.IsStatusConditionTrue(wl.Status.Conditions, "Admitted"), "the held Workload is not admitted")
	assert.Equal(t, "Pending", checks["llm-budget"].State)
	assert.True(t, jobSuspended(t, ns, "finetune"), "the held Job stays suspended")

	// The block lifts, as a sync writes it when the limit is raised: the check turns Ready, Kueue admits.
	writeStatus(t, ns, "batch", map[string]any{
		"state": "Warning", "observedSpendUSD": "412.35", "limitUSD": "800.00",
		"period":      map[string]any{"start": "2026-11-01T00:00:00+01:00", "end": end},
		"enforcement": map[string]any{"blocking": false, "reason": "the spend is under the limit"},
	})
	lifted := time.Now()
	cluster.WaitFor(t, 2*time.Second, "the Job to be unsuspended within 2 s of the lift", func() (bool, string) {
		return !jobSuspended(t, ns, "finetune"), "suspended"
	})
	t.Logf("the Job was unsuspended %s after the lift", time.Since(lifted).Round(time.Millisecond))
	wl, checks = workloadChecks(t, ns, "finetune")
	assert.Equal(t, "Ready", checks["llm-budget"].State)
	if c := meta.FindStatusCondition(wl.Status.Conditions, "Admitted"); assert.NotNil(t, c) {
		assert.Equal(t, metav1.ConditionTrue, c.Status)
	}
}

// With --hold Retry, the held Workload's check is Retry with requeueAfterSeconds at the period's end, and Kueue
// v0.17.0 sets the Workload's requeueState.requeueAt to that instant. It keeps the quota reservation meanwhile: its
// workload controller waits for the backoff before it evicts for a Retry check (pkg/controller/core/
// workload_controller.go). Nothing is rewritten while it waits.
func TestWithHoldRetryKueueRequeuesAHeldWorkloadAtThePeriodEnd(t *testing.T) {
	const ns = "kueue-retry"
	endAt := time.Now().Add(time.Hour).Truncate(time.Second).In(time.FixedZone("CET", 3600))
	end := endAt.Format(time.RFC3339)
	message, read := checkScene(t, ns, end, "--hold", "Retry")
	out, err := kube.KubectlErr(t, inNamespace(t, read("job.yaml"), ns), "create", "-f", "-")
	require.NoError(t, err, out)

	type retried struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Status struct {
			Conditions   []metav1.Condition `json:"conditions"`
			RequeueState struct {
				RequeueAt *metav1.Time `json:"requeueAt"`
			} `json:"requeueState"`
			AdmissionChecks []struct {
				State               string `json:"state"`
				Message             string `json:"message"`
				RequeueAfterSeconds *int32 `json:"requeueAfterSeconds"`
			} `json:"admissionChecks"`
		} `json:"status"`
	}
	var w retried
	get := func() bool {
		wl := workloadOf(t, ns, "finetune")
		if wl == nil {
			return false
		}
		out := kube.Kubectl(t, "get", "workloads.kueue.x-k8s.io", wl.Name, "-n", ns, "-o", "json")
		require.NoError(t, json.Unmarshal([]byte(out), &w))
		return true
	}
	cluster.WaitFor(t, time.Minute, "the check to be Retry and Kueue to requeue the Workload", func() (bool, string) {
		return get() && w.Status.RequeueState.RequeueAt != nil && len(w.Status.AdmissionChecks) == 1 &&
			w.Status.AdmissionChecks[0].State == "Retry", fmt.Sprintf("%+v", w.Status)
	})
	c := w.Status.AdmissionChecks[0]
	assert.Contains(t, c.Message, message)
	if assert.NotNil(t, c.RequeueAfterSeconds) {
		assert.InDelta(t, time.Hour.Seconds(), float64(*c.RequeueAfterSeconds), 60)
	}
	assert.WithinDuration(t, endAt, w.Status.RequeueState.RequeueAt.Time, 2*time.Second,
		"Kueue looks again at the period's end, %s", end)
	assert.True(t, meta.IsStatusConditionTrue(w.Status.Conditions, "QuotaReserved"),
		"Kueue v0.17.0 keeps the reservation until then")
	assert.False(t, meta.IsStatusConditionTrue(w.Status.Conditions, "Admitted"))
	assert.True(t, jobSuspended(t, ns, "finetune"), "the held Job stays suspended")

	// While it waits, nothing is rewritten: neither Kueue nor the controller goes round in circles.
	rv := w.Metadata.ResourceVersion
	time.Sleep(3 * time.Second)
	require.True(t, get())
	assert.Equal(t, rv, w.Metadata.ResourceVersion, "the waiting Workload is left alone: %+v", w.Status)
}

// A Labelled budget holds only the Jobs labelled for it: Kueue v0.17.0 does not copy the label to the Workload
// (labelKeysToCopy is empty by default), so the controller reads it from the Job that owns the Workload.
func TestALabelledBudgetHoldsOnlyTheJobsLabelledForIt(t *testing.T) {
	const ns, end = "kueue-labelled", "2026-12-01T00:00:00+01:00"
	message, read := checkScene(t, ns, end)
	writeStatus(t, ns, "batch", map[string]any{
		"state": "OverBudget", "observedSpendUSD": "412.35", "limitUSD": "400.00",
		"period": map[string]any{"start": "2026-11-01T00:00:00+01:00", "end": end},
		"enforcement": map[string]any{"blocking": true, "gates": []any{"Policy"}, "scope": "Labelled",
			"resources": []any{"deployments.apps"}, "message": message},
	})
	t.Cleanup(func() {
		_, _ = kube.KubectlErr(t, "", "delete", "job", "other", "-n", ns, "--ignore-not-found", "--wait=true",
			"--timeout=60s")
	})
	labelled := strings.Replace(inNamespace(t, read("job.yaml"), ns), "labels:\n",
		"labels:\n    llmbudget.dev/budget: batch\n", 1)
	require.Contains(t, labelled, "llmbudget.dev/budget: batch")
	out, err := kube.KubectlErr(t, labelled, "create", "-f", "-")
	require.NoError(t, err, out)
	other := strings.Replace(inNamespace(t, read("job.yaml"), ns), "name: finetune", "name: other", 1)
	out, err = kube.KubectlErr(t, other, "create", "-f", "-")
	require.NoError(t, err, out)

	cluster.WaitFor(t, time.Minute, "the unlabelled Job to be admitted", func() (bool, string) {
		return !jobSuspended(t, ns, "other"), "suspended"
	})
	cluster.WaitFor(t, 30*time.Second, "the labelled Job's Workload to be held", func() (bool, string) {
		_, checks := workloadChecks(t, ns, "finetune")
		c := checks["llm-budget"]
		return c.State == "Pending" && strings.Contains(c.Message, message), fmt.Sprintf("%+v", checks)
	})
	wl := workloadOf(t, ns, "finetune")
	assert.Empty(t, wl.Labels["llmbudget.dev/budget"], "Kueue did not copy the label: it was read from the Job")
	assert.True(t, jobSuspended(t, ns, "finetune"), "the labelled Job stays suspended")
}
