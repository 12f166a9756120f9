//go:build integration

package integration_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The Kueue example, without Kueue: its CRDs are not installed here and Kueue is not run, so what is tested is what
// can be without it. The ClusterQueue's namespaceSelector, as the API server selects namespaces, picks exactly the
// unblocked ones; the queued Job and the budget that leaves Jobs to the queue are admitted as they are.
func TestTheKueueClusterQueueSelectsExactlyTheUnblockedNamespaces(t *testing.T) {
	installBudgetCRD(t)
	dir := filepath.Join(repoRoot, "examples", "kueue")
	var cq struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			NamespaceSelector struct {
				MatchLabels      map[string]string `json:"matchLabels"`
				MatchExpressions []struct {
					Key      string `json:"key"`
					Operator string `json:"operator"`
				} `json:"matchExpressions"`
			} `json:"namespaceSelector"`
		} `json:"spec"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "clusterqueue.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &cq))
	require.Equal(t, "kueue.x-k8s.io/v1beta2 ClusterQueue", cq.APIVersion+" "+cq.Kind)
	require.Empty(t, cq.Spec.NamespaceSelector.MatchLabels)
	var terms []string
	for _, e := range cq.Spec.NamespaceSelector.MatchExpressions {
		require.Equal(t, "DoesNotExist", e.Operator)
		terms = append(terms, "!"+e.Key)
	}
	require.Equal(t, []string{"!llmbudget.dev/blocked"}, terms)

	for name, blocked := range map[string]bool{"kueue-blocked": true, "kueue-open": false} {
		kube.EnsureNamespace(t, name)
		args := []string{"label", "namespace", name, "--overwrite", "kueue-test=yes"}
		if blocked {
			args = append(args, "llmbudget.dev/blocked=true")
		}
		kube.Kubectl(t, args...)
		t.Cleanup(func() { _, _ = kube.KubectlErr(t, "", "delete", "namespace", name, "--wait=false") })
	}
	selected := strings.Fields(kube.Kubectl(t, "get", "namespace", "-l", strings.Join(terms, ",")+",kueue-test=yes",
		"-o", "jsonpath={.items[*].metadata.name}"))
	sort.Strings(selected)
	assert.Equal(t, []string{"kueue-open"}, selected, "the queue admits from the unblocked namespace only")

	kube.EnsureNamespace(t, "team-ml")
	t.Cleanup(func() {
		_, _ = kube.KubectlErr(t, "", "delete", "namespace", "team-ml", "--wait=true", "--timeout=90s")
	})
	for _, f := range []string{"job.yaml", "budget.yaml"} {
		manifest, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		out, err := kube.KubectlErr(t, string(manifest), "create", "-f", "-", "--dry-run=server")
		assert.NoError(t, err, "%s is admitted: %s", f, out)
	}
	job, err := os.ReadFile(filepath.Join(dir, "job.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(job), "suspend: true", "Kueue unsuspends what it admits")
	assert.Contains(t, string(job), "kueue.x-k8s.io/queue-name: llm-batch")
}
