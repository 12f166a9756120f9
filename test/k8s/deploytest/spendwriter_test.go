package deploytest_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The chart's spendWriters and deploy/components/spend-writer (as examples/spend/vllm uses
// it) must run the same job with the same rights.
func TestChartSpendWriterRunsWhatTheKustomizeComponentRuns(t *testing.T) {
	kustomized := byKey(t, kustomize(t, "examples/spend/vllm"))
	var budget object
	readYAML(t, "examples/spend/vllm/budget.yaml", &budget)
	prices, err := os.ReadFile(repoPath(t, "examples/spend/vllm/prices.yaml"))
	require.NoError(t, err)
	charted := byKey(t, renderChart(t, map[string]any{"spendWriters": []any{map[string]any{
		"name": "vllm-serving", "namespace": "team-support", "spec": budget["spec"], "prices": string(prices),
		"args": []any{"--prometheus=http://prometheus-operated.monitoring:9090", "--source=vllm", "--namespace=team-support"},
	}}}))

	// The writer runs in llmbudget-system, never in the budget's namespace, as one ServiceAccount for every
	// budget, bound cluster-wide to a ClusterRole that admission bounds to spend sources.
	for _, key := range []string{"ServiceAccount llmbudget-system/llmbudget-spend-writer",
		"ClusterRole llmbudget-spend-writer", "ClusterRoleBinding llmbudget-spend-writer"} {
		require.Contains(t, kustomized, key)
		require.Contains(t, charted, key)
	}
	for _, o := range kustomized {
		if ns, _ := dig(o, "metadata", "namespace"); ns == "team-support" {
			assert.Contains(t, []any{"LLMCostBudget", "ConfigMap"}, o["kind"],
				"only the budget and its spend stay in its namespace")
		}
	}
	const role = "ClusterRole llmbudget-spend-writer"
	assert.Equal(t, kustomized[role]["rules"], charted[role]["rules"])
	assert.Equal(t, withoutHelmLabels(t, kustomized["ClusterRoleBinding llmbudget-spend-writer"]),
		withoutHelmLabels(t, charted["ClusterRoleBinding llmbudget-spend-writer"]))
	spend := "ConfigMap team-support/vllm-serving-spend"
	require.Contains(t, kustomized, spend)
	require.Contains(t, charted, spend)
	for _, rendered := range []map[string]object{kustomized, charted} {
		label, _ := dig(rendered[spend], "metadata", "labels", "llmbudget.dev/spend-source")
		assert.Equal(t, "vllm-serving-spend", label, "the spend ConfigMap is a spend source, which the writer may patch")
	}

	const job = "CronJob llmbudget-system/vllm-serving-spend-writer"
	kJob, hJob := kustomized[job], charted[job]
	require.NotNil(t, kJob)
	require.NotNil(t, hJob)
	for _, path := range [][]any{
		{"spec", "schedule"},
		{"spec", "jobTemplate", "spec", "template", "spec", "initContainers", 0, "args"},
		{"spec", "jobTemplate", "spec", "template", "spec", "containers", 0, "args"},
		{"spec", "jobTemplate", "spec", "template", "spec", "securityContext"},
		{"spec", "jobTemplate", "spec", "template", "spec", "serviceAccountName"},
	} {
		want, ok := dig(kJob, path...)
		require.True(t, ok, "%v", path)
		got, _ := dig(hJob, path...)
		assert.Equal(t, want, got, "%v", path)
	}

	for k, o := range charted {
		if o["kind"] == "LLMCostBudget" {
			assert.Equal(t, budget["spec"], o["spec"], k)
		}
	}
	input := charted["ConfigMap llmbudget-system/vllm-serving-spend-input"]
	require.NotNil(t, input)
	data, _ := dig(input, "data", "budget.yaml")
	var read object
	require.NoError(t, yaml.Unmarshal([]byte(data.(string)), &read))
	assert.Equal(t, budget["spec"], read["spec"], "the job reads the budget the chart applies")
	assert.Equal(t, string(prices), input["data"].(map[string]any)["prices.yaml"])
	assert.Contains(t, charted, "ConfigMap team-support/vllm-serving-spend")
}
