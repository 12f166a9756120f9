//go:build integration

package integration_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
	"github.com/llmbudget/llmbudget/test/k8s/deploytest"
)

// unservedGroups are API groups whose CRDs this control plane does not have (cert-manager,
// the Prometheus Operator); objects of these groups are checked offline by package
// deploytest instead.
var unservedGroups = []string{"cert-manager.io/", "monitoring.coreos.com/"}

// TestDeployVariantsAreAcceptedByTheAPIServer server-side dry-runs every object that the
// kustomize overlays, the notifications and kube-state-metrics kustomizations and the Helm
// chart (defaults, and TLS with a token) produce, with field validation Strict and Metacontroller's
// CRDs installed: a misspelt webhook field, a wrong NetworkPolicy or Secret volume is refused
// here as on a real cluster. Namespace llmbudget-system is created for real from deploy/, with
// its Pod Security labels, so a Deployment that would violate `restricted` shows a warning.
func TestDeployVariantsAreAcceptedByTheAPIServer(t *testing.T) {
	crds, err := cluster.MetacontrollerCRDs()
	require.NoError(t, err)
	kube.InstallCRDs(t, crds)
	installBudgetCRD(t)

	base, err := deploytest.Kustomize(repoRoot, "deploy")
	require.NoError(t, err)
	namespaces := 0
	for _, o := range base {
		if o["kind"] == "Namespace" {
			kube.ApplyYAML(t, "", toYAML(t, o))
			namespaces++
		}
	}
	require.Equal(t, 1, namespaces, "deploy/ creates llmbudget-system")
	kube.EnsureNamespace(t, "monitoring")
	kube.EnsureNamespace(t, "team-support")

	render := map[string]func() ([]deploytest.Object, error){
		"kustomize deploy/": func() ([]deploytest.Object, error) { return base, nil },
		"kustomize deploy/overlays/secure": func() ([]deploytest.Object, error) {
			return deploytest.Kustomize(repoRoot, "deploy/overlays/secure")
		},
		"kustomize deploy/overlays/all-kinds": func() ([]deploytest.Object, error) {
			return deploytest.Kustomize(repoRoot, "deploy/overlays/all-kinds")
		},
		"kustomize deploy/notifications": func() ([]deploytest.Object, error) {
			return deploytest.Kustomize(repoRoot, "deploy/notifications")
		},
		"kustomize deploy/monitoring/kube-state-metrics": func() ([]deploytest.Object, error) {
			return deploytest.Kustomize(repoRoot, "deploy/monitoring/kube-state-metrics")
		},
		"helm defaults": func() ([]deploytest.Object, error) { return deploytest.RenderChart(repoRoot, nil) },
		// The spend writer runs in llmbudget-system, under its restricted Pod Security labels.
		"kustomize deploy/overlays/spend-writer": func() ([]deploytest.Object, error) {
			return deploytest.Kustomize(repoRoot, "deploy/overlays/spend-writer")
		},
		"helm with the spend writer": func() ([]deploytest.Object, error) {
			return deploytest.RenderChart(repoRoot, map[string]any{"spendWriter": map[string]any{"enabled": true}})
		},
		"helm with TLS and a token": func() ([]deploytest.Object, error) {
			return deploytest.RenderChart(repoRoot, map[string]any{
				"tls": map[string]any{"enabled": true}, "token": map[string]any{"enabled": true},
				"monitoring": map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
			})
		},
	}
	for _, name := range slices.Sorted(maps.Keys(render)) {
		t.Run(name, func(t *testing.T) {
			objs, err := render[name]()
			require.NoError(t, err)
			checked := 0
			for _, o := range objs {
				apiVersion, _ := o["apiVersion"].(string)
				if unserved(apiVersion) || o["kind"] == "Namespace" {
					continue
				}
				checked++
				out, err := kube.ApplyYAMLErr(t, "", toYAML(t, o), "--dry-run=server", "--validate=strict")
				if assert.NoError(t, err, "%s %v", o["kind"], o["metadata"]) {
					assert.Contains(t, out, "serverside-applied (server dry run)")
					assert.NotContains(t, out, "would violate PodSecurity", "%s %v", o["kind"], o["metadata"])
				}
			}
			assert.Positive(t, checked)
		})
	}
}

func unserved(apiVersion string) bool {
	for _, g := range unservedGroups {
		if strings.HasPrefix(apiVersion, g) {
			return true
		}
	}
	return false
}

func toYAML(t *testing.T, o deploytest.Object) string {
	t.Helper()
	data, err := yaml.Marshal(o)
	require.NoError(t, err)
	return string(data)
}
