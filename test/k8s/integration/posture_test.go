//go:build integration

package integration_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The namespace decorator's golden answers, applied to a real Namespace as Metacontroller applies a decorator's
// labels and annotations (a merge patch, where null removes a key): the blocking answer labels the namespace and
// the next answer removes exactly what it set, leaving the namespace's other labels and annotations alone.
func TestTheNamespacePostureLabelsARealNamespaceAndRemovesOnlyItsOwnKeys(t *testing.T) {
	ns := kube.Namespace(t, "posture")
	kube.Kubectl(t, "label", "namespace", ns, "team=ml")
	kube.Kubectl(t, "annotate", "namespace", ns, "owner=ml-platform")

	blocks := readResponse(t, "namespace/sync/capture-budget-blocks.response.json")
	patchNamespace(t, ns, blocks)
	md := namespaceMetadata(t, ns)
	assertDecorations(t, "while its budget blocks", blocks.Labels, md.Labels)
	assertDecorations(t, "while its budget blocks", blocks.Annotations, md.Annotations)
	assert.Equal(t, "ml", md.Labels["team"])
	assert.Equal(t, []string{ns}, namespacesLabelled(t, "llmbudget.dev/blocked=true,team=ml"),
		"selectable by the label, as NetworkPolicies and ClusterQueues select it")

	gone := readResponse(t, "namespace/sync/capture-last-block-gone.response.json")
	patchNamespace(t, ns, gone)
	md = namespaceMetadata(t, ns)
	assertDecorations(t, "once no budget blocks", gone.Labels, md.Labels)
	assertDecorations(t, "once no budget blocks", gone.Annotations, md.Annotations)
	assert.Equal(t, "ml", md.Labels["team"], "another label stays")
	assert.Equal(t, "ml-platform", md.Annotations["owner"], "another annotation stays")
	assert.Empty(t, namespacesLabelled(t, "llmbudget.dev/blocked,team=ml"))
}

func patchNamespace(t *testing.T, ns string, r hookResponse) {
	t.Helper()
	require.Len(t, r.Labels, 2, "the decorator answers its own labels only")
	require.Len(t, r.Annotations, 1, "and its own annotation only")
	patch := map[string]any{"metadata": map[string]any{"labels": r.Labels, "annotations": r.Annotations}}
	kube.Kubectl(t, "patch", "namespace", ns, "--type=merge", "-p", toJSON(t, patch))
}

type objectMetadata struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func namespaceMetadata(t *testing.T, ns string) objectMetadata {
	t.Helper()
	var md objectMetadata
	require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "get", "namespace", ns, "-o", "jsonpath={.metadata}")), &md))
	return md
}

func namespacesLabelled(t *testing.T, selector string) []string {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "get", "namespace", "-l", selector, "-o", "json")), &list))
	var names []string
	for _, i := range list.Items {
		names = append(names, i.Metadata.Name)
	}
	return names
}
