package deploytest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The chart's admissionCheck and deploy/components/admission-check (as deploy/overlays/admission-check uses it)
// run the same leader-elected Deployment with the same rights: read Workloads, AdmissionChecks, budgets and Jobs, patch
// only the status of Workloads and AdmissionChecks, and its own Lease in its own namespace.
func TestTheAdmissionCheckControllerRunsTheSameInBothInstallsWithOnlyTheWritesItsJobNeeds(t *testing.T) {
	kustomized := byKey(t, kustomize(t, "deploy/overlays/admission-check"))
	charted := byKey(t, renderChart(t, map[string]any{"admissionCheck": map[string]any{"enabled": true}}))

	const (
		deployment  = "Deployment llmbudget-system/llmbudget-admission-check"
		clusterRole = "ClusterRole llmbudget-admission-check"
		role        = "Role llmbudget-system/llmbudget-admission-check"
	)
	for _, key := range []string{"ServiceAccount llmbudget-system/llmbudget-admission-check", clusterRole,
		"ClusterRoleBinding llmbudget-admission-check", role, "RoleBinding llmbudget-system/llmbudget-admission-check",
		deployment, "NetworkPolicy llmbudget-system/llmbudget-admission-check"} {
		require.Contains(t, kustomized, key)
		require.Contains(t, charted, key)
	}
	wantRules := []any{
		map[string]any{"apiGroups": []any{"kueue.x-k8s.io"}, "resources": []any{"workloads", "admissionchecks"},
			"verbs": []any{"get", "list", "watch"}},
		map[string]any{"apiGroups": []any{"kueue.x-k8s.io"},
			"resources": []any{"workloads/status", "admissionchecks/status"}, "verbs": []any{"patch"}},
		map[string]any{"apiGroups": []any{"llmbudget.dev"},
			"resources": []any{"llmcostbudgets", "clusterllmcostbudgets"}, "verbs": []any{"get", "list", "watch"}},
		map[string]any{"apiGroups": []any{"batch"}, "resources": []any{"jobs"}, "verbs": []any{"get"}},
	}
	wantLease := []any{
		map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"},
			"verbs": []any{"create"}},
		map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"},
			"resourceNames": []any{"llmbudget-admission-check"}, "verbs": []any{"get", "update"}},
	}
	for name, rendered := range map[string]map[string]object{"kustomize": kustomized, "helm": charted} {
		assert.Equal(t, wantRules, rendered[clusterRole]["rules"], "%s: %s", name, clusterRole)
		assert.Equal(t, wantLease, rendered[role]["rules"], "%s: %s", name, role)
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
		append(pod, "containers", 0, "livenessProbe"),
		append(pod, "containers", 0, "readinessProbe"),
	} {
		want, ok := dig(kDep, path...)
		require.True(t, ok, "%v", path)
		got, _ := dig(hDep, path...)
		assert.Equal(t, want, got, "%v", path)
	}
	args, _ := dig(kDep, append(pod, "containers", 0, "args")...)
	assert.Equal(t, []any{"admissioncheck", "--hold=Pending", "--log-level=info",
		"--leader-election-name=llmbudget-admission-check", "--probe-addr=:8081"}, args)
	replicas, _ := dig(kDep, "spec", "replicas")
	assert.EqualValues(t, 2, replicas, "one leads, the other takes over")
}
