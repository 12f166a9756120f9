package manifest_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/manifest"
)

const validBudget = `apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata:
  name: chatbot
  namespace: team-ml
spec:
  limitUSD: "500"
  costSource:
    configMapName: llm-spend
    key: total-usd
`

const spendConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: llm-spend
  namespace: team-ml
data:
  total-usd: "412.35"
`

// readText reads one manifest given on stdin.
func readText(t *testing.T, text string) (manifest.Set, error) {
	t.Helper()
	return manifest.Read([]string{"-"}, strings.NewReader(text))
}

// problems is every error message of err, as "line: message".
func problems(t *testing.T, err error) []string {
	t.Helper()
	var errs manifest.Errors
	require.True(t, errors.As(err, &errs), "an Errors, got %v", err)
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = strings.TrimPrefix(e.Error(), "stdin:")
	}
	return out
}

func TestReadAcceptsABudgetAndItsConfigMapInOneStream(t *testing.T) {
	set, err := readText(t, validBudget+"---\n"+spendConfigMap)
	require.NoError(t, err)
	require.Len(t, set.Budgets, 1)
	require.Len(t, set.ConfigMaps, 1)
	b := set.Budgets[0]
	assert.Equal(t, "team-ml", b.Namespace)
	assert.Equal(t, "chatbot", b.Name)
	assert.Equal(t, 1, b.Line)
	assert.Equal(t, 12, set.ConfigMaps[0].Line, "a document's line counts from the file's start")
	assert.Contains(t, string(b.JSON), `"generation":1`, "the API server's generation is set")
}

func TestAnObjectsLineSkipsTheSeparatorsBeforeIt(t *testing.T) {
	cases := map[string]struct {
		text             string
		budget, cfgMapAt int
	}{
		"a leading separator":            {"---\n" + validBudget + "---\n" + spendConfigMap, 2, 13},
		"a comment, then two separators": {"# budgets\n---\n--- # next\n" + validBudget + "---\n" + spendConfigMap, 4, 15},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			set, err := readText(t, tc.text)
			require.NoError(t, err)
			require.Len(t, set.Budgets, 1)
			require.Len(t, set.ConfigMaps, 1)
			assert.Equal(t, tc.budget, set.Budgets[0].Line)
			assert.Equal(t, tc.cfgMapAt, set.ConfigMaps[0].Line)
		})
	}
}

func TestReadRefusesProblemsNamingTheFieldAndItsLine(t *testing.T) {
	tests := map[string]struct {
		text string
		want []string
	}{
		"a wrongly-cased field": {
			strings.Replace(validBudget, "limitUSD", "limitUsd", 1),
			[]string{`7: LLMCostBudget team-ml/chatbot: unknown field "spec.limitUsd"`},
		},
		"a misspelt field and an invalid name together": {
			strings.Replace(
				strings.Replace(validBudget, "name: chatbot", "name: Chat_Bot", 1),
				"  costSource:", "  thresold: 5\n  costSource:", 1),
			[]string{
				`8: LLMCostBudget team-ml/Chat_Bot: unknown field "spec.thresold"`,
				`4: LLMCostBudget team-ml/Chat_Bot: metadata.name: Invalid value: "Chat_Bot": a lowercase RFC 1123 subdomain`,
			},
		},
		"a value of the wrong type": {
			strings.Replace(validBudget, `limitUSD: "500"`, "limitUSD: 500", 1),
			[]string{`7: LLMCostBudget team-ml/chatbot: spec.limitUSD: must be of type string, got number`},
		},
		"a spec rule, at the field's line": {
			strings.Replace(validBudget, `"500"`, `"-5"`, 1),
			[]string{`7: LLMCostBudget team-ml/chatbot: spec.limitUSD: Invalid value: "-5": must be a decimal greater than 0`},
		},
		"a missing field, at its parent's line": {
			strings.Replace(validBudget, "    key: total-usd\n", "", 1),
			[]string{`8: LLMCostBudget team-ml/chatbot: spec.costSource.key: Required value`},
		},
		"a name too long for the budget label": {
			strings.Replace(validBudget, "name: chatbot", "name: "+strings.Repeat("b", 64), 1),
			[]string{`4: LLMCostBudget team-ml/` + strings.Repeat("b", 64) + `: metadata.name must be at most 63 characters`},
		},
		"a budget without spec": {
			"apiVersion: llmbudget.dev/v1alpha1\nkind: LLMCostBudget\nmetadata: {name: chatbot}\n",
			[]string{`1: LLMCostBudget chatbot: spec: Required value`},
		},
		"a version llmbudget does not serve": {
			strings.Replace(validBudget, "v1alpha1", "v1", 1),
			[]string{`1: LLMCostBudget team-ml/chatbot: apiVersion "llmbudget.dev/v1" is not served: ` +
				`LLMCostBudget is llmbudget.dev/v1alpha1`},
		},
		"a kind in the wrong case": {
			strings.Replace(validBudget, "kind: LLMCostBudget", "kind: LlmCostBudget", 1),
			[]string{`2: LlmCostBudget team-ml/chatbot: kind "LlmCostBudget" is not served by llmbudget.dev/v1alpha1`},
		},
		"another tool's LLMCostBudget": {
			strings.Replace(validBudget, "llmbudget.dev/v1alpha1", "finops.kineticgain.com/v1alpha1", 1),
			[]string{`2: LLMCostBudget team-ml/chatbot: apiVersion "finops.kineticgain.com/v1alpha1" is not llmbudget's`},
		},
		"a ConfigMap of the wrong version": {
			strings.Replace(spendConfigMap, "apiVersion: v1", "apiVersion: v2", 1),
			[]string{`1: ConfigMap team-ml/llm-spend: ConfigMap is apiVersion v1, not "v2"`},
		},
		"a document that is not an object": {
			"just: text\n",
			[]string{`1: not a Kubernetes object: apiVersion and kind are required`},
		},
		"a key given twice": {
			strings.Replace(validBudget, "  limitUSD: \"500\"\n", "  limitUSD: \"500\"\n  limitUSD: \"600\"\n", 1),
			[]string{`8: not valid YAML: unmarshal errors: key "limitUSD" already set in map`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			set, err := readText(t, tc.text)
			require.Error(t, err)
			assert.Empty(t, set.Budgets)
			got := problems(t, err)
			require.Len(t, got, len(tc.want), "%q", got)
			for i, want := range tc.want {
				assert.True(t, strings.HasPrefix(got[i], want), "problem %d\nwant prefix %s\ngot         %s", i, want, got[i])
			}
		})
	}
}

func TestReadUnpacksWhatKubectlGetPrints(t *testing.T) {
	list := `apiVersion: v1
kind: List
metadata:
  resourceVersion: ""
items:
- apiVersion: llmbudget.dev/v1alpha1
  kind: LLMCostBudget
  metadata:
    name: chatbot
    namespace: team-ml
    generation: 3
    resourceVersion: "8812"
    uid: 0a4b9f6e-1c2d-4e5f-8a9b-0c1d2e3f4a5b
    creationTimestamp: "2026-11-01T00:00:00Z"
    managedFields:
    - {apiVersion: llmbudget.dev/v1alpha1, fieldsType: FieldsV1, ` +
		`fieldsV1: {"f:spec": {}}, manager: kubectl, operation: Apply}
  spec:
    limitUSD: "500"
    costSource: {configMapName: llm-spend, key: total-usd}
  status:
    state: Warning
    percentUsed: 82
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: llm-spend, namespace: team-ml}
  data: {total-usd: "412.35"}
`
	set, err := readText(t, list)
	require.NoError(t, err)
	require.Len(t, set.Budgets, 1)
	require.Len(t, set.ConfigMaps, 1)
	assert.Equal(t, 6, set.Budgets[0].Line)
	assert.Contains(t, string(set.Budgets[0].JSON), `"generation":3`, "the stored generation is kept")

	_, err = readText(t, strings.Replace(list, "    costSource:", "    tokenLimit: {input: 1}\n    costSource:", 1))
	assert.Equal(t, []string{`19: LLMCostBudget team-ml/chatbot: unknown field "items[0].spec.tokenLimit"`},
		problems(t, err))
}

func TestReadTakesADirectoryAsItsManifestFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "budget.yaml"), []byte(validBudget), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "spend.yml"), []byte(spendConfigMap), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not yaml: ["), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ns.json"),
		[]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-ml"}}`), 0o600))
	set, err := manifest.Read([]string{dir}, nil)
	require.NoError(t, err)
	assert.Len(t, set.Budgets, 1)
	assert.Len(t, set.ConfigMaps, 1)
	require.Len(t, set.Skipped, 1, "other kinds are skipped, not refused")
	assert.Equal(t, "Namespace", set.Skipped[0].Kind)
}

func TestReadReadsStdinOnce(t *testing.T) {
	_, err := manifest.Read([]string{"-", "-"}, strings.NewReader(validBudget))
	assert.EqualError(t, err, "-f - given twice: stdin can be read only once")
}

func TestReadNamesTheLineWhereAFieldReachedThroughAnAliasIsWritten(t *testing.T) {
	text := "apiVersion: llmbudget.dev/v1alpha1\nkind: LLMCostBudget\nmetadata: {name: chatbot}\n" +
		"x-spec: &spec\n  limitUSD: \"5\"\n  bogus: 1\n  costSource: {configMapName: c, key: k}\nspec: *spec\n"
	_, err := readText(t, text)
	assert.Equal(t, []string{
		`6: LLMCostBudget chatbot: unknown field "spec.bogus"`,
		`4: LLMCostBudget chatbot: unknown field "x-spec"`,
	}, problems(t, err))
}
