//go:build integration

package integration_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cut-off example: the API server admits its NetworkPolicy, and the namespaceSelector of the rule that admits
// callers selects exactly the namespaces without llmbudget.dev/blocked. No CNI runs here, so nothing is cut off:
// what is tested is which namespaces the policy admits, as the API server's own label selection reads it.
func TestTheCutOffPolicySelectsExactlyTheUnblockedNamespaces(t *testing.T) {
	dir := filepath.Join(repoRoot, "examples", "cut-off")
	ns, err := os.ReadFile(filepath.Join(dir, "namespace.yaml"))
	require.NoError(t, err)
	policy, err := os.ReadFile(filepath.Join(dir, "networkpolicy.yaml"))
	require.NoError(t, err)
	kube.ApplyYAML(t, "", string(ns))
	kube.ApplyYAML(t, "", string(policy))
	t.Cleanup(func() { _, _ = kube.KubectlErr(t, "", "delete", "namespace", "llm-gateway", "--wait=false") })

	var np struct {
		Spec struct {
			Ingress []struct {
				From []struct {
					NamespaceSelector struct {
						MatchLabels      map[string]string `json:"matchLabels"`
						MatchExpressions []struct {
							Key      string   `json:"key"`
							Operator string   `json:"operator"`
							Values   []string `json:"values"`
						} `json:"matchExpressions"`
					} `json:"namespaceSelector"`
				} `json:"from"`
			} `json:"ingress"`
		} `json:"spec"`
	}
	out := kube.Kubectl(t, "get", "networkpolicy", "llm-callers-within-budget", "-n", "llm-gateway", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &np))
	require.Len(t, np.Spec.Ingress, 2, "the callers' rule and the monitoring rule")
	callers := np.Spec.Ingress[0].From[0].NamespaceSelector
	require.Empty(t, callers.MatchLabels)
	var terms []string
	for _, e := range callers.MatchExpressions {
		require.Equal(t, "DoesNotExist", e.Operator, "the rule admits by the absence of a label")
		terms = append(terms, "!"+e.Key)
	}
	require.Equal(t, []string{"!llmbudget.dev/blocked"}, terms)

	// Namespaces as the decorator leaves them: two blocked, two not (one with other labels of its own).
	scene := map[string]map[string]string{
		"cutoff-blocked-a": {"llmbudget.dev/blocked": "true"},
		"cutoff-blocked-b": {"llmbudget.dev/blocked": "true", "team": "b"},
		"cutoff-open-a":    {},
		"cutoff-open-b":    {"team": "b"},
	}
	for name, labels := range scene {
		args := []string{"label", "namespace", name, "--overwrite", "cutoff-test=yes"}
		kube.EnsureNamespace(t, name)
		for k, v := range labels {
			args = append(args, k+"="+v)
		}
		kube.Kubectl(t, args...)
		t.Cleanup(func() { _, _ = kube.KubectlErr(t, "", "delete", "namespace", name, "--wait=false") })
	}
	selected := strings.Fields(kube.Kubectl(t, "get", "namespace", "-l", strings.Join(terms, ",")+",cutoff-test=yes",
		"-o", "jsonpath={.items[*].metadata.name}"))
	sort.Strings(selected)
	assert.Equal(t, []string{"cutoff-open-a", "cutoff-open-b"}, selected, "exactly the unblocked namespaces")
	assert.Contains(t, strings.Fields(kube.Kubectl(t, "get", "namespace", "-l", strings.Join(terms, ","),
		"-o", "jsonpath={.items[*].metadata.name}")), "llm-gateway", "the gateway's own namespace is admitted")

	monitoring := np.Spec.Ingress[1].From[0].NamespaceSelector
	assert.Equal(t, map[string]string{"kubernetes.io/metadata.name": "monitoring"}, monitoring.MatchLabels,
		"monitoring is admitted whatever the labels say")
}
