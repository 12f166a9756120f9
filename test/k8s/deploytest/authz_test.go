package deploytest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/deploytest"
)

// overlayConfig is the configuration deploy/overlays/authz patches in; the chart is given the same.
const overlayConfig = `gateways:
- name: llm-gateway
  addresses: ["10.244.0.0/16"]
  mode: source
unknownCaller: Admit
maxCacheAge: 30s
`

var authzKeys = []string{
	"ServiceAccount llmbudget-system/llmbudget-authz", "ClusterRole llmbudget-authz",
	"ClusterRoleBinding llmbudget-authz", "Role llmbudget-system/llmbudget-authz",
	"RoleBinding llmbudget-system/llmbudget-authz", "ValidatingAdmissionPolicy llmbudget-authz-leases",
	"ValidatingAdmissionPolicyBinding llmbudget-authz-leases", "ConfigMap llmbudget-system/llmbudget-authz",
	"Deployment llmbudget-system/llmbudget-authz", "Service llmbudget-system/llmbudget-authz",
	"PodDisruptionBudget llmbudget-system/llmbudget-authz", "NetworkPolicy llmbudget-system/llmbudget-authz",
}

// The chart's authz and deploy/components/authz (as deploy/overlays/authz uses it) render the same objects, but for
// Helm's labels and the image's tag.
func TestChartAuthzRendersWhatTheKustomizeComponentRenders(t *testing.T) {
	kustomized := byKey(t, kustomize(t, "deploy/overlays/authz"))
	charted := byKey(t, renderChart(t, map[string]any{"authz": map[string]any{"enabled": true,
		"config": overlayConfig}}))
	for _, key := range authzKeys {
		require.Contains(t, kustomized, key)
		require.Contains(t, charted, key)
		k, h := comparableRender(t, kustomized[key]), comparableRender(t, charted[key])
		assert.Equal(t, k, h, key)
	}
}

// comparableRender drops what may differ: Helm's labels, the image (tagged by the chart, by kustomize images: in an
// overlay) and the trailing newline of the configuration.
func comparableRender(t *testing.T, o object) object {
	t.Helper()
	c := withoutHelmLabels(t, o)
	if c["kind"] == "Deployment" {
		containers, _ := dig(c, "spec", "template", "spec", "containers")
		for _, ct := range containers.([]any) {
			delete(ct.(map[string]any), "image")
		}
	}
	if data, ok := dig(c, "data", "config.yaml"); ok {
		c["data"].(map[string]any)["config.yaml"] = strings.TrimSpace(data.(string))
	}
	return c
}

// authz reads, cluster-wide, only what decisions need.
func TestAuthzMayOnlyReadNamespacesPodsAndBudgets(t *testing.T) {
	role := byKey(t, kustomize(t, "deploy/overlays/authz"))["ClusterRole llmbudget-authz"]
	require.NotNil(t, role)
	assert.Equal(t, []any{
		map[string]any{"apiGroups": []any{""}, "resources": []any{"namespaces", "pods"},
			"verbs": []any{"get", "list", "watch"}},
		map[string]any{"apiGroups": []any{"llmbudget.dev"}, "resources": []any{"llmcostbudgets", "clusterllmcostbudgets"},
			"verbs": []any{"get", "list", "watch"}},
	}, role["rules"])
}

// authz's only write is its replicas' Leases, in its own namespace: a Role (never a ClusterRole over Leases, which
// would let it take over every controller's election) bound to its ServiceAccount alone, and each replica told its
// Pod's name and namespace by the downward API. The Role reaches every Lease of the namespace; the policy
// llmbudget-authz-leases, bound in that namespace alone, bounds it to the replicas' (the integration test
// authz_lease_test.go checks what it refuses).
func TestAuthzMayWriteOnlyTheLeasesOfItsOwnNamespace(t *testing.T) {
	objs := byKey(t, kustomize(t, "deploy/overlays/authz"))
	role := objs["Role llmbudget-system/llmbudget-authz"]
	require.NotNil(t, role)
	assert.Equal(t, []any{
		map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"},
			"verbs": []any{"create", "get", "update", "delete"}},
	}, role["rules"])
	binding := objs["RoleBinding llmbudget-system/llmbudget-authz"]
	require.NotNil(t, binding)
	subjects, _ := dig(binding, "subjects")
	assert.Equal(t, []any{map[string]any{"kind": "ServiceAccount", "name": "llmbudget-authz",
		"namespace": "llmbudget-system"}}, subjects)
	roleRef, _ := dig(binding, "roleRef", "kind")
	assert.Equal(t, "Role", roleRef)
	policy := objs["ValidatingAdmissionPolicy llmbudget-authz-leases"]
	require.NotNil(t, policy)
	who, _ := dig(policy, "spec", "matchConditions", 0, "expression")
	assert.Equal(t, "request.userInfo.username == 'system:serviceaccount:llmbudget-system:llmbudget-authz'", who)
	where, _ := dig(objs["ValidatingAdmissionPolicyBinding llmbudget-authz-leases"], "spec", "matchResources",
		"namespaceSelector", "matchLabels")
	assert.Equal(t, map[string]any{"kubernetes.io/metadata.name": "llmbudget-system"}, where)

	env, _ := dig(objs["Deployment llmbudget-system/llmbudget-authz"], "spec", "template", "spec", "containers", 0, "env")
	fields := map[string]any{}
	for _, e := range env.([]any) {
		if f, ok := dig(e.(map[string]any), "valueFrom", "fieldRef", "fieldPath"); ok {
			fields[e.(map[string]any)["name"].(string)] = f
		}
	}
	assert.Equal(t, map[string]any{"POD_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name"}, fields)
}

// Two replicas kept through drains, ready only once synced, under the service's own Pod security, and reachable
// from the gateways' namespace (and Prometheus on the metrics port) only.
func TestAuthzRunsLikeTheHookService(t *testing.T) {
	objs := byKey(t, kustomize(t, "deploy/overlays/authz"))
	d := objs["Deployment llmbudget-system/llmbudget-authz"]
	replicas, _ := dig(d, "spec", "replicas")
	assert.EqualValues(t, 2, replicas)
	minAvailable, _ := dig(objs["PodDisruptionBudget llmbudget-system/llmbudget-authz"], "spec", "minAvailable")
	assert.EqualValues(t, 1, minAvailable)
	probe, _ := dig(d, "spec", "template", "spec", "containers", 0, "readinessProbe", "httpGet", "path")
	assert.Equal(t, "/readyz", probe)

	service := objs["Deployment llmbudget-system/llmbudget"]
	for _, path := range [][]any{{"securityContext"}, {"containers", 0, "securityContext"}} {
		want, _ := dig(service, append([]any{"spec", "template", "spec"}, path...)...)
		got, _ := dig(d, append([]any{"spec", "template", "spec"}, path...)...)
		assert.Equal(t, want, got, "%v", path)
	}
	ingress, _ := dig(objs["NetworkPolicy llmbudget-system/llmbudget-authz"], "spec", "ingress")
	assert.Equal(t, []any{
		map[string]any{"from": []any{map[string]any{"namespaceSelector": map[string]any{
			"matchLabels": map[string]any{"kubernetes.io/metadata.name": "llm-gateway"}}}},
			"ports": []any{map[string]any{"protocol": "TCP", "port": float64(8080)}}},
		map[string]any{"from": []any{map[string]any{"namespaceSelector": map[string]any{
			"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}},
			"ports": []any{map[string]any{"protocol": "TCP", "port": float64(9090)}}},
	}, ingress)
}

// The chart refuses authz without a configuration rather than render a server that cannot start, and serves TLS
// from the Secret when asked, verifying gateways' certificates only when asked too.
func TestTheChartConfiguresAuthzTLS(t *testing.T) {
	_, err := deploytest.RenderChart(repoRoot(t), map[string]any{"authz": map[string]any{"enabled": true, "config": ""}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "authz.config is required")

	objs := byKey(t, renderChart(t, map[string]any{"authz": map[string]any{"enabled": true,
		"tls": map[string]any{"enabled": true, "verifyGatewayCertificates": true}}}))
	args, _ := dig(objs["Deployment llmbudget-system/llmbudget-authz"], "spec", "template", "spec", "containers", 0,
		"args")
	assert.Subset(t, args, []any{"--tls-cert-file=/etc/llmbudget-authz/tls/tls.crt",
		"--tls-key-file=/etc/llmbudget-authz/tls/tls.key", "--tls-client-ca-file=/etc/llmbudget-authz/tls/ca.crt"})
	_, charted := byKey(t, renderChart(t, nil))["Deployment llmbudget-system/llmbudget-authz"]
	assert.False(t, charted, "authz is off by default")
}
