package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const root = "../.."

func TestTheCommittedManifestsAreTheChartsRenders(t *testing.T) {
	files, err := generate(root)
	require.NoError(t, err)
	for _, path := range sortedKeys(files) {
		got, err := os.ReadFile(filepath.Join(root, path))
		require.NoError(t, err)
		assert.Equal(t, string(files[path]), string(got), "%s is stale: make generate", path)
	}
}

// A new object of the chart must land in some kustomize file: a variant whose table leaves one out fails, naming it.
func TestAnObjectNoFileIsNamedForFailsTheGeneration(t *testing.T) {
	saved := variants
	t.Cleanup(func() { variants = saved })
	cases := map[string]struct {
		variant int
		drop    string
		want    string
	}{
		"an object of the default render": {0, "deploy/base/service/service.yaml",
			"no generated file is named for: Service llmbudget-system/llmbudget"},
		"an object a component adds": {3, "deploy/components/spend-writer/spend-writer.yaml",
			"ServiceAccount llmbudget-system/llmbudget-spend-writer (added)"},
		"an object a component changes": {1, "deploy/components/secure/gate-decorator-patch.yaml",
			"DecoratorController llmbudget-gate (changed)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			variants = append([]variant(nil), saved...)
			v := variants[tc.variant]
			v.files = without(v.files, tc.drop)
			v.patches = without(v.patches, tc.drop)
			variants[tc.variant] = v
			_, err := generate(root)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func without(outs []output, path string) []output {
	var kept []output
	for _, o := range outs {
		if o.path != path {
			kept = append(kept, o)
		}
	}
	return kept
}

func TestOnlyTheLinesOfHelmsLabelsAreDropped(t *testing.T) {
	o, err := parse(`# Why it is so.
apiVersion: v1
kind: ConfigMap
metadata:
  name: x
  labels:
    app.kubernetes.io/name: llmbudget
    helm.sh/chart: llmbudget-0.1.0
    app.kubernetes.io/managed-by: Helm
    app.kubernetes.io/instance: llmbudget
    app.kubernetes.io/version: "0.1.0"
data:
  # Kept.
  k: >-
    folded
    text
`)
	require.NoError(t, err)
	assert.Equal(t, `# Why it is so.
apiVersion: v1
kind: ConfigMap
metadata:
  name: x
  labels:
    app.kubernetes.io/name: llmbudget
data:
  # Kept.
  k: >-
    folded
    text
`, o.text)
}

func TestALabelOverSeveralLinesIsRefused(t *testing.T) {
	_, err := parse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels:\n    helm.sh/chart: >-\n      a\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "label helm.sh/chart is not on one line")
}

func TestADocumentOfCommentsAloneIsNoObject(t *testing.T) {
	o, err := parse("\n# only a comment\n")
	require.NoError(t, err)
	assert.Nil(t, o.node)
}
