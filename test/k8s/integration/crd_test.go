//go:build integration

package integration_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

func TestBudgetCRDInstallsAndExplainsItsFields(t *testing.T) {
	installBudgetCRD(t)

	// The OpenAPI document that kubectl explain reads is published shortly after the CRD
	// is Established.
	var explained string
	cluster.WaitFor(t, time.Minute, "kubectl explain llmcostbudget.spec", func() (bool, string) {
		out, err := kube.KubectlErr(t, "", "explain", "llmcostbudget.spec")
		explained = out
		return err == nil && strings.Contains(out, "limitUSD"), out
	})
	for _, want := range []string{
		"GROUP:      llmbudget.dev",
		"KIND:       LLMCostBudget",
		"VERSION:    v1alpha1",
		"What the budget allows and where its spend is read from",
		"Spending limit per period, in US dollars",
		"costSource\t<Object> -required-",
		"What happens in the namespace while the budget is exhausted",
	} {
		assert.Contains(t, explained, want)
	}

	recursive := kube.Kubectl(t, "explain", "llmcostbudget.spec", "--recursive")
	for _, field := range []string{"limitUSD", "period", "timeZone", "startDay", "warnThresholdPercent", "thresholds",
		"basis", "tokenLimits", "costSource", "configMapName", "keyPrefix", "enforcement", "failurePolicy", "suspend"} {
		assert.Contains(t, recursive, field)
	}

	// Every field, however deep, teaches the API: explain prints <empty> for a field
	// without a description.
	for _, path := range explainPaths(t, "llmcostbudget", recursive) {
		out := kube.Kubectl(t, "explain", path)
		assert.NotContains(t, out, "<empty>", "kubectl explain %s", path)
	}

	startDay := kube.Kubectl(t, "explain", "llmcostbudget.spec.period.startDay")
	assert.Contains(t, startDay, "1 = Monday")
	status := kube.Kubectl(t, "explain", "llmcostbudget.status.percentUsed")
	assert.Contains(t, status, "rounded down")
}

// explainPaths turns `kubectl explain X --recursive` output (fields indented by two
// spaces per level) into the dotted paths of every field under X.
func explainPaths(t *testing.T, resource, recursive string) []string {
	t.Helper()
	_, fieldsPart, ok := strings.Cut(recursive, "FIELDS:\n")
	require.True(t, ok, "explain output has a FIELDS section:\n%s", recursive)
	var stack, paths []string
	for _, line := range strings.Split(fieldsPart, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		name, _, isField := strings.Cut(trimmed, "\t<") // other lines list enum values
		depth := (len(line) - len(trimmed)) / 2         // top-level fields are indented by 2
		if !isField || depth < 1 {
			continue
		}
		stack = append(stack[:depth-1], name)
		paths = append(paths, resource+".spec."+strings.Join(stack, "."))
	}
	require.NotEmpty(t, paths)
	return paths
}

func TestBudgetCRDResolvesItsShortNamesAndCategory(t *testing.T) {
	installBudgetCRD(t)
	ns := kube.Namespace(t, "names")
	kube.ApplyYAML(t, ns, budgetYAML(t, "names", nil))

	for _, resource := range []string{
		"llmcostbudgets", "llmcostbudget", "llmb", "llmbudget", "llmcostbudgets.llmbudget.dev",
	} {
		out := kube.Kubectl(t, "get", resource, "-n", ns, "-o", "name")
		assert.Equal(t, "llmcostbudget.llmbudget.dev/names\n", out, "kubectl get %s", resource)
	}
	categories := kube.Kubectl(t, "get", "crd", "llmcostbudgets.llmbudget.dev", "-o", "jsonpath={.spec.names.categories}")
	assert.JSONEq(t, `["llmbudget"]`, categories)
}

func TestBudgetCRDKustomizationListsTheCRD(t *testing.T) {
	out := kube.Kubectl(t, "apply", "-k", filepath.Join(repoRoot, "deploy", "crd"), "--server-side", "--dry-run=server")
	assert.Contains(t, out,
		"customresourcedefinition.apiextensions.k8s.io/llmcostbudgets.llmbudget.dev serverside-applied")
}

func TestBudgetCRDFillsInDefaults(t *testing.T) {
	installBudgetCRD(t)
	ns := kube.Namespace(t, "defaults")
	kube.ApplyYAML(t, ns, budgetYAML(t, "minimal", nil))
	kube.ApplyYAML(t, ns, budgetYAML(t, "with-thresholds", func(spec map[string]any) {
		spec["thresholds"] = []any{map[string]any{"percent": 50}}
	}))

	var minimal map[string]any
	spec := kube.Kubectl(t, "get", "llmb", "minimal", "-n", ns, "-o", "jsonpath={.spec}")
	require.NoError(t, json.Unmarshal([]byte(spec), &minimal))
	assert.Equal(t, map[string]any{
		"limitUSD":             "500",
		"period":               map[string]any{"type": "Monthly", "timeZone": "UTC", "startDay": float64(1)},
		"warnThresholdPercent": float64(80),
		"costSource":           map[string]any{"configMapName": "llm-spend", "key": "spend-usd", "format": "Total"},
		"enforcement": map[string]any{
			"action": "None", "failurePolicy": "Open", "gate": "Policy", "scope": "Namespace", "mode": "Deny",
			"blockOn": "Projected",
		},
		"suspend": false,
	}, minimal, "no thresholds default in the CRD: the hook derives them from warnThresholdPercent")

	basis := kube.Kubectl(t, "get", "llmb", "with-thresholds", "-n", ns, "-o", "jsonpath={.spec.thresholds[0].basis}")
	assert.Equal(t, "Actual", basis)
}

func TestBudgetPrinterColumnsShowStatus(t *testing.T) {
	installBudgetCRD(t)
	ns := kube.Namespace(t, "columns")
	kube.ApplyYAML(t, ns, budgetYAML(t, "team-a", nil))
	end := time.Now().UTC().Add(72 * time.Hour).Truncate(time.Second).Format(time.RFC3339)
	status := fmt.Sprintf(`{"status":{"state":"Warning","limitUSD":"500.00","observedSpendUSD":"412.50","percentUsed":82,`+
		`"period":{"start":"2026-01-01T00:00:00Z","end":%q},"conditions":[{"type":"Enforced","status":"False",`+
		`"reason":"BindingMissing","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`, end)
	kube.Kubectl(t, "patch", "llmb", "team-a", "-n", ns, "--subresource=status", "--type=merge", "-p", status)

	out := kube.Kubectl(t, "get", "llmb", "team-a", "-n", ns)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Equal(t, []string{"NAME", "LIMIT", "SPENT", "USED", "STATE", "ENFORCED", "RESETS", "AGE"},
		strings.Fields(lines[0]))
	row := strings.Fields(lines[1])
	require.Len(t, row, 8, out)
	assert.Equal(t, []string{"team-a", "500", "412.50", "82", "Warning", "False", end}, row[:7],
		"the period end is in the future, so it must print as a timestamp, not as an age")

	wide := kube.Kubectl(t, "get", "crd", "llmcostbudgets.llmbudget.dev", "-o",
		`jsonpath={.spec.versions[0].additionalPrinterColumns[?(@.name=="Used")].description}`)
	assert.Contains(t, wide, "%")
}

// budgetYAML is a valid budget named name, changed by edit (when not nil), as JSON
// (which is YAML) ready for kubectl.
func budgetYAML(t *testing.T, name string, edit func(spec map[string]any)) string {
	t.Helper()
	spec := map[string]any{
		"limitUSD":   "500",
		"costSource": map[string]any{"configMapName": "llm-spend", "key": "spend-usd"},
	}
	if edit != nil {
		edit(spec)
	}
	obj := map[string]any{
		"apiVersion": "llmbudget.dev/v1alpha1",
		"kind":       "LLMCostBudget",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}
	data, err := json.Marshal(obj)
	require.NoError(t, err)
	return string(data)
}
