//go:build integration

package integration_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
	"github.com/llmbudget/llmbudget/test/k8s/deploytest"
)

// TestTheQuickStartsDryRunIsAdmittedByTheAPIServer runs hack/quickstart-kind.sh --dry-run against the real API
// server. No container runtime runs here, so the cluster holds for real what the script's earlier steps would
// create and a server-side dry run does not keep: Metacontroller's CRDs (step 2) and deploy/overlays/spend-writer
// (step 4, without its CRDs and Namespace, which other tests share). Every manifest the script applies is then
// judged by the API server's validation, RBAC and the spend-source admission policy, the example spend as the
// spend writer. A cluster administrator outside system:masters, as kind's is, would be refused that spend.
func TestTheQuickStartsDryRunIsAdmittedByTheAPIServer(t *testing.T) {
	crds, err := cluster.MetacontrollerCRDs()
	require.NoError(t, err)
	kube.InstallCRDs(t, crds)
	installBudgetCRD(t)
	installClusterBudgetCRD(t)
	kube.EnsureNamespace(t, "llmbudget-system")
	kube.EnsureNamespace(t, "team-support")
	installSpendWriterOverlay(t)

	script := exec.Command("bash", filepath.Join(repoRoot, "hack", "quickstart-kind.sh"), "--dry-run")
	script.Dir = repoRoot
	script.Env = append(kube.Env(), "PATH="+filepath.Dir(kube.KubectlPath)+":"+os.Getenv("PATH"))
	out, err := script.CombinedOutput()
	require.NoError(t, err, "%s", out)
	printed := string(out)
	for _, command := range []string{
		"+ kind create cluster --name llmbudget",
		"+ kubectl apply -k https://github.com/metacontroller/metacontroller/manifests/production?ref=v4.17.2",
		"+ make image",
		"+ kind load image-archive bin/llmbudget-image.tar --name llmbudget",
		"+ kubectl apply --server-side -k deploy/overlays/spend-writer/",
		"+ kubectl apply --server-side --as=system:serviceaccount:llmbudget-system:llmbudget-spend-writer -f -",
		"+ kubectl -n team-support create job refused",
		"+ kubectl -n team-support create job admitted",
	} {
		assert.Contains(t, printed, command)
	}
	for _, admitted := range []string{
		"llmcostbudget.llmbudget.dev/chatbot serverside-applied (server dry run)",
		"configmap/chatbot-spend serverside-applied (server dry run)",
		"validatingadmissionpolicy.admissionregistration.k8s.io/llmbudget-spend-sources " +
			"serverside-applied (server dry run)",
	} {
		assert.Contains(t, printed, admitted)
	}

	// Why the script writes spend as the writer: kind's admin is a cluster-admin through kubeadm:cluster-admins.
	binding := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n" +
		"metadata: {name: quickstart-kubeadm-cluster-admins}\n" +
		"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n" +
		"subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: 'kubeadm:cluster-admins'}]\n"
	kube.ApplyYAML(t, "", binding)
	t.Cleanup(func() { _, _ = kube.KubectlErr(t, binding, "delete", "--ignore-not-found", "-f", "-") })
	spend := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: chatbot-spend\n  namespace: team-support\n" +
		"  labels: {llmbudget.dev/spend-source: chatbot}\ndata: {total-usd: \"231.80\"}\n"
	refused, err := kube.KubectlErr(t, spend, "apply", "--server-side", "--dry-run=server",
		"--as=kubernetes-admin", "--as-group=kubeadm:cluster-admins", "-f", "-")
	require.Error(t, err, refused)
	assert.Contains(t, err.Error(), "llmbudget-spend-sources")
}

// installSpendWriterOverlay applies deploy/overlays/spend-writer but its CRDs and Namespace, as step 4 of the
// quick start does, and deletes what it applied when the test ends.
func installSpendWriterOverlay(t *testing.T) {
	t.Helper()
	objs, err := deploytest.Kustomize(repoRoot, "deploy/overlays/spend-writer")
	require.NoError(t, err)
	var docs []string
	for _, o := range objs {
		if o["kind"] == "CustomResourceDefinition" || o["kind"] == "Namespace" {
			continue
		}
		docs = append(docs, toYAML(t, o))
	}
	manifest := strings.Join(docs, "\n---\n")
	// As kubectl's own field manager, the script's: its dry run then owns every field it sets, as on a cluster
	// that step 4 installed.
	apply := func() {
		out, err := kube.KubectlErr(t, manifest, "apply", "--server-side", "--field-manager=kubectl", "-f", "-")
		require.NoError(t, err, out)
	}
	apply()
	// An upgrade applies it again, once the controller manager has aggregated Metacontroller's ClusterRole: the
	// second apply must not conflict with what the aggregation controller owns.
	cluster.WaitFor(t, time.Minute, "the aggregated ClusterRole to be filled in", func() (bool, string) {
		out, err := kube.KubectlErr(t, "", "get", "clusterrole", "llmbudget-metacontroller", "-o", "jsonpath={.rules}")
		return err == nil && strings.Contains(out, "llmcostbudgets"), out
	})
	apply()
	t.Cleanup(func() {
		_, _, _ = kube.Run(context.Background(), manifest, "delete", "--ignore-not-found", "--wait=false", "-f", "-")
	})
}
