//go:build integration

package integration_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// ClusterLLMCostBudget against the real API server: its CRD's admission, the children its
// hooks render (created as Metacontroller would, in the namespaces they name), and its
// admission policy, whose cluster-scoped params are matched to the request's namespace by
// the policy itself.

func installClusterBudgetCRD(t *testing.T) {
	t.Helper()
	kube.InstallCRDs(t, filepath.Join(repoRoot, "deploy", "crd", "clusterllmcostbudgets.llmbudget.dev.yaml"))
}

// departmentJSON is examples/department/department-budget.yaml with edit applied to its spec.
func departmentJSON(t *testing.T, edit func(spec map[string]any)) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "examples", "department", "department-budget.yaml"))
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal(data, &obj))
	if edit != nil {
		edit(obj["spec"].(map[string]any))
	}
	return toJSON(t, obj)
}

// departmentSelector is a namespaceSelector of one requirement on the department label.
func departmentSelector(requirement map[string]any) map[string]any {
	requirement["key"] = "department"
	return map[string]any{"matchExpressions": []any{requirement}}
}

func TestClusterBudgetCRDIsClusterScopedAndChecksItsSelector(t *testing.T) {
	installClusterBudgetCRD(t)
	scope := kube.Kubectl(t, "get", "crd", "clusterllmcostbudgets.llmbudget.dev", "-o", "jsonpath={.spec.scope}")
	assert.Equal(t, "Cluster", scope)
	out, err := kube.KubectlErr(t, departmentJSON(t, nil), "create", "-f", "-", "--dry-run=server")
	require.NoError(t, err, out)
	assert.Contains(t, kube.Kubectl(t, "api-resources", "--api-group=llmbudget.dev"), "cllmb")
	stamped := departmentJSON(t, func(s map[string]any) { s["costSource"].(map[string]any)["maxAge"] = "1h30m" })
	out, err = kube.KubectlErr(t, stamped, "create", "-f", "-", "--dry-run=server")
	require.NoError(t, err, out)

	cases := []struct {
		name string
		edit func(spec map[string]any)
		want string
	}{
		{"a budget without a namespaceSelector", func(s map[string]any) { delete(s, "namespaceSelector") },
			`spec.namespaceSelector: Required value`},
		{"an In requirement without values", func(s map[string]any) {
			s["namespaceSelector"] = departmentSelector(map[string]any{"operator": "In"})
		}, "values must be non-empty for operators In and NotIn"},
		{"an Exists requirement with values", func(s map[string]any) {
			s["namespaceSelector"] = departmentSelector(map[string]any{"operator": "Exists", "values": []any{"ml"}})
		}, "values must be non-empty for operators In and NotIn, and empty for Exists"},
		{"an unknown operator", func(s map[string]any) {
			s["namespaceSelector"] = departmentSelector(map[string]any{"operator": "Near"})
		}, `Unsupported value: "Near"`},
		{"a budget without a spend source", func(s map[string]any) {
			s["costSource"] = map[string]any{"format": "DailyLedger"}
		}, `spec.costSource.spendSource: Required value`},
		{"a maxAge under a minute", func(s map[string]any) { s["costSource"].(map[string]any)["maxAge"] = "30s" },
			`spec.costSource.maxAge: Invalid value: "30s": "30s" must be a duration of whole hours, minutes or seconds`},
		{"the labelled scope", func(s map[string]any) {
			s["enforcement"] = map[string]any{
				"action": "BlockNewWorkloads", "resources": []any{"jobs.batch"}, "scope": "Labelled",
			}
		}, `Unsupported value: "Labelled"`},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			out, err := kube.KubectlErr(t, departmentJSON(t, tc.edit), "create", "-f", "-", "--dry-run=server")
			require.Error(t, err)
			assert.Contains(t, out, tc.want)
		})
	}
}

func TestClusterBudgetChildrenAreStoredAsSentInTheNamespacesTheyName(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "test", "fixtures", "clusterbudget", "sync", "*.response.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, ns := range []string{"ml-research", "ml-serving", "other"} {
		kube.EnsureNamespace(t, ns)
	}
	objects := 0
	for _, file := range files {
		rel, err := filepath.Rel(filepath.Join(repoRoot, "test", "fixtures"), file)
		require.NoError(t, err)
		r := readResponse(t, rel)
		t.Run(strings.TrimSuffix(filepath.ToSlash(rel), ".response.json"), func(t *testing.T) {
			for _, obj := range r.Children {
				objects++
				manifest, desc := toJSON(t, obj), describeObject(obj)
				_, err := kube.KubectlErr(t, manifest, "create", "-f", "-")
				if !assert.NoError(t, err, "create %s", desc) {
					continue
				}
				stored := getJSON(t, manifest)
				assert.Empty(t, subsetDiff("", obj, stored), "%s as stored differs from what the hook sent", desc)
				// The next fixture renders the same names.
				out, err := kube.KubectlErr(t, manifest, "delete", "-f", "-")
				require.NoError(t, err, out)
			}
		})
	}
	assert.Positive(t, objects, "some golden response has children")
}

func TestClusterPolicyGateRefusesOnlyInTheNamespacesTheBudgetCloses(t *testing.T) {
	installClusterBudgetCRD(t)
	installPolicy(t, "llmbudget-cluster-budgets",
		"cluster-validatingadmissionpolicy.yaml", "cluster-validatingadmissionpolicybinding.yaml")

	for _, ns := range []string{"ml-research", "ml-serving", "other"} {
		kube.EnsureNamespace(t, ns)
	}
	kube.ApplyYAML(t, "", departmentJSON(t, nil))
	t.Cleanup(func() {
		_, _ = kube.KubectlErr(t, "", "delete", "clusterllmcostbudget", "ml-department", "--ignore-not-found")
	})
	assertAdmitted(t, "a Job while the budget has no status",
		"create", "job", "train", "--image="+pauseImage, "-n", "ml-research", "--dry-run=server")

	// ml-serving left the selector: the hook closes ml-research and other only.
	over := readResponse(t, "clusterbudget/sync/capture-namespace-left-while-over-budget.response.json").Status
	require.NotNil(t, over)
	patch := toJSON(t, []any{map[string]any{"op": "add", "path": "/status", "value": over}})
	kube.Kubectl(t, "patch", "clusterllmcostbudget", "ml-department", "--subresource=status", "--type=json", "-p", patch)
	labelBlocking(t, kube, "clusterllmcostbudget", "ml-department", "", over)

	want := "ClusterLLMCostBudget ml-department is OverBudget " +
		"(20004.50 of 20000.00 USD this Monthly period, ends 2027-01-01T00:00:00Z): new jobs.batch are refused in ml-research"
	out := waitRefused(t, want, "",
		"create", "job", "train", "--image="+pauseImage, "-n", "ml-research", "--dry-run=server")
	assert.Contains(t, out,
		"ValidatingAdmissionPolicy 'llmbudget-cluster-budgets' with binding 'llmbudget-cluster-budgets' denied request")
	t.Logf("kubectl create job train -n ml-research:\n%s", out)
	waitRefused(t, "are refused in other", "",
		"create", "deployment", "web", "--image="+pauseImage, "-n", "other", "--dry-run=server")
	assertAdmitted(t, "a Job in the namespace that left the selector",
		"create", "job", "train", "--image="+pauseImage, "-n", "ml-serving", "--dry-run=server")
	assertAdmitted(t, "a Pod, which the budget does not list",
		"run", "p", "--image="+pauseImage, "-n", "ml-research", "--dry-run=server")
}
