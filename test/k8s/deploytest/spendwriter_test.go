package deploytest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/deploytest"
)

// The chart's spendWriter and deploy/components/spend-writer (as deploy/overlays/spend-writer
// uses it) must run the same one job with the same rights, in the release namespace.
func TestChartSpendWriterRunsWhatTheKustomizeComponentRuns(t *testing.T) {
	kustomized := byKey(t, kustomize(t, "deploy/overlays/spend-writer"))
	charted := byKey(t, renderChart(t, map[string]any{"spendWriter": map[string]any{"enabled": true}}))

	// One writer for the cluster: it runs in llmbudget-system, never in a budget's namespace, as
	// one ServiceAccount bound cluster-wide to a ClusterRole that admission bounds to spend sources.
	for _, key := range []string{"ServiceAccount llmbudget-system/llmbudget-spend-writer",
		"ClusterRole llmbudget-spend-writer", "ClusterRoleBinding llmbudget-spend-writer",
		"CronJob llmbudget-system/llmbudget-spend-writer"} {
		require.Contains(t, kustomized, key)
		require.Contains(t, charted, key)
	}
	for _, rendered := range []map[string]object{kustomized, charted} {
		var jobs []string
		for k, o := range rendered {
			if o["kind"] == "CronJob" || o["kind"] == "Job" {
				jobs = append(jobs, k)
			}
		}
		assert.Equal(t, []string{"CronJob llmbudget-system/llmbudget-spend-writer"}, jobs, "one writer, not one per budget")
	}
	const role = "ClusterRole llmbudget-spend-writer"
	assert.Equal(t, kustomized[role]["rules"], charted[role]["rules"])
	assert.Equal(t, withoutHelmLabels(t, kustomized["ClusterRoleBinding llmbudget-spend-writer"]),
		withoutHelmLabels(t, charted["ClusterRoleBinding llmbudget-spend-writer"]))

	const job = "CronJob llmbudget-system/llmbudget-spend-writer"
	kJob, hJob := kustomized[job], charted[job]
	pod := []any{"spec", "jobTemplate", "spec", "template", "spec"}
	for _, path := range [][]any{
		{"spec", "schedule"},
		{"spec", "concurrencyPolicy"},
		{"spec", "startingDeadlineSeconds"},
		{"spec", "jobTemplate", "spec", "backoffLimit"},
		{"spec", "jobTemplate", "spec", "activeDeadlineSeconds"},
		append(pod, "securityContext"),
		append(pod, "serviceAccountName"),
		append(pod, "containers", 0, "args"),
		append(pod, "containers", 0, "securityContext"),
		append(pod, "containers", 0, "resources"),
		append(pod, "containers", 0, "env"),
	} {
		want, ok := dig(kJob, path...)
		require.True(t, ok, "%v", path)
		got, _ := dig(hJob, path...)
		assert.Equal(t, want, got, "%v", path)
	}
	schedule, _ := dig(kJob, "spec", "schedule")
	assert.Equal(t, "*/5 * * * *", schedule)
	policy, _ := dig(kJob, "spec", "concurrencyPolicy")
	assert.Equal(t, "Forbid", policy, "a slow run never overlaps the next")
	args, _ := dig(kJob, append(pod, "containers", 0, "args")...)
	assert.Equal(t, []any{"spend", "--all", "--prometheus=http://prometheus-operated.monitoring:9090", "--timeout=1m",
		"--request-timeout=20s", "--deadline=200s", "--concurrency=8", "--qps=200", "--burst=400",
		"--checkpoints-namespace=$(POD_NAMESPACE)", "--settle=10m"}, args)
	env, _ := dig(kJob, append(pod, "containers", 0, "env", 0)...)
	assert.Equal(t, map[string]any{"name": "POD_NAMESPACE", "valueFrom": map[string]any{
		"fieldRef": map[string]any{"fieldPath": "metadata.namespace"}}}, env,
		"the checkpoints are kept in the writer's own namespace, wherever it is installed")

	// The service's own pod security, so that the writer runs under restricted Pod Security as well.
	deployment := kustomized["Deployment llmbudget-system/llmbudget"]
	require.NotNil(t, deployment)
	want, _ := dig(deployment, "spec", "template", "spec", "securityContext")
	got, _ := dig(kJob, append(pod, "securityContext")...)
	assert.Equal(t, want, got)
	want, _ = dig(deployment, "spec", "template", "spec", "containers", 0, "securityContext")
	got, _ = dig(kJob, append(pod, "containers", 0, "securityContext")...)
	assert.Equal(t, want, got)
}

// The writer may do what a run needs and nothing more: list budgets, read price tables and the
// ConfigMaps it writes, create and patch them (server-side apply), and post Events and count them up.
func TestTheSpendWriterMayListBudgetsAndWriteConfigMapsOnly(t *testing.T) {
	role := byKey(t, kustomize(t, "deploy/overlays/spend-writer"))["ClusterRole llmbudget-spend-writer"]
	require.NotNil(t, role)
	assert.Equal(t, []any{
		map[string]any{"apiGroups": []any{"llmbudget.dev"}, "resources": []any{"llmcostbudgets"}, "verbs": []any{"list"}},
		map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"},
			"verbs": []any{"get", "create", "patch"}},
		map[string]any{"apiGroups": []any{""}, "resources": []any{"events"}, "verbs": []any{"get", "create", "update"}},
	}, role["rules"])
}

// The chart refuses a writer with nowhere to read spend from, rather than rendering a job that fails every run.
func TestTheChartRefusesASpendWriterWithoutPrometheus(t *testing.T) {
	values := map[string]any{"spendWriter": map[string]any{"enabled": true, "prometheus": ""}}
	_, err := deploytest.RenderChart(repoRoot(t), values)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spendWriter.prometheus is required")
}
