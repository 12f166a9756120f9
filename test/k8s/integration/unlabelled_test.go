//go:build integration

package integration_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAWorkloadUnlabelledFromItsBudgetLosesItsDecorations does what Metacontroller does with the two workload
// decorators: the sync answer of a labelled Deployment is applied, the user removes the budget label, the second
// decorator (it selects llmbudget.dev/state without llmbudget.dev/budget) calls the real hook with the object as
// stored, and its answer is applied. Afterwards no decoration is left and the object matches neither selector.
func TestAWorkloadUnlabelledFromItsBudgetLosesItsDecorations(t *testing.T) {
	hook := startHookServer(t)
	sync := readResponse(t, "workload/sync/budget-over-announces-exceeded.response.json")
	ns := kube.Namespace(t, "hooks-unlabelled")
	const name = "chatbot-web"
	_, err := kube.KubectlErr(t, deploymentJSON(t, name, ns), "create", "-f", "-")
	require.NoError(t, err)
	patchDecorations(t, ns, name, sync)
	require.NotEmpty(t, decorationKeys(readDeployment(t, ns, name).Metadata.Labels), "decorated first")

	kube.Kubectl(t, "label", "deployment", name, "-n", ns, budgetLabel+"-")
	const unlabelled = "llmbudget.dev/state,!llmbudget.dev/budget"
	selected := kube.Kubectl(t, "get", "deployments", "-n", ns, "-l", unlabelled, "-o", "name")
	require.Equal(t, "deployment.apps/"+name+"\n", selected, "the unlabelled decorator selects it")

	var answer hookResponse
	postJSON(t, hook+"/workload/sync", map[string]any{
		"controller":  map[string]any{"metadata": map[string]any{"name": "llmbudget-workloads-unlabelled"}},
		"object":      getObject(t, "deployment", name, ns),
		"attachments": map[string]any{},
		"related":     map[string]any{},
	}, &answer)
	assert.Empty(t, answer.Attachments, "no Event for a workload that draws on no budget")
	patchDecorations(t, ns, name, answer)

	cleaned := readDeployment(t, ns, name)
	assert.Empty(t, decorationKeys(cleaned.Metadata.Labels), "labels left")
	assert.Empty(t, decorationKeys(cleaned.Metadata.Annotations), "annotations left")
	assert.Equal(t, name, cleaned.Metadata.Labels["app"], "the user's own labels stay")
	for _, selector := range []string{unlabelled, budgetLabel} {
		assert.Empty(t, kube.Kubectl(t, "get", "deployments", "-n", ns, "-l", selector, "-o", "name"),
			"clean, it matches neither decorator (%s)", selector)
	}
}
