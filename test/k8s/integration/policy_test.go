//go:build integration

package integration_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// The Policy gate is deploy/base/admission: a ValidatingAdmissionPolicy over every budget of
// the request's namespace that reads only status.enforcement. No controller runs here: the
// tests write the status a sync would write (through the status subresource) and create
// workloads as a user would. The policy is installed with failurePolicy Fail instead of the
// shipped Ignore, so that an expression failing on some budget shows up as a refused create
// instead of being ignored: every create accepted below was accepted by a policy that
// evaluated without error.

const pauseImage = "registry.k8s.io/pause:3.10"

func TestPolicyGateRefusesNewJobsWhileABudgetOfTheNamespaceBlocks(t *testing.T) {
	installPolicyGate(t)
	// The golden sync response of an over-budget budget with the default gate: the status
	// the policy reads is exactly what the hook writes.
	over := readResponse(t, "budget/sync/under-to-over-budget-policy-refuses.response.json").Status
	require.NotNil(t, over)
	kube.EnsureNamespace(t, "team-ml")
	// Waits for the namespace to go: rbac_test uses team-ml too.
	t.Cleanup(func() {
		_, _ = kube.KubectlErr(t, "", "delete", "namespace", "team-ml", "--wait=true", "--timeout=90s")
	})
	kube.ApplyYAML(t, "team-ml", budgetYAML(t, "chatbot", blockJobs("")))
	writeStatus(t, "team-ml", "chatbot", over)

	want := "LLMCostBudget team-ml/chatbot is OverBudget " +
		"(612.00 of 500.00 USD this Monthly period, ends 2026-12-01T00:00:00+01:00): new jobs.batch are refused in team-ml"
	waitRefused(t, want, "", "create", "job", "train", "--image="+pauseImage, "-n", "team-ml", "--dry-run=server")
	out, err := kube.KubectlErr(t, "", "create", "job", "train", "--image="+pauseImage, "-n", "team-ml")
	require.Error(t, err)
	t.Logf("kubectl create job train -n team-ml:\n%s", out)
	assert.Contains(t, out, `jobs.batch "train" is forbidden: `+
		`ValidatingAdmissionPolicy 'llmbudget-budgets' with binding 'llmbudget-budgets' denied request: `+want)

	other := kube.Namespace(t, "policy-other")
	assertAdmitted(t, "a Job in a namespace without budgets",
		"create", "job", "train", "--image="+pauseImage, "-n", other, "--dry-run=server")
	assertAdmitted(t, "a Deployment, which the budget does not list",
		"create", "deployment", "web", "--image="+pauseImage, "-n", "team-ml", "--dry-run=server")

	// The next sync finds the budget within its limit again: the same create succeeds.
	lifted := map[string]any{}
	for k, v := range over {
		lifted[k] = v
	}
	lifted["state"] = "UnderBudget"
	lifted["enforcement"] = map[string]any{
		"blocking": false, "reason": "the budget is UnderBudget: new workloads are admitted",
	}
	writeStatus(t, "team-ml", "chatbot", lifted)
	cluster.WaitFor(t, 30*time.Second, "the lifted budget to admit the Job", func() (bool, string) {
		out, err := kube.KubectlErr(t, "", "create", "job", "train", "--image="+pauseImage, "-n", "team-ml")
		return err == nil, out
	})

	describe := kube.Kubectl(t, "describe", "validatingadmissionpolicy", "llmbudget-budgets")
	t.Logf("kubectl describe validatingadmissionpolicy llmbudget-budgets:\n%s", describe)
	for _, s := range []string{"Param Kind:", "LLMCostBudget", "Failure Policy:", "Message Expression:"} {
		assert.Contains(t, describe, s)
	}
}

func TestPolicyGateWithTheLabelledScopeRefusesOnlyWorkloadsOfThatBudget(t *testing.T) {
	installPolicyGate(t)
	ns := kube.Namespace(t, "policy-labelled")
	kube.ApplyYAML(t, ns, budgetYAML(t, "chatbot", blockJobs("Labelled")))
	writeStatus(t, ns, "chatbot", blockingStatus(ns, "chatbot", "Labelled", "jobs.batch"))

	labelled := jobJSON(t, "answer", map[string]string{"llmbudget.dev/budget": "chatbot"})
	waitRefused(t, "LLMCostBudget "+ns+"/chatbot is OverBudget (test): "+
		"new jobs.batch labelled llmbudget.dev/budget=chatbot are refused in "+ns,
		labelled, "create", "-f", "-", "-n", ns, "--dry-run=server")
	assertAdmittedJSON(t, "an unlabelled Job", ns, jobJSON(t, "report", nil))
	assertAdmittedJSON(t, "a Job of another budget", ns,
		jobJSON(t, "batch", map[string]string{"llmbudget.dev/budget": "batch"}))
}

func TestPolicyGateAdmitsWhatNoBlockingBudgetRefuses(t *testing.T) {
	installPolicyGate(t)
	ns := kube.Namespace(t, "policy-calm")
	budgets := map[string]map[string]any{
		"without-status": nil,
		"not-blocking": {
			"state": "Warning", "enforcement": map[string]any{"blocking": false, "reason": "the budget is Warning"},
		},
		"only-a-state":         {"state": "OverBudget"},
		"blocking-and-nothing": {"enforcement": map[string]any{"blocking": true}},
		"no-resources": {"enforcement": map[string]any{
			"blocking": true, "gates": []any{"Policy"}, "scope": "Namespace", "resources": []any{},
		}},
		"quota-gate-only": {"enforcement": map[string]any{
			"blocking": true, "gates": []any{"Quota"}, "scope": "Namespace", "resources": []any{"jobs.batch"},
		}},
		"no-scope": {"enforcement": map[string]any{
			"blocking": true, "gates": []any{"Policy"}, "resources": []any{"jobs.batch"},
		}},
		"an-unknown-scope": {"enforcement": map[string]any{
			"blocking": true, "gates": []any{"Policy"}, "scope": "Cluster", "resources": []any{"jobs.batch"},
		}},
		"blocking-other-things": blockingStatus(ns, "blocking-other-things", "Namespace", "deployments.apps"),
	}
	for name, status := range budgets {
		kube.ApplyYAML(t, ns, budgetYAML(t, name, blockJobs("")))
		if status != nil {
			writeStatus(t, ns, name, status)
		}
	}
	// A status of the wrong shape never reaches the policy: the CRD's schema refuses it.
	for _, bad := range []string{
		`{"enforcement": "blocking"}`, `{"enforcement": {"blocking": "yes"}}`, `{"enforcement": {"gates": "Policy"}}`,
	} {
		out, err := kube.KubectlErr(t, "", "patch", "llmb", "only-a-state", "-n", ns,
			"--subresource=status", "--type=merge", "-p", `{"status": `+bad+`}`)
		assert.Error(t, err, "status %s is refused", bad)
		assert.Contains(t, out, "Invalid value")
	}

	// Deployments are refused once the policy sees the last budget written, so it has seen
	// every other budget of the namespace too (a watch delivers changes in order).
	waitRefused(t, "new deployments.apps are refused in "+ns, "",
		"create", "deployment", "web", "--image="+pauseImage, "-n", ns, "--dry-run=server")
	assertAdmitted(t, "a Job", "create", "job", "train", "--image="+pauseImage, "-n", ns, "--dry-run=server")
	assertAdmitted(t, "a CronJob",
		"create", "cronjob", "nightly", "--image="+pauseImage, "--schedule=0 3 * * *", "-n", ns, "--dry-run=server")
}

// The namespace decorator labels a namespace llmbudget.dev/budgets-blocking "false" while none of its budgets
// blocks, and the bindings skip it: the label, which only Namespace writers can set (lift_test), is all that
// stands between a write and the gate, so only "false" may open it.
func TestPolicyGateSkipsANamespaceOnlyWhileItsLabelSaysNoBudgetThereBlocks(t *testing.T) {
	installPolicyGate(t)
	ns := kube.Namespace(t, "policy-skip")
	kube.ApplyYAML(t, ns, budgetYAML(t, "chatbot", blockJobs("")))
	writeStatus(t, ns, "chatbot", blockingStatus(ns, "chatbot", "Namespace", "jobs.batch"))
	job := []string{"create", "job", "train", "--image=" + pauseImage, "-n", ns, "--dry-run=server"}
	want := "LLMCostBudget " + ns + "/chatbot is OverBudget (test): new jobs.batch are refused in " + ns
	for _, label := range []string{"llmbudget.dev/budgets-blocking=true", "llmbudget.dev/budgets-blocking=False",
		"llmbudget.dev/budgets-blocking=", "llmbudget.dev/budgets-blocking-"} {
		kube.Kubectl(t, "label", "namespace", ns, "--overwrite", label)
		waitRefused(t, want, "", job...)
	}
	kube.Kubectl(t, "label", "namespace", ns, "--overwrite", "llmbudget.dev/budgets-blocking=false")
	cluster.WaitFor(t, 30*time.Second, "the binding to skip the namespace", func() (bool, string) {
		out, err := kube.KubectlErr(t, "", job...)
		return err == nil, out
	})
}

func TestPolicyGateStillRefusesWithoutAMessage(t *testing.T) {
	installPolicyGate(t)
	ns := kube.Namespace(t, "policy-terse")
	kube.ApplyYAML(t, ns, budgetYAML(t, "chatbot", blockJobs("")))
	st := blockingStatus(ns, "chatbot", "Namespace", "jobs.batch")
	delete(st["enforcement"].(map[string]any), "message")
	writeStatus(t, ns, "chatbot", st)
	waitRefused(t, "LLMCostBudget chatbot is blocking: new jobs.batch are refused in "+ns, "",
		"create", "job", "train", "--image="+pauseImage, "-n", ns, "--dry-run=server")
}

// installPolicyGate applies deploy/base/admission with failurePolicy Fail (see above) and
// removes it when the test ends.
func installPolicyGate(t *testing.T) {
	t.Helper()
	installBudgetCRD(t)
	installPolicy(t, "llmbudget-budgets", "validatingadmissionpolicy.yaml", "validatingadmissionpolicybinding.yaml")
}

// installPolicy applies a policy and its binding from deploy/base/admission with failurePolicy
// Fail, and waits until the API server has type-checked it without warnings.
func installPolicy(t *testing.T, name string, files ...string) {
	t.Helper()
	dir := filepath.Join(repoRoot, "deploy", "base", "admission")
	var docs []string
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		docs = append(docs, string(data))
	}
	manifest := strings.Join(docs, "\n---\n")
	require.Contains(t, manifest, "failurePolicy: Ignore\n")
	manifest = strings.Replace(manifest, "failurePolicy: Ignore\n", "failurePolicy: Fail\n", 1)
	kube.ApplyYAML(t, "", manifest)
	t.Cleanup(func() {
		_, _ = kube.KubectlErr(t, manifest, "delete", "--ignore-not-found", "-f", "-")
	})
	cluster.WaitFor(t, 30*time.Second, "the policy to be type-checked", func() (bool, string) {
		out, err := kube.KubectlErr(t, "", "get", "validatingadmissionpolicy", name, "-o", "jsonpath={.status}")
		return err == nil && strings.Contains(out, "observedGeneration"), out
	})
	warnings := kube.Kubectl(t, "get", "validatingadmissionpolicy", name,
		"-o", "jsonpath={.status.typeChecking.expressionWarnings}")
	assert.Empty(t, warnings, "the API server type-checks every expression against the CRD's schema")
}

// blockJobs is a budget spec edit: block jobs.batch, with scope when not empty.
func blockJobs(scope string) func(map[string]any) {
	return func(spec map[string]any) {
		enf := map[string]any{"action": "BlockNewWorkloads", "resources": []any{"jobs.batch"}}
		if scope != "" {
			enf["scope"] = scope
		}
		spec["enforcement"] = enf
	}
}

// blockingStatus is the status a sync writes while budget blocks resource through the policy.
func blockingStatus(ns, budget, scope, resource string) map[string]any {
	return map[string]any{
		"state": "OverBudget",
		"enforcement": map[string]any{
			"blocking": true, "gates": []any{"Policy"}, "scope": scope, "resources": []any{resource},
			"message": "LLMCostBudget " + ns + "/" + budget + " is OverBudget (test)",
		},
	}
}

// writeStatus replaces the budget's status through the status subresource, as
// Metacontroller does after a sync, and labels the budget as the gate decorator does after
// it (llmbudget.dev/blocking while the status blocks): the policies' bindings select by it.
func writeStatus(t *testing.T, ns, name string, status map[string]any) {
	t.Helper()
	patch := toJSON(t, []any{map[string]any{"op": "add", "path": "/status", "value": status}})
	kube.Kubectl(t, "patch", "llmcostbudget", name, "-n", ns, "--subresource=status", "--type=json", "-p", patch)
	labelBlocking(t, kube, "llmcostbudget", name, ns, status)
}

// labelBlocking labels a budget in kc as the gate decorator would for status: llmbudget.dev/blocking
// "true" while status.enforcement.blocking is true or not a boolean (a status it cannot read), else
// no such label.
func labelBlocking(t *testing.T, kc *cluster.Cluster, kind, name, ns string, status map[string]any) {
	t.Helper()
	label := gateLabel + "-"
	enforcement, _ := status["enforcement"].(map[string]any)
	blocking, present := enforcement["blocking"]
	if b, isBool := blocking.(bool); present && (b || !isBool) {
		label = gateLabel + "=true"
	}
	args := []string{"label", kind, name, "--overwrite", label}
	if ns != "" {
		args = append(args, "-n", ns)
	}
	kc.Kubectl(t, args...)
}

// gateLabel is the label by which the admission policies' bindings select the budgets that block.
const gateLabel = "llmbudget.dev/blocking"

// waitRefused runs kubectl args (a dry run: nothing may be created meanwhile) until the API
// server refuses with want, and returns what kubectl printed. The policy reads budgets from
// a watch, so a status just written reaches it a moment later.
func waitRefused(t *testing.T, want, stdin string, args ...string) string {
	t.Helper()
	var out string
	cluster.WaitFor(t, 30*time.Second, "kubectl "+strings.Join(args, " ")+" to be refused", func() (bool, string) {
		var err error
		out, err = kube.KubectlErr(t, stdin, args...)
		return err != nil && strings.Contains(out, want), out
	})
	return out
}

func assertAdmitted(t *testing.T, what string, args ...string) {
	t.Helper()
	out, err := kube.KubectlErr(t, "", args...)
	assert.NoError(t, err, "%s is admitted: %s", what, out)
}

func assertAdmittedJSON(t *testing.T, what, ns, manifest string) {
	t.Helper()
	out, err := kube.KubectlErr(t, manifest, "create", "-f", "-", "-n", ns, "--dry-run=server")
	assert.NoError(t, err, "%s is admitted: %s", what, out)
}

func jobJSON(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   map[string]any{"name": name, "labels": labels},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"restartPolicy": "Never",
			"containers":    []any{map[string]any{"name": "main", "image": pauseImage}},
		}}},
	})
	require.NoError(t, err)
	return string(data)
}
