package deploytest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/deploytest"
)

// The chart's spendWriter and deploy/components/spend-writer (as deploy/overlays/spend-writer
// uses it) must run the same leader-elected Deployment with the same rights, in the release namespace.
func TestChartSpendWriterRunsWhatTheKustomizeComponentRuns(t *testing.T) {
	kustomized := byKey(t, kustomize(t, "deploy/overlays/spend-writer"))
	charted := byKey(t, renderChart(t, map[string]any{"spendWriter": map[string]any{"enabled": true}}))

	// One writer for the cluster: it runs in llmbudget-system, never in a budget's namespace, as
	// one ServiceAccount bound cluster-wide to a ClusterRole that admission bounds to spend sources,
	// and to a Role for its Lease in its own namespace.
	const deployment = "Deployment llmbudget-system/llmbudget-spend-writer"
	for _, key := range []string{"ServiceAccount llmbudget-system/llmbudget-spend-writer",
		"ClusterRole llmbudget-spend-writer", "ClusterRoleBinding llmbudget-spend-writer",
		"Role llmbudget-system/llmbudget-spend-writer", "RoleBinding llmbudget-system/llmbudget-spend-writer",
		deployment, "Service llmbudget-system/llmbudget-spend-writer",
		"NetworkPolicy llmbudget-system/llmbudget-spend-writer"} {
		require.Contains(t, kustomized, key)
		require.Contains(t, charted, key)
	}
	for _, rendered := range []map[string]object{kustomized, charted} {
		var writers []string
		for k, o := range rendered {
			if o["kind"] == "CronJob" || o["kind"] == "Job" || strings.Contains(k, "spend-writer") && o["kind"] == "Deployment" {
				writers = append(writers, k)
			}
		}
		assert.Equal(t, []string{deployment}, writers, "one writer, not one per budget, and no CronJob")
	}
	for _, key := range []string{"ClusterRole llmbudget-spend-writer", "Role llmbudget-system/llmbudget-spend-writer"} {
		assert.Equal(t, kustomized[key]["rules"], charted[key]["rules"], key)
	}
	for _, key := range []string{"ClusterRoleBinding llmbudget-spend-writer",
		"RoleBinding llmbudget-system/llmbudget-spend-writer"} {
		assert.Equal(t, withoutHelmLabels(t, kustomized[key]), withoutHelmLabels(t, charted[key]), key)
	}
	for _, key := range []string{"Service llmbudget-system/llmbudget-spend-writer",
		"NetworkPolicy llmbudget-system/llmbudget-spend-writer"} {
		assert.Equal(t, kustomized[key]["spec"], charted[key]["spec"], key)
	}

	kDep, hDep := kustomized[deployment], charted[deployment]
	pod := []any{"spec", "template", "spec"}
	for _, path := range [][]any{
		{"spec", "replicas"},
		{"spec", "selector"},
		{"spec", "template", "metadata", "labels"},
		append(pod, "securityContext"),
		append(pod, "serviceAccountName"),
		append(pod, "containers", 0, "args"),
		append(pod, "containers", 0, "securityContext"),
		append(pod, "containers", 0, "resources"),
		append(pod, "containers", 0, "env"),
		append(pod, "containers", 0, "ports"),
		append(pod, "containers", 0, "livenessProbe"),
	} {
		want, ok := dig(kDep, path...)
		require.True(t, ok, "%v", path)
		got, _ := dig(hDep, path...)
		assert.Equal(t, want, got, "%v", path)
	}
	replicas, _ := dig(kDep, "spec", "replicas")
	assert.EqualValues(t, 2, replicas, "one leads, the other takes over")
	args, _ := dig(kDep, append(pod, "containers", 0, "args")...)
	assert.Equal(t, []any{"spend", "--all", "--prometheus=http://prometheus-operated.monitoring:9090", "--loop",
		"--interval=15s", "--timeout=1m", "--request-timeout=20s", "--deadline=200s", "--concurrency=8", "--qps=200",
		"--burst=400", "--checkpoints-namespace=$(POD_NAMESPACE)", "--settle=10m",
		"--lease-name=llmbudget-spend-writer", "--lease-duration=15s", "--renew-deadline=10s", "--retry-period=2s",
		"--metrics-addr=:9090"}, args)
	env, _ := dig(kDep, append(pod, "containers", 0, "env")...)
	assert.Equal(t, []any{
		map[string]any{"name": "POD_NAMESPACE", "valueFrom": map[string]any{
			"fieldRef": map[string]any{"fieldPath": "metadata.namespace"}}},
		map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{
			"fieldRef": map[string]any{"fieldPath": "metadata.name"}}},
	}, env.([]any)[:2], "the checkpoints and the Lease are in the writer's own namespace; its identity is its Pod")

	// The hook Service must never route a hook call to a writer.
	podLabels, _ := dig(kDep, "spec", "template", "metadata", "labels")
	assert.Equal(t, "llmbudget-spend-writer", podLabels.(map[string]any)["app.kubernetes.io/name"])

	// The service's own pod security, so that the writer runs under restricted Pod Security as well.
	service := kustomized["Deployment llmbudget-system/llmbudget"]
	require.NotNil(t, service)
	want, _ := dig(service, "spec", "template", "spec", "securityContext")
	got, _ := dig(kDep, append(pod, "securityContext")...)
	assert.Equal(t, want, got)
	want, _ = dig(service, "spec", "template", "spec", "containers", 0, "securityContext")
	got, _ = dig(kDep, append(pod, "containers", 0, "securityContext")...)
	assert.Equal(t, want, got)
}

// The Lease is the writer's only right in its own namespace beyond its checkpoints: create it, and read and renew
// that one Lease; never a ClusterRole over Leases, which would let it take over every controller's election.
func TestTheSpendWriterMayCreateAndRenewItsOwnLeaseOnly(t *testing.T) {
	role := byKey(t, kustomize(t, "deploy/overlays/spend-writer"))["Role llmbudget-system/llmbudget-spend-writer"]
	require.NotNil(t, role)
	assert.Equal(t, []any{
		map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"},
			"verbs": []any{"create"}},
		map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"},
			"resourceNames": []any{"llmbudget-spend-writer"}, "verbs": []any{"get", "update"}},
	}, role["rules"])
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
