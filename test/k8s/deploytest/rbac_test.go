package deploytest_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// writeVerbs are the verbs that change an object.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection", "*"}

// grants lists, as "<role>: <verb> <group>/<resource>", every write that a ClusterRole or Role
// of objs grants on one of resources (in apiGroup), and that keep accepts.
func grants(objs []object, apiGroup string, resources []string, keep func(role object) bool) []string {
	var out []string
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, role := range ofKind(objs, kind) {
			if !keep(role) {
				continue
			}
			name, _ := dig(role, "metadata", "name")
			rules, _ := role["rules"].([]any)
			for _, r := range rules {
				groups, _ := dig(r, "apiGroups")
				res, _ := dig(r, "resources")
				verbs, _ := dig(r, "verbs")
				if !slices.ContainsFunc(groups.([]any), func(g any) bool { return g == apiGroup || g == "*" }) {
					continue
				}
				for _, rs := range res.([]any) {
					for _, v := range verbs.([]any) {
						if (slices.Contains(resources, rs.(string)) || rs == "*") && slices.Contains(writeVerbs, v.(string)) {
							out = append(out, fmt.Sprintf("%s: %s %s/%s", name, v, apiGroup, rs))
						}
					}
				}
			}
		}
	}
	return out
}

// notMetacontrollers is every role but the one aggregated into Metacontroller's (bound to its ServiceAccount
// only), which the namespace decorator needs to label Namespaces.
func notMetacontrollers(role object) bool {
	agg, _ := dig(role, "metadata", "labels", "llmbudget.dev/aggregate-to-metacontroller")
	return agg != "true"
}

// aggregatedIntoEditOrAdmin is a role whose rules Kubernetes adds to the built-in edit or admin role.
func aggregatedIntoEditOrAdmin(role object) bool {
	edit, _ := dig(role, "metadata", "labels", "rbac.authorization.k8s.io/aggregate-to-edit")
	admin, _ := dig(role, "metadata", "labels", "rbac.authorization.k8s.io/aggregate-to-admin")
	return edit == "true" || admin == "true"
}

// What every variant ships: a cluster budget's namespaces cannot leave its selector by their
// own users' hands (Namespace labels stay cluster-scoped, and no role llmbudget ships writes a
// Namespace but Metacontroller's, for the namespace decorator's label), and nothing aggregated
// into edit or admin writes budgets unless the cluster opts in with budget-writers-in-edit.
func TestNoShippedRoleLetsANamespaceLiftItsBudget(t *testing.T) {
	variants := map[string][]object{
		"kustomize deploy/overlays/all-kinds":       kustomize(t, "deploy/overlays/all-kinds"),
		"kustomize deploy/overlays/secure":          kustomize(t, "deploy/overlays/secure"),
		"kustomize deploy/overlays/spend-writer":    kustomize(t, "deploy/overlays/spend-writer"),
		"kustomize deploy/overlays/admission-check": kustomize(t, "deploy/overlays/admission-check"),

		"helm defaults":              renderChart(t, nil),
		"helm with the spend writer": renderChart(t, map[string]any{"spendWriter": map[string]any{"enabled": true}}),
		"helm with the admission check": renderChart(t,
			map[string]any{"admissionCheck": map[string]any{"enabled": true}}),
	}
	for name, objs := range variants {
		t.Run(name, func(t *testing.T) {
			assert.Empty(t, grants(objs, "", []string{"namespaces"}, notMetacontrollers),
				"no role but Metacontroller's writes a Namespace")
			assert.Empty(t, grants(objs, "llmbudget.dev", []string{"llmcostbudgets", "clusterllmcostbudgets",
				"llmcostbudgets/status", "clusterllmcostbudgets/status"}, aggregatedIntoEditOrAdmin),
				"nothing aggregated into edit or admin writes budgets")
			assert.Empty(t, grants(objs, "", []string{"resourcequotas"}, aggregatedIntoEditOrAdmin),
				"nothing aggregated into edit or admin writes ResourceQuotas")
		})
	}
	t.Run("budget-writers-in-edit gives it back, on purpose", func(t *testing.T) {
		objs := renderChart(t, map[string]any{"aggregateToDefaultRoles": map[string]any{"edit": true}})
		assert.NotEmpty(t, grants(objs, "llmbudget.dev", []string{"llmcostbudgets"}, aggregatedIntoEditOrAdmin))
	})
}
