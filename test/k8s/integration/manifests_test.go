//go:build integration

package integration_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

func TestEveryExampleBudgetIsAccepted(t *testing.T) {
	installBudgetCRD(t)
	files, err := cluster.FindYAML(filepath.Join(repoRoot, "examples"))
	require.NoError(t, err)

	budgets := 0
	for _, file := range files {
		// Other apiVersions are foreign objects, such as the llm-cost-budget-operator
		// budgets that a migration example starts from.
		docs := readDocuments(t, file, "llmbudget.dev/v1alpha1 LLMCostBudget", "v1 ConfigMap")
		if len(docs) == 0 {
			continue
		}
		for _, d := range docs {
			if d.Kind == "LLMCostBudget" {
				budgets++
			}
		}
		t.Run(relative(file), func(t *testing.T) {
			applyDryRun(t, docs)
		})
	}
	if budgets == 0 {
		t.Fatalf("no LLMCostBudget found in any YAML file under %s", filepath.Join(repoRoot, "examples"))
	}
}

func TestEveryMetacontrollerManifestIsAccepted(t *testing.T) {
	crds, err := cluster.MetacontrollerCRDs()
	require.NoError(t, err)
	kube.InstallCRDs(t, crds)
	installBudgetCRD(t)

	dir := filepath.Join(repoRoot, "metacontroller")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	controllers := 0
	for _, file := range files {
		docs := readDocuments(t, file)
		docs = slices.DeleteFunc(docs, func(d cluster.Document) bool { return d.Kind == "Kustomization" })
		if len(docs) == 0 {
			continue
		}
		for _, d := range docs {
			if d.Kind == "CompositeController" || d.Kind == "DecoratorController" {
				controllers++
			}
		}
		t.Run(relative(file), func(t *testing.T) {
			applyDryRun(t, docs)
		})
	}
	if controllers == 0 {
		t.Fatalf("no CompositeController or DecoratorController found in %s/*.yaml", dir)
	}

	if _, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); err == nil {
		t.Run("metacontroller/kustomization.yaml builds and is accepted", func(t *testing.T) {
			out := kube.Kubectl(t, "apply", "-k", dir, "--server-side", "--field-manager=llmbudget-test", "--dry-run=server")
			assert.Contains(t, out, "serverside-applied (server dry run)")
		})
	}
}

// readDocuments reads file's YAML documents, keeping only the given types, each written
// "<apiVersion> <kind>" (all documents when none are given).
func readDocuments(t *testing.T, file string, types ...string) []cluster.Document {
	t.Helper()
	docs, err := cluster.ReadDocuments(file)
	require.NoError(t, err)
	if len(types) == 0 {
		return docs
	}
	return slices.DeleteFunc(docs, func(d cluster.Document) bool {
		return !slices.Contains(types, d.APIVersion+" "+d.Kind)
	})
}

// applyDryRun server-side applies each document with --dry-run=server: in the namespace
// it names (created if missing) or, when it names none, in a fresh test namespace.
func applyDryRun(t *testing.T, docs []cluster.Document) {
	t.Helper()
	var fresh string
	for _, d := range docs {
		ns := d.Namespace
		if ns != "" {
			kube.EnsureNamespace(t, ns)
		} else if namespaced(d.Kind) {
			if fresh == "" {
				fresh = kube.Namespace(t, "manifests")
			}
			ns = fresh
		}
		out, err := kube.ApplyYAMLErr(t, ns, d.YAML, "--dry-run=server")
		if assert.NoError(t, err, "%s document %d (%s %s)", relative(d.File), d.Index, d.Kind, d.Name) {
			assert.Contains(t, out, "serverside-applied (server dry run)")
		}
	}
}

// namespaced reports whether kind lives in a namespace, for the kinds our manifests use.
func namespaced(kind string) bool {
	switch kind {
	case "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
		"CompositeController", "DecoratorController", "ValidatingAdmissionPolicy",
		"ValidatingAdmissionPolicyBinding", "PriorityClass":
		return false
	}
	return true
}

// relative is path relative to the repository root, for test names and messages.
func relative(path string) string {
	rel, err := filepath.Rel(repoRoot, path)
	if err != nil {
		return path
	}
	return strings.ReplaceAll(rel, string(filepath.Separator), "/")
}
