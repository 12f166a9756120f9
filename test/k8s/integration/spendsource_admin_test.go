//go:build integration

package integration_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runbookSpendSourceBlocks returns the two shell blocks of docs/runbooks.md's "Making a ConfigMap a spend source":
// re-creating an existing ConfigMap labelled, and creating a new one.
func runbookSpendSourceBlocks(t *testing.T) (existing, created string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "runbooks.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(raw), "\n## Making a ConfigMap a spend source\n")
	require.True(t, ok, "docs/runbooks.md has the section")
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1)
	require.Len(t, blocks, 2, "the section's shell blocks: an existing ConfigMap, a new one")
	return blocks[0][1], blocks[1][1]
}

// clusterAdminKubeconfig writes a kubeconfig for a ServiceAccount of a namespace that is no spend writer's, bound to
// cluster-admin: a cluster administrator outside system:masters, as kind's and most managed clusters' are.
func clusterAdminKubeconfig(t *testing.T) string {
	t.Helper()
	kube.EnsureNamespace(t, "platform-ops")
	manifest := "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: ops, namespace: platform-ops}\n---\n" +
		"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: platform-ops-admin}\n" +
		"roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\n" +
		"subjects: [{kind: ServiceAccount, name: ops, namespace: platform-ops}]\n"
	kube.ApplyYAML(t, "", manifest)
	t.Cleanup(func() { _, _ = kube.KubectlErr(t, manifest, "delete", "--ignore-not-found", "-f", "-") })
	token := strings.TrimSpace(kube.Kubectl(t, "-n", "platform-ops", "create", "token", "ops"))
	require.NotEmpty(t, token)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q, "+
		"certificate-authority: %q}\nusers:\n- name: ops\n  user: {token: %q}\ncontexts:\n- name: c\n  context: "+
		"{cluster: c, user: ops}\ncurrent-context: c\n", kube.Server, kube.CACert, token)
	require.NoError(t, os.WriteFile(path, []byte(config), 0o600))
	return path
}

// TestAClusterAdminOutsideSystemMastersMakesASpendSourceAsTheRunbookSays runs the runbook's commands, as written,
// as a cluster administrator outside system:masters, against the spend-source policy and the spend writer's RBAC:
// `kubectl label` is refused to them, and the runbook's way is not.
func TestAClusterAdminOutsideSystemMastersMakesASpendSourceAsTheRunbookSays(t *testing.T) {
	installSpendSourcePolicies(t)
	installSpendWriterRBAC(t)
	kubeconfig := clusterAdminKubeconfig(t)
	ns := kube.Namespace(t, "pipeline")
	kube.ApplyYAML(t, ns, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: llm-spend\n"+
		"  annotations: {llmbudget.dev/spend-as-of: \"2026-11-29T07:00:00Z\"}\ndata: {total-usd: \"231.80\"}\n")
	existing, created := runbookSpendSourceBlocks(t)

	run := func(script string) (string, error) {
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig,
			"PATH="+filepath.Dir(kube.KubectlPath)+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(fmt.Sprintf("kubectl -n %s label configmap llm-spend llmbudget.dev/spend-source=llm-spend", ns))
	require.Error(t, err, "kubectl label is refused outside system:masters: %s", out)
	assert.Contains(t, out, "llmbudget-spend-sources")

	out, err = run(strings.Replace(existing, "ns=team-ml ", "ns="+ns+" ", 1))
	require.NoError(t, err, "%s", out)
	got := kube.Kubectl(t, "-n", ns, "get", "configmap", "llm-spend", "-o",
		`jsonpath={.metadata.labels.llmbudget\.dev/spend-source} {.data.total-usd} `+
			`{.metadata.annotations.llmbudget\.dev/spend-as-of}`)
	assert.Equal(t, "llm-spend 231.80 2026-11-29T07:00:00Z", got, "labelled, its data and stamp kept")

	out, err = run(fmt.Sprintf("ns=%s name=new-spend\n%s", ns, created))
	require.NoError(t, err, "%s", out)
	got = kube.Kubectl(t, "-n", ns, "get", "configmap", "new-spend", "-o",
		`jsonpath={.metadata.labels.llmbudget\.dev/spend-source}`)
	assert.Equal(t, "new-spend", got)
}
