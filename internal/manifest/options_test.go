package manifest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/manifest"
)

func TestTwoObjectsOfOneKindAndNameAreRefusedNamingBothPlaces(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	require.NoError(t, os.WriteFile(a, []byte(validBudget+"---\n"+spendConfigMap), 0o600))
	require.NoError(t, os.WriteFile(b, []byte("# the same budget again\n"+validBudget), 0o600))
	_, err := manifest.Read([]string{a, b}, nil)
	require.Error(t, err)
	assert.Equal(t, b+":2: LLMCostBudget team-ml/chatbot: also at "+a+":1: kubectl apply would apply one over "+
		"the other; give each once", err.Error())

	_, err = readText(t, spendConfigMap+"---\n"+spendConfigMap)
	assert.EqualError(t, err, "stdin:9: ConfigMap team-ml/llm-spend: also at stdin:1: kubectl apply would apply "+
		"one over the other; give each once")

	set, err := readText(t, validBudget+"---\n"+strings.Replace(validBudget, "team-ml", "team-b", 1))
	require.NoError(t, err, "one name in two namespaces is two objects")
	assert.Len(t, set.Budgets, 2)
}

func TestExcludedFilesAndDirectoriesAreNotRead(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "old"), 0o700))
	for name, text := range map[string]string{
		"budget.yaml": validBudget, "spend.yaml": spendConfigMap,
		"budget.converted.yaml": "not: [yaml", "old/budget.yaml": validBudget,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600))
	}
	_, err := manifest.Read([]string{dir}, nil)
	require.Error(t, err, "without exclusions every file is read")

	for _, exclude := range [][]string{
		{"*.converted.yaml", "old"},
		{"*.converted.yaml", filepath.Join(dir, "old")},
	} {
		set, err := manifest.ReadWith([]string{dir}, nil, manifest.Options{Exclude: exclude})
		require.NoError(t, err, "%v", exclude)
		assert.Len(t, set.Budgets, 1)
		assert.Empty(t, set.SkippedFiles, "excluded files are not noted")
	}
	set, err := manifest.ReadWith([]string{filepath.Join(dir, "budget.yaml"), filepath.Join(dir, "budget.converted.yaml")},
		nil, manifest.Options{Exclude: []string{"*.converted.yaml"}})
	require.NoError(t, err, "a named file is excluded too")
	assert.Len(t, set.Budgets, 1)
	assert.ErrorContains(t, manifest.CheckGlobs([]string{"*.yaml", "[a-"}), `"[a-": syntax error in pattern`)
}

func TestAZoneTheAPIServerAdmitsIsAWarningUnlessStrict(t *testing.T) {
	withZone := func(zone string) string {
		return strings.Replace(validBudget, "spec:\n", "spec:\n  period:\n    timeZone: "+zone+"\n", 1)
	}
	_, err := readText(t, withZone("Mars/Olympus_Mons"))
	assert.ErrorContains(t, err, `spec.period.timeZone: Invalid value: "Mars/Olympus_Mons"`, "strict by default")

	set, err := manifest.ReadWith([]string{"-"}, strings.NewReader(withZone("Mars/Olympus_Mons")),
		manifest.Options{LenientZones: true})
	require.NoError(t, err)
	assert.Len(t, set.Budgets, 1, "admitted, as the API server admits it")
	require.Len(t, set.Warnings, 1)
	assert.Equal(t, `stdin:8: LLMCostBudget team-ml/chatbot: spec.period.timeZone: Invalid value: "Mars/Olympus_Mons": `+
		`must be an IANA time zone, for example Europe/Berlin: not in the time zone database; the API server admits `+
		`it, and the hook reports the budget Unknown (InvalidSpec)`, set.Warnings[0].Error())

	_, err = manifest.ReadWith([]string{"-"}, strings.NewReader(withZone("'Mars Base'")),
		manifest.Options{LenientZones: true})
	assert.ErrorContains(t, err, "spec.period.timeZone", "the CRD's pattern refuses a space: so does eval")
}

// The zone pattern is the CRD's: a change to one must reach the other.
func TestTheZonePatternIsTheCRDs(t *testing.T) {
	for _, crd := range []string{"llmcostbudgets.llmbudget.dev.yaml", "clusterllmcostbudgets.llmbudget.dev.yaml"} {
		text, err := os.ReadFile(filepath.Join("../../deploy/crd", crd))
		require.NoError(t, err)
		assert.True(t, strings.Contains(string(text), "'"+manifest.ZonePattern+"'"), "%s has the pattern", crd)
	}
	assert.NotNil(t, regexp.MustCompile(manifest.ZonePattern))
}
