//go:build integration

package integration_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// Warn mode: both team policies are installed, as the base installs them; a budget's status decides which of the
// two speaks for it. As in policy_test, the status is the golden sync response's, written through the status
// subresource, and each policy runs with failurePolicy Fail so that an expression error would show as a refusal.

func TestAWarnModeBudgetAdmitsTheJobItWouldRefuseAndTheClientPrintsTheWarning(t *testing.T) {
	installPolicyGate(t)
	installPolicy(t, "llmbudget-budgets-warn", "warn-validatingadmissionpolicy.yaml",
		"warn-validatingadmissionpolicybinding.yaml")
	warn := readResponse(t, "budget/sync/over-budget-warn-mode-would-refuse.response.json").Status
	require.NotNil(t, warn)
	require.Equal(t, "Warn", warn["enforcement"].(map[string]any)["mode"], "the golden status is warn mode's")

	kube.EnsureNamespace(t, "team-ml")
	t.Cleanup(func() {
		_, _ = kube.KubectlErr(t, "", "delete", "namespace", "team-ml", "--wait=true", "--timeout=90s")
	})
	kube.ApplyYAML(t, "team-ml", budgetYAML(t, "chatbot", warnJobs))
	writeStatus(t, "team-ml", "chatbot", warn)

	// The same sentence the Deny policy refuses with, as a warning: the Job is created.
	want := "LLMCostBudget team-ml/chatbot is OverBudget (612.00 of 500.00 USD this Monthly period, ends " +
		"2026-12-01T00:00:00+01:00): new jobs.batch would be refused in team-ml (enforcement.mode Warn)"
	var out string
	cluster.WaitFor(t, 30*time.Second, "the warn-mode budget to warn", func() (bool, string) {
		var err error
		out, err = kube.KubectlErr(t, "", "create", "job", "train", "--image="+pauseImage, "-n", "team-ml",
			"--dry-run=server")
		return err == nil && strings.Contains(out, want), out
	})
	out, err := kube.KubectlErr(t, "", "create", "job", "train", "--image="+pauseImage, "-n", "team-ml")
	require.NoError(t, err, "a warn-mode budget refuses nothing: %s", out)
	t.Logf("kubectl create job train -n team-ml:\n%s", out)
	assert.Contains(t, out, "Warning: Validation failed for ValidatingAdmissionPolicy 'llmbudget-budgets-warn' "+
		"with binding 'llmbudget-budgets-warn': "+want)
	assert.Contains(t, out, "job.batch/train created")
	assert.Equal(t, "job.batch/train", strings.TrimSpace(kube.Kubectl(t, "get", "job", "train", "-n", "team-ml",
		"-o", "name")))

	// The same status in Deny mode (the golden response of the default mode) is refused, by the Deny policy only.
	deny := readResponse(t, "budget/sync/under-to-over-budget-policy-refuses.response.json").Status
	require.NotNil(t, deny)
	denied := kube.Namespace(t, "warn-deny")
	kube.ApplyYAML(t, denied, budgetYAML(t, "chatbot", blockJobs("")))
	writeStatus(t, denied, "chatbot", deny)
	out = waitRefused(t, "new jobs.batch are refused in "+denied, "", "create", "job", "train",
		"--image="+pauseImage, "-n", denied)
	assert.Contains(t, out, "ValidatingAdmissionPolicy 'llmbudget-budgets' with binding 'llmbudget-budgets' denied")
	assert.NotContains(t, out, "llmbudget-budgets-warn", "a Deny-mode budget does not warn as well")

	other := kube.Namespace(t, "warn-other")
	out, err = kube.KubectlErr(t, "", "create", "job", "train", "--image="+pauseImage, "-n", other)
	require.NoError(t, err, out)
	assert.NotContains(t, out, "Warning", "a namespace without budgets is untouched")
}

// warnJobs is a budget spec edit: block jobs.batch in warn mode, with gate Both (which warn mode keeps to the
// policy).
func warnJobs(spec map[string]any) {
	spec["enforcement"] = map[string]any{
		"action": "BlockNewWorkloads", "resources": []any{"jobs.batch"}, "gate": "Both", "mode": "Warn",
	}
}
