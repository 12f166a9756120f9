//go:build integration

package integration_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// canI asks the API server whether user may do verb on resource in namespace, as
// `kubectl auth can-i --as` does (kubectl exits 1 when the answer is no).
func canI(t *testing.T, user, namespace, verb, resource string, extra ...string) string {
	t.Helper()
	args := append([]string{"auth", "can-i", verb, resource, "-n", namespace, "--as=" + user}, extra...)
	out, _, err := kube.Run(context.Background(), "", args...)
	answer := strings.TrimSpace(out)
	require.Contains(t, []string{"yes", "no"}, answer, "kubectl %s: %v", strings.Join(args, " "), err)
	return answer
}

// bind gives user the built-in ClusterRole role in namespace through a RoleBinding, as a
// cluster administrator gives a team its namespace.
func bind(t *testing.T, namespace, role, user string) {
	t.Helper()
	name := "llmbudget-test-" + role
	kube.Kubectl(t, "create", "rolebinding", name, "-n", namespace, "--clusterrole="+role, "--user="+user)
	t.Cleanup(func() {
		_, _, _ = kube.Run(context.Background(), "", "delete", "rolebinding", name, "-n", namespace, "--ignore-not-found")
	})
}

const budgetsResource = "llmcostbudgets.llmbudget.dev"

// TestNamespaceMembersGetBudgetsThroughTheBuiltInRoles installs deploy/'s user ClusterRoles
// and binds people to the built-in view, edit and admin roles in team-ml, and one to
// llmbudget-budget-admin: as with a ResourceQuota, the viewer, the editor and the admin read
// budgets there and change none; only the budget admin creates and deletes them; and nobody
// writes a budget's status, which is Metacontroller's.
func TestNamespaceMembersGetBudgetsThroughTheBuiltInRoles(t *testing.T) {
	installBudgetCRD(t)
	roles := filepath.Join(repoRoot, "deploy", "base", "rbac", "user-clusterroles.yaml")
	kube.Kubectl(t, "apply", "--server-side", "--field-manager=llmbudget-test", "-f", roles)
	t.Cleanup(func() { _, _, _ = kube.Run(context.Background(), "", "delete", "-f", roles, "--ignore-not-found") })

	const ns = "team-ml"
	kube.EnsureNamespace(t, ns)
	viewer, editor, admin := "viewer@example.com", "editor@example.com", "admin@example.com"
	finops := "finops@example.com"
	bind(t, ns, "view", viewer)
	bind(t, ns, "edit", editor)
	bind(t, ns, "admin", admin)
	bind(t, ns, "llmbudget-budget-admin", finops)
	// kube-controller-manager aggregates the rules into view, edit and admin asynchronously.
	cluster.WaitFor(t, time.Minute, "view, edit and admin to aggregate llmbudget's rules", func() (bool, string) {
		got := canI(t, viewer, ns, "list", budgetsResource) + canI(t, editor, ns, "get", budgetsResource) +
			canI(t, admin, ns, "watch", budgetsResource)
		return got == "yesyesyes", got
	})

	cases := []struct {
		user, verb, namespace, subresource, want string
	}{
		{viewer, "list", ns, "", "yes"},
		{viewer, "get", ns, "", "yes"},
		{viewer, "watch", ns, "", "yes"},
		{viewer, "get", ns, "status", "yes"},
		{viewer, "create", ns, "", "no"},
		{viewer, "update", ns, "", "no"},
		{viewer, "patch", ns, "", "no"},
		{viewer, "delete", ns, "", "no"},
		{viewer, "list", "default", "", "no"},
		{editor, "list", ns, "", "yes"},
		{editor, "get", ns, "", "yes"},
		{editor, "create", ns, "", "no"},
		{editor, "update", ns, "", "no"},
		{editor, "patch", ns, "", "no"},
		{editor, "delete", ns, "", "no"},
		{editor, "deletecollection", ns, "", "no"},
		{editor, "update", ns, "status", "no"},
		{admin, "get", ns, "", "yes"},
		{admin, "create", ns, "", "no"},
		{admin, "update", ns, "", "no"},
		{admin, "delete", ns, "", "no"},
		{admin, "patch", ns, "status", "no"},
		{finops, "create", ns, "", "yes"},
		{finops, "update", ns, "", "yes"},
		{finops, "delete", ns, "", "yes"},
		{finops, "patch", ns, "status", "no"},
		{finops, "create", "default", "", "no"},
	}
	for _, tc := range cases {
		name := fmt.Sprintf("%s %s llmcostbudgets %s in %s is %s", tc.user, tc.verb, tc.subresource, tc.namespace, tc.want)
		t.Run(name, func(t *testing.T) {
			var extra []string
			if tc.subresource != "" {
				extra = append(extra, "--subresource="+tc.subresource)
			}
			assert.Equal(t, tc.want, canI(t, tc.user, tc.namespace, tc.verb, budgetsResource, extra...))
		})
	}

	t.Run("the budget admin creates a budget that the viewer then reads and the editor cannot delete", func(t *testing.T) {
		budget := `apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata:
  name: rbac-check
spec:
  limitUSD: "10"
  costSource: {configMapName: llm-spend, format: Total, key: total-usd}
`
		kube.ApplyYAML(t, ns, budget, "--as="+finops)
		t.Cleanup(func() {
			_, _, _ = kube.Run(context.Background(), "", "delete", "llmb", "rbac-check", "-n", ns, "--ignore-not-found")
		})
		out := kube.Kubectl(t, "get", "llmb", "rbac-check", "-n", ns, "--as="+viewer, "-o", "name")
		assert.Equal(t, "llmcostbudget.llmbudget.dev/rbac-check\n", out)
		for _, user := range []string{viewer, editor, admin} {
			msg, err := kube.KubectlErr(t, "", "delete", "llmb", "rbac-check", "-n", ns, "--as="+user)
			require.Error(t, err)
			assert.Contains(t, msg, "Forbidden")
		}
	})
}
