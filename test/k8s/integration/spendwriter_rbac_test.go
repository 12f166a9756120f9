//go:build integration

package integration_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/deploytest"
)

// TestTheSpendWriterCanDoWhatARunNeedsAndNothingElse installs the spend writer's
// ServiceAccount, ClusterRole and binding as deploy/overlays/spend-writer renders them and asks
// the API server, impersonating the ServiceAccount, what it may do: list budgets everywhere,
// read price tables, create and patch spend ConfigMaps, post and count up Events; and no more: no Secrets,
// no budget writes, no deletes, no Pods, no roles.
func TestTheSpendWriterCanDoWhatARunNeedsAndNothingElse(t *testing.T) {
	installBudgetCRD(t)
	installSpendWriterRBAC(t)

	const writer = "system:serviceaccount:llmbudget-system:llmbudget-spend-writer"
	cases := []struct {
		verb, resource, namespace, want string
	}{
		{"list", budgetsResource, "", "yes"},
		{"list", budgetsResource, "team-ml", "yes"},
		{"get", "configmaps", "team-ml", "yes"},
		{"get", "configmaps", "llmbudget-system", "yes"}, // the shared price table
		{"create", "configmaps", "team-ml", "yes"},
		{"patch", "configmaps", "team-ml", "yes"}, // server-side apply is a patch
		{"create", "events", "team-ml", "yes"},
		{"get", "events", "team-ml", "yes"},    // its own SpendWriteFailed, to count it up
		{"update", "events", "team-ml", "yes"}, // ditto

		{"update", "configmaps", "team-ml", "no"},
		{"delete", "configmaps", "team-ml", "no"},
		{"list", "configmaps", "team-ml", "no"},
		{"watch", "configmaps", "team-ml", "no"},
		{"get", "secrets", "team-ml", "no"},
		{"list", "secrets", "llmbudget-system", "no"},
		{"get", budgetsResource, "team-ml", "no"},
		{"create", budgetsResource, "team-ml", "no"},
		{"patch", budgetsResource, "team-ml", "no"},
		{"update", budgetsResource + "/status", "team-ml", "no"},
		{"delete", budgetsResource, "team-ml", "no"},
		{"list", "clusterllmcostbudgets.llmbudget.dev", "", "no"},
		{"create", "pods", "llmbudget-system", "no"},
		{"create", "pods", "team-ml", "no"},
		{"patch", "events", "team-ml", "no"},
		{"list", "events", "team-ml", "no"},
		{"delete", "events", "team-ml", "no"},
		{"patch", "namespaces", "", "no"},
		{"create", "rolebindings", "team-ml", "no"},
		{"impersonate", "serviceaccounts", "team-ml", "no"},

		// Its Lease, in its own namespace: created once, then read and renewed by name.
		{"create", "leases.coordination.k8s.io", "llmbudget-system", "yes"},
		{"get", "leases.coordination.k8s.io/llmbudget-spend-writer", "llmbudget-system", "yes"},
		{"update", "leases.coordination.k8s.io/llmbudget-spend-writer", "llmbudget-system", "yes"},
		{"update", "leases.coordination.k8s.io/kube-controller-manager", "llmbudget-system", "no"},
		{"delete", "leases.coordination.k8s.io/llmbudget-spend-writer", "llmbudget-system", "no"},
		{"list", "leases.coordination.k8s.io", "llmbudget-system", "no"},
		{"create", "leases.coordination.k8s.io", "team-ml", "no"},
		{"update", "leases.coordination.k8s.io/llmbudget-spend-writer", "team-ml", "no"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s %s in %q: %s", c.verb, c.resource, c.namespace, c.want), func(t *testing.T) {
			extra := []string{}
			ns := c.namespace
			if ns == "" {
				ns, extra = "default", []string{"--all-namespaces"}
			}
			assert.Equal(t, c.want, canI(t, writer, ns, c.verb, c.resource, extra...))
		})
	}
}

// installSpendWriterRBAC installs the spend writer's ServiceAccount, ClusterRole, ClusterRoleBinding, and its
// Lease's Role and RoleBinding as deploy/overlays/spend-writer renders them, and removes them when the test ends.
func installSpendWriterRBAC(t *testing.T) {
	t.Helper()
	objs, err := deploytest.Kustomize(repoRoot, "deploy/overlays/spend-writer")
	require.NoError(t, err)
	var rbac []deploytest.Object
	for _, o := range objs {
		switch o["kind"] {
		case "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Role", "RoleBinding":
			if name, _ := o["metadata"].(map[string]any)["name"].(string); name == "llmbudget-spend-writer" {
				rbac = append(rbac, o)
			}
		}
	}
	require.Len(t, rbac, 5, "the writer's ServiceAccount, ClusterRole, ClusterRoleBinding, Role and RoleBinding")
	kube.EnsureNamespace(t, "llmbudget-system")
	var manifest strings.Builder
	for _, o := range rbac {
		doc, err := yaml.Marshal(o)
		require.NoError(t, err)
		manifest.WriteString("---\n" + string(doc))
	}
	out, err := kube.KubectlErr(t, manifest.String(),
		"apply", "--server-side", "--field-manager=llmbudget-test", "-f", "-")
	require.NoError(t, err, out)
	t.Cleanup(func() {
		_, _, _ = kube.Run(context.Background(), manifest.String(), "delete", "-f", "-", "--ignore-not-found")
	})
}
