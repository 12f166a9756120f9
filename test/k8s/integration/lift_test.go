//go:build integration

package integration_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// A budget is a control: the people it limits must not be able to lift its block. These tests
// install what deploy/ installs for that (the user ClusterRoles, the Policy gate, the policies
// over spend sources and the spend writer's RBAC), give a namespace an OverBudget budget with
// gate Both (its status written as a sync would write it, its ResourceQuota created as
// Metacontroller would create it: no controller runs here), and try, as a user bound to the
// built-in edit and then admin role, everything that would lift the block. docs/enforcement.md
// ("Who can lift a block") lists the same attempts and what stops each.

const (
	// spendWriter is the ServiceAccount deploy/components/spend-writer runs as.
	spendWriter = "system:serviceaccount:llmbudget-system:llmbudget-spend-writer"
	// writersNamed is how a refusal names the default spend writers.
	writersNamed = "only the spend writers (group system:masters, service accounts of llmbudget-system) " +
		"may change or delete it"
)

// liftScene is a namespace whose budget chatbot blocks new Jobs through both gates.
type liftScene struct {
	ns string
}

// installLiftControls applies the user ClusterRoles, the Policy gate, the spend-source
// policies and the spend writer's ServiceAccount and RBAC, and removes them when the test
// ends. The policies run with failurePolicy Fail, as in policy_test.go, so that an
// expression failing shows up as a refusal instead of being ignored.
func installLiftControls(t *testing.T) {
	t.Helper()
	installPolicyGate(t)
	roles := filepath.Join(repoRoot, "deploy", "base", "rbac", "user-clusterroles.yaml")
	kube.Kubectl(t, "apply", "--server-side", "--field-manager=llmbudget-test", "-f", roles)
	t.Cleanup(func() { _, _, _ = kube.Run(context.Background(), "", "delete", "-f", roles, "--ignore-not-found") })

	installSpendSourcePolicies(t)

	kube.EnsureNamespace(t, "llmbudget-system")
	component := filepath.Join(repoRoot, "deploy", "components", "spend-writer", "spend-writer.yaml")
	writer, err := cluster.ReadDocuments(component)
	require.NoError(t, err)
	var rbac []cluster.Document
	for _, d := range writer {
		switch d.Kind {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			rbac = append(rbac, d)
		}
	}
	require.Len(t, rbac, 5, "the writer's ServiceAccount, ClusterRole, ClusterRoleBinding, and its Lease's Role")
	writerRBAC := cluster.JoinDocuments(rbac)
	kube.ApplyYAML(t, "", writerRBAC)
	t.Cleanup(func() { _, _ = kube.KubectlErr(t, writerRBAC, "delete", "--ignore-not-found", "-f", "-") })
}

// installSpendSourcePolicies applies the two policies over spend sources and their bindings
// from deploy/base/admission, with failurePolicy Fail, and waits until the API server has
// type-checked them without warnings.
func installSpendSourcePolicies(t *testing.T) {
	t.Helper()
	installBudgetCRD(t)
	dir := filepath.Join(repoRoot, "deploy", "base", "admission")
	var docs []string
	for _, f := range []string{
		"spend-sources-validatingadmissionpolicy.yaml", "spend-sources-validatingadmissionpolicybinding.yaml",
	} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		docs = append(docs, string(data))
	}
	manifest := strings.ReplaceAll(strings.Join(docs, "\n---\n"), "failurePolicy: Ignore\n", "failurePolicy: Fail\n")
	kube.ApplyYAML(t, "", manifest)
	t.Cleanup(func() { _, _ = kube.KubectlErr(t, manifest, "delete", "--ignore-not-found", "-f", "-") })
	for _, name := range []string{"llmbudget-spend-sources"} {
		cluster.WaitFor(t, 30*time.Second, name+" to be type-checked", func() (bool, string) {
			out, err := kube.KubectlErr(t, "", "get", "validatingadmissionpolicy", name, "-o", "jsonpath={.status}")
			return err == nil && strings.Contains(out, "observedGeneration"), out
		})
		warnings := kube.Kubectl(t, "get", "validatingadmissionpolicy", name,
			"-o", "jsonpath={.status.typeChecking.expressionWarnings}")
		assert.Empty(t, warnings, "%s type-checks without warnings", name)
	}
	// The API server resolves paramKind through discovery, which may lag behind the CRD just
	// (re)applied; with failurePolicy Fail every ConfigMap write is refused until it has.
	cluster.WaitFor(t, 30*time.Second, "the spend-source policy to admit an ordinary ConfigMap", func() (bool, string) {
		out, err := kube.KubectlErr(t, "", "create", "configmap", "probe", "-n", "default", "--dry-run=server")
		return err == nil, out
	})

}

// newLiftScene creates the namespace, its budgets and spend, the quota and the blocking
// status, and waits until the block and the spend-source policy are in force.
//
//   - chatbot: OverBudget, gate Both, blocking jobs.batch; its spend ConfigMap llm-spend is
//     labelled llmbudget.dev/spend-source, as deploy/ and the examples write them;
//   - batch: its spend ConfigMap batch-spend carries no label: anyone with edit may write it, and the hook
//     never reads it (TestASquattedSpendConfigMapIsUntrustedAndBlocksUnderClosed);
//   - nightly: names nightly-spend, which does not exist (yet);
//   - dept-spend: a ClusterLLMCostBudget's spend source (label only, no LLMCostBudget names it);
//   - app-config: an ordinary ConfigMap.
func newLiftScene(t *testing.T, prefix string) liftScene {
	t.Helper()
	ns := kube.Namespace(t, prefix)
	gateBoth := func(spec map[string]any) {
		spec["enforcement"] = map[string]any{"action": "BlockNewWorkloads", "gate": "Both", "resources": []any{"jobs.batch"}}
		spec["costSource"] = map[string]any{"configMapName": "llm-spend", "key": "total-usd"}
	}
	kube.ApplyYAML(t, ns, budgetYAML(t, "chatbot", gateBoth))
	kube.ApplyYAML(t, ns, budgetYAML(t, "batch", func(spec map[string]any) {
		spec["costSource"] = map[string]any{"configMapName": "batch-spend", "key": "total-usd"}
	}))
	kube.ApplyYAML(t, ns, budgetYAML(t, "nightly", func(spec map[string]any) {
		spec["costSource"] = map[string]any{"configMapName": "nightly-spend", "key": "total-usd"}
	}))
	for _, cm := range []string{
		"{name: llm-spend, labels: {llmbudget.dev/spend-source: llm-spend}}, data: {total-usd: '612.00'}",
		"{name: batch-spend}, data: {total-usd: '3.00'}",
		"{name: dept-spend, labels: {llmbudget.dev/spend-source: ml-department}}, data: {total-usd: '40.00'}",
		"{name: app-config}, data: {color: blue}",
	} {
		metadata, data, _ := strings.Cut(cm, ", data: ")
		kube.ApplyYAML(t, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata: "+metadata+"\ndata: "+data+"\n")
	}

	const quota = "llmbudget-chatbot"
	kube.ApplyYAML(t, ns, `apiVersion: v1
kind: ResourceQuota
metadata:
  name: `+quota+`
  labels: {app.kubernetes.io/managed-by: llmbudget, llmbudget.dev/budget: chatbot}
spec:
  hard: {count/jobs.batch: "0"}
`)
	writeStatus(t, ns, "chatbot", map[string]any{
		"state": "OverBudget",
		"enforcement": map[string]any{
			"blocking": true, "gates": []any{"Policy", "Quota"}, "scope": "Namespace", "resources": []any{"jobs.batch"},
			"quotaName": quota, "message": "LLMCostBudget " + ns + "/chatbot is OverBudget (612.00 of 500.00 USD)",
		},
	})
	s := liftScene{ns: ns}
	s.assertBlocked(t)
	cluster.WaitFor(t, 30*time.Second, "the quota controller to fill in the status of "+quota, func() (bool, string) {
		out, err := kube.KubectlErr(t, "", "get", "resourcequota", quota, "-n", ns, "-o", "jsonpath={.status.hard}")
		return err == nil && strings.Contains(out, "count/jobs.batch"), out
	})
	// A ServiceAccount of the namespace that the team has given edit (a CI job's, say): anyone
	// who can create Pods in the namespace can run as it.
	kube.Kubectl(t, "create", "serviceaccount", "ci", "-n", ns)
	kube.Kubectl(t, "create", "rolebinding", "ci-edit", "-n", ns, "--clusterrole=edit", "--serviceaccount="+ns+":ci")
	waitRefused(t, writersNamed, "", "patch", "configmap", "llm-spend", "-n", ns, "--type=merge",
		"-p", `{"data":{"total-usd":"0"}}`, "--dry-run=server", "--as=system:serviceaccount:"+ns+":ci")
	return s
}

// assertBlocked checks that the block is in place: the Policy gate refuses a Job with the
// budget's message, the budget is as it was, its quota is there and its spend unchanged.
func (s liftScene) assertBlocked(t *testing.T) {
	t.Helper()
	refusal := "LLMCostBudget " + s.ns + "/chatbot is OverBudget (612.00 of 500.00 USD): " +
		"new jobs.batch are refused in " + s.ns
	waitRefused(t, refusal, "", "create", "job", "train", "--image="+pauseImage, "-n", s.ns, "--dry-run=server")
	assert.Equal(t, `500 false {"action":"BlockNewWorkloads","blockOn":"Projected","failurePolicy":"Open","gate":"Both",`+
		`"mode":"Deny",`+
		`"resources":["jobs.batch"],"scope":"Namespace"}`,
		s.get(t, "llmb/chatbot", "{.spec.limitUSD} {.spec.suspend} {.spec.enforcement}"))
	assert.Equal(t, `{"count/jobs.batch":"0"}`, s.get(t, "resourcequota/llmbudget-chatbot", "{.spec.hard}"))
	assert.Equal(t, "612.00", s.get(t, "configmap/llm-spend", "{.data.total-usd}"))
	assert.Equal(t, "llm-spend", s.get(t, "configmap/llm-spend", sourceLabel))
	assert.Equal(t, "ml-department", s.get(t, "configmap/dept-spend", sourceLabel))
}

// sourceLabel is the JSONPath of a ConfigMap's llmbudget.dev/spend-source label.
const sourceLabel = `{.metadata.labels.llmbudget\.dev/spend-source}`

// get prints the JSONPath path of object (kind/name) in the scene's namespace.
func (s liftScene) get(t *testing.T, object, path string) string {
	t.Helper()
	return kube.Kubectl(t, "get", object, "-n", s.ns, "-o", "jsonpath="+path)
}

// What stops an attempt, as the report and docs/enforcement.md name it.
const (
	byRBAC         = "RBAC"
	bySpendSources = "ValidatingAdmissionPolicy llmbudget-spend-sources"
)

// attempt is one way to lift the block, as kubectl arguments run as the namespace's user.
type attempt struct {
	name  string
	stdin string
	args  []string
	// as replaces the user when not empty (a ServiceAccount of the namespace).
	as string
	// stoppedBy and want, per role when the roles differ: what refuses it and what kubectl prints.
	stoppedBy map[string]string
	want      map[string]string
}

func both(v string) map[string]string { return map[string]string{"edit": v, "admin": v} }

func liftAttempts(ns string) []attempt {
	cm := func(name string) string { return "ConfigMap " + ns + "/" + name }
	labelled := func(name, source string) string {
		return cm(name) + " is a spend source (label llmbudget.dev/spend-source=" + source + "): " + writersNamed
	}
	sourceOfChatbot := labelled("llm-spend", "llm-spend")
	cannot := func(verb, resource string) map[string]string {
		return both("cannot " + verb + ` resource "` + resource + `"`)
	}
	escalation := func(resource string) map[string]string {
		return map[string]string{
			"edit":  `cannot create resource "` + resource + `"`,
			"admin": "is attempting to grant RBAC permissions not currently held",
		}
	}
	patchBudget := func(patch string) []string {
		return []string{"patch", "llmb", "chatbot", "--type=merge", "-p", `{"spec":` + patch + `}`}
	}
	zeroSpend := func(name string) []string {
		return []string{"patch", "configmap", name, "--type=merge", "-p", `{"data":{"total-usd":"0"}}`}
	}
	zero := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: llm-spend, namespace: " + ns + "}\ndata: {total-usd: '0'}\n"
	ci := "system:serviceaccount:" + ns + ":ci"
	return []attempt{
		{name: "suspend the budget", args: patchBudget(`{"suspend":true}`),
			stoppedBy: both(byRBAC), want: cannot("patch", "llmcostbudgets")},
		{name: "raise its limit", args: patchBudget(`{"limitUSD":"100000"}`),
			stoppedBy: both(byRBAC), want: cannot("patch", "llmcostbudgets")},
		{name: "set action None", args: patchBudget(`{"enforcement":{"action":"None"}}`),
			stoppedBy: both(byRBAC), want: cannot("patch", "llmcostbudgets")},
		{name: "change the gate", args: patchBudget(`{"enforcement":{"gate":"Policy"}}`),
			stoppedBy: both(byRBAC), want: cannot("patch", "llmcostbudgets")},
		{name: "change the scope", args: patchBudget(`{"enforcement":{"scope":"Labelled"}}`),
			stoppedBy: both(byRBAC), want: cannot("patch", "llmcostbudgets")},
		{name: "rewrite the budget's status", args: []string{"patch", "llmb", "chatbot", "--subresource=status",
			"--type=merge", "-p", `{"status":{"enforcement":{"blocking":false}}}`},
			stoppedBy: both(byRBAC), want: cannot("patch", "llmcostbudgets/status")},
		{name: "switch the budget to warn mode", args: patchBudget(`{"enforcement":{"mode":"Warn"}}`),
			stoppedBy: both(byRBAC), want: cannot("patch", "llmcostbudgets")},
		{name: "remove the label by which the gate's binding selects the budget",
			args:      []string{"label", "llmb", "chatbot", "llmbudget.dev/blocking-"},
			stoppedBy: both(byRBAC), want: cannot("patch", "llmcostbudgets")},
		// No decorator runs here, so the label is not there to remove: overwriting it is the same write.
		{name: "relabel the namespace unblocked",
			args:      []string{"label", "namespace", ns, "--overwrite", "llmbudget.dev/blocked=false"},
			stoppedBy: both(byRBAC), want: cannot("patch", "namespaces")},
		{name: "label the namespace as one whose budgets do not block, which the gate's bindings skip",
			args:      []string{"label", "namespace", ns, "--overwrite", "llmbudget.dev/budgets-blocking=false"},
			stoppedBy: both(byRBAC), want: cannot("patch", "namespaces")},
		{name: "delete the budget", args: []string{"delete", "llmb", "chatbot"},
			stoppedBy: both(byRBAC), want: cannot("delete", "llmcostbudgets")},
		{name: "patch the spend ConfigMap", args: zeroSpend("llm-spend"),
			stoppedBy: both(bySpendSources), want: both(sourceOfChatbot)},
		// A projected block lifts when the rate beside the figures says the limit is further off.
		{name: "plant a burn rate of zero beside the figures", args: []string{"annotate", "configmap", "llm-spend",
			`llmbudget.dev/burn-rate={"asOf":"2026-12-06T06:00:00Z","sampledAt":"2026-12-06T06:00:00Z",` +
				`"window":"1m0s","usdPerHour":"0"}`},
			stoppedBy: both(bySpendSources), want: both(sourceOfChatbot)},
		{name: "opt the budget out of projected blocks", args: patchBudget(`{"enforcement":{"blockOn":"Measured"}}`),
			stoppedBy: both(byRBAC), want: cannot("patch", "llmcostbudgets")},
		{name: "delete the spend ConfigMap", args: []string{"delete", "configmap", "llm-spend"},
			stoppedBy: both(bySpendSources), want: both(sourceOfChatbot)},
		{name: "delete and re-create the spend ConfigMap with zero spend", stdin: zero,
			args:      []string{"replace", "--force", "-f", "-"},
			stoppedBy: both(bySpendSources), want: both(sourceOfChatbot)},
		{name: "create a missing spend ConfigMap labelled as a spend source",
			stdin: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nightly-spend, " +
				"labels: {llmbudget.dev/spend-source: nightly}}\ndata: {total-usd: '0'}\n",
			args:      []string{"create", "-f", "-"},
			stoppedBy: both(bySpendSources), want: both(labelled("nightly-spend", "nightly"))},
		{name: "remove a cluster spend source's label",
			args:      []string{"label", "configmap", "dept-spend", "llmbudget.dev/spend-source-"},
			stoppedBy: both(bySpendSources), want: both(labelled("dept-spend", "ml-department"))},
		{name: "delete the ResourceQuota", args: []string{"delete", "resourcequota", "llmbudget-chatbot"},
			stoppedBy: both(byRBAC), want: cannot("delete", "resourcequotas")},
		{name: "raise the ResourceQuota", args: []string{"patch", "resourcequota", "llmbudget-chatbot", "--type=merge",
			"-p", `{"spec":{"hard":{"count/jobs.batch":"100"}}}`},
			stoppedBy: both(byRBAC), want: cannot("patch", "resourcequotas")},
		{name: "bind themselves llmbudget-budget-admin",
			args:      []string{"create", "rolebinding", "lift", "--clusterrole=llmbudget-budget-admin", "--user=USER"},
			stoppedBy: both(byRBAC), want: escalation("rolebindings")},
		{name: "write themselves a Role that writes budgets",
			args:      []string{"create", "role", "lift", "--verb=patch,delete", "--resource=llmcostbudgets.llmbudget.dev"},
			stoppedBy: both(byRBAC), want: escalation("roles")},
		{name: "take the namespace out of a cluster budget's selector",
			args:      []string{"label", "namespace", ns, "team=nobody", "--overwrite"},
			stoppedBy: both(byRBAC), want: cannot("patch", "namespaces")},
		{name: "unbind the spend-source policy",
			args:      []string{"delete", "validatingadmissionpolicybinding", "llmbudget-spend-sources"},
			stoppedBy: both(byRBAC), want: cannot("delete", "validatingadmissionpolicybindings")},
		{name: "write the spend ConfigMap as a ServiceAccount of the namespace that holds edit",
			as: ci, args: zeroSpend("llm-spend"),
			stoppedBy: both(bySpendSources), want: both(sourceOfChatbot)},
	}
}

func TestNamespaceEditorsAndAdminsCannotLiftABlock(t *testing.T) {
	installLiftControls(t)
	s := newLiftScene(t, "lift")

	for _, role := range []string{"edit", "admin"} {
		t.Run("as a user bound to "+role, func(t *testing.T) {
			user := role + "-lifter@example.com"
			bind(t, s.ns, role, user)
			cluster.WaitFor(t, time.Minute, role+" to read budgets and write ConfigMaps", func() (bool, string) {
				got := canI(t, user, s.ns, "get", budgetsResource) + canI(t, user, s.ns, "update", "configmaps")
				return got == "yesyes", got
			})
			assert.Equal(t, "no", canI(t, user, s.ns, "update", budgetsResource))
			assert.Equal(t, "no", canI(t, user, s.ns, "delete", budgetsResource))
			assert.Equal(t, "yes", canI(t, "system:serviceaccount:"+s.ns+":ci", s.ns, "patch", "configmaps"),
				"the ServiceAccount holds edit: only the policy stops it")

			pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"as-ci"},"spec":{"serviceAccountName":"ci",` +
				`"containers":[{"name":"kubectl","image":"registry.k8s.io/kubectl:v1.37.2"}]}}`
			out, err := kube.KubectlErr(t, pod, "create", "-f", "-", "-n", s.ns, "--as="+user, "--dry-run=server")
			assert.NoError(t, err, "the %s may create a Pod that runs as the namespace's ServiceAccount ci: %s", role, out)

			for _, a := range liftAttempts(s.ns) {
				t.Run(a.name, func(t *testing.T) {
					as := "--as=" + user
					if a.as != "" {
						as = "--as=" + a.as
					}
					args := append([]string{"-n", s.ns, as}, a.args...)
					for i, arg := range args {
						args[i] = strings.ReplaceAll(arg, "USER", user)
					}
					out, err := kube.KubectlErr(t, a.stdin, args...)
					require.Error(t, err, "refused: %s", out)
					assert.Contains(t, out, a.want[role])
					switch by := a.stoppedBy[role]; by {
					case byRBAC:
						assert.Contains(t, out, "forbidden")
					default:
						assert.Contains(t, out, writersNamed)
						assert.Contains(t, out, "ValidatingAdmissionPolicy '"+strings.TrimPrefix(by, "ValidatingAdmissionPolicy ")+"'")
					}
					t.Logf("refused by %s: %s", a.stoppedBy[role], strings.TrimSpace(out))
				})
			}
			s.assertBlocked(t)
		})
	}
}

// The other side of the control: the spend writers still write spend, and the cluster's
// administrators can still lift a block by hand.
func TestSpendWritersAndClusterAdministratorsStillChangeWhatABlockRestsOn(t *testing.T) {
	installLiftControls(t)
	s := newLiftScene(t, "lift-admins")
	asWriter := []string{"-n", s.ns, "--as=" + spendWriter}

	t.Run("the spend writer updates the spend ConfigMap", func(t *testing.T) {
		kube.Kubectl(t, append(asWriter, "patch", "configmap", "llm-spend", "--type=merge",
			"-p", `{"data":{"total-usd":"640.00"}}`)...)
		assert.Equal(t, "640.00", s.get(t, "configmap/llm-spend", "{.data.total-usd}"))
		kube.Kubectl(t, append(asWriter, "patch", "configmap", "dept-spend", "--type=merge",
			"-p", `{"data":{"total-usd":"41.00"}}`)...)
	})
	t.Run("the spend writer may write nothing but spend sources", func(t *testing.T) {
		for _, cm := range []string{"app-config", "batch-spend"} {
			out, err := kube.KubectlErr(t, "", append(asWriter, "patch", "configmap", cm, "--type=merge",
				"-p", `{"data":{"x":"y"}}`)...)
			require.Error(t, err, out)
			assert.Contains(t, out, "ValidatingAdmissionPolicy 'llmbudget-spend-sources'")
			assert.Contains(t, out, "the spend writers may write only spend sources: ConfigMap "+s.ns+"/"+cm+
				" carries no label llmbudget.dev/spend-source")
		}
		// Nor may it make an existing ConfigMap one by labelling it, in the same request or alone.
		out, err := kube.KubectlErr(t, "", append(asWriter, "label", "configmap", "app-config",
			"llmbudget.dev/spend-source=app-config")...)
		require.Error(t, err, out)
		assert.Contains(t, out, "the spend writers may write only spend sources: ConfigMap "+s.ns+
			"/app-config is not one yet, and only a cluster administrator may label it llmbudget.dev/spend-source")
		// A new one it may make: the spend writer creates a budget's ConfigMap, labelled, on its first run.
		out, err = kube.KubectlErr(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: new-spend, "+
			"labels: {llmbudget.dev/spend-source: new-spend}}\n",
			append(asWriter, "apply", "--server-side", "--field-manager=llmbudget-spend", "-f", "-")...)
		require.NoError(t, err, out)
	})
	t.Run("a writer's ServiceAccount name in the budget's own namespace is no writer", func(t *testing.T) {
		// As if someone made a ServiceAccount llmbudget-spend-writer in the budgeted namespace.
		kube.Kubectl(t, "create", "serviceaccount", "llmbudget-spend-writer", "-n", s.ns)
		kube.Kubectl(t, "create", "rolebinding", "local-writer", "-n", s.ns, "--clusterrole=edit",
			"--serviceaccount="+s.ns+":llmbudget-spend-writer")
		out, err := kube.KubectlErr(t, "", "-n", s.ns, "--as=system:serviceaccount:"+s.ns+":llmbudget-spend-writer",
			"patch", "configmap", "llm-spend", "--type=merge", "-p", `{"data":{"total-usd":"0"}}`)
		require.Error(t, err, out)
		assert.Contains(t, out, writersNamed)
	})

	s.assertSpend(t, "640.00")
	t.Run("a cluster administrator raises, suspends and deletes the budget, and rewrites its spend", func(t *testing.T) {
		kube.Kubectl(t, "-n", s.ns, "patch", "llmb", "chatbot", "--type=merge", "-p", `{"spec":{"limitUSD":"1000"}}`)
		kube.Kubectl(t, "-n", s.ns, "patch", "llmb", "chatbot", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
		assert.Equal(t, "1000 true", s.get(t, "llmb/chatbot", "{.spec.limitUSD} {.spec.suspend}"))
		kube.Kubectl(t, "-n", s.ns, "patch", "configmap", "batch-spend", "--type=merge", "-p", `{"data":{"total-usd":"0"}}`)
		kube.Kubectl(t, "-n", s.ns, "label", "configmap", "dept-spend", "llmbudget.dev/spend-source-")
		kube.Kubectl(t, "-n", s.ns, "delete", "llmb", "chatbot")
		kube.Kubectl(t, "-n", s.ns, "delete", "configmap", "llm-spend")
	})
}

func (s liftScene) assertSpend(t *testing.T, want string) {
	t.Helper()
	assert.Equal(t, want, s.get(t, "configmap/llm-spend", "{.data.total-usd}"))
}

// The policies over spend sources touch nothing else: a namespace member writes every other
// ConfigMap of a budgeted namespace, and a namespace without budgets is untouched.
func TestSpendSourcePoliciesLeaveOtherConfigMapsAlone(t *testing.T) {
	installLiftControls(t)
	s := newLiftScene(t, "lift-others")
	plain := kube.Namespace(t, "lift-plain")
	for _, ns := range []string{s.ns, plain} {
		user := "member-of-" + ns + "@example.com"
		bind(t, ns, "edit", user)
		cluster.WaitFor(t, time.Minute, "edit to write ConfigMaps in "+ns, func() (bool, string) {
			got := canI(t, user, ns, "update", "configmaps")
			return got == "yes", got
		})
		as := []string{"-n", ns, "--as=" + user}
		t.Run("in "+ns, func(t *testing.T) {
			kube.Kubectl(t, append(as, "create", "configmap", "settings", "--from-literal=mode=fast")...)
			kube.Kubectl(t, append(as, "patch", "configmap", "settings", "--type=merge", "-p", `{"data":{"mode":"slow"}}`)...)
			kube.Kubectl(t, append(as, "label", "configmap", "settings", "tier=gold")...)
			kube.Kubectl(t, append(as, "delete", "configmap", "settings")...)
			if ns == s.ns {
				kube.Kubectl(t, append(as, "patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"color":"red"}}`)...)
				kube.Kubectl(t, append(as, "delete", "configmap", "app-config")...)
				return
			}
			assertAdmitted(t, "a Job in a namespace without budgets",
				append(as, "create", "job", "train", "--image="+pauseImage, "--dry-run=server")...)
		})
	}
}

// `kubectl auth can-i`, as the closing check asks: a namespace editor reads budgets
// and cannot change them.
func TestAnEditorCanGetButNotUpdateBudgets(t *testing.T) {
	installLiftControls(t)
	ns := kube.Namespace(t, "lift-can-i")
	user := "editor-" + ns + "@example.com"
	bind(t, ns, "edit", user)
	cluster.WaitFor(t, time.Minute, "edit to aggregate llmbudget-view", func() (bool, string) {
		got := canI(t, user, ns, "get", budgetsResource)
		return got == "yes", got
	})
	assert.Equal(t, "no", canI(t, user, ns, "update", budgetsResource))
	assert.Equal(t, "yes", canI(t, user, ns, "get", budgetsResource))
}
