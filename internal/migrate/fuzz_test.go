package migrate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/manifest"
	"github.com/llmbudget/llmbudget/internal/migrate"
	"github.com/llmbudget/llmbudget/internal/money"
)

// FuzzMigrate checks that any input either converts into budgets the API
// accepts, deterministically, or is refused with manifest.Errors of one line
// each; and never panics.
func FuzzMigrate(f *testing.F) {
	for _, name := range []string{"llm-cost-budget-operator.yaml", "kelos-taskbudget.yaml"} {
		data, err := os.ReadFile(filepath.Join(examplesDir, name))
		require.NoError(f, err)
		f.Add(data, false)
	}
	for _, seed := range []string{
		operatorBudget(operatorSpec),
		operatorBudget(strings.Replace(operatorSpec, `"500"`, `12.3456789`, 1)),
		operatorBudget(operatorSpec + "  warnThresholdPercent: 0\n"),
		kelosBudget(kelosSelector + "  maxCostUSD: 12500m\n  maxInputTokens: 7\n"),
		kelosBudget(kelosSelector + "  maxCostUSD: 1e-7\n"),
		kelosBudget(kelosSelector + "  maxCostUSD: 1.5Ki\n"),
		kelosBudget("  taskSelector: {matchExpressions: [{key: a, operator: Exists}]}\n" +
			"  period: {type: Daily}\n  maxOutputTokens: 0\n"),
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n",
		"a: &a [*a]\nkind: *a\n",
		"---\n---\n",
		`{"apiVersion":"finops.kineticgain.com/v1alpha1","kind":"LLMCostBudget","metadata":{"name":"x"},` +
			`"spec":{"monthlyLimitUSD":"1","costSource":{"configMapName":"c","key":"k"}}}`,
		"kind: [unclosed\n",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, skip bool) {
		opts := migrate.Options{SkipUnknownKinds: skip}
		res, err := migrate.Migrate("fuzz", data, opts)
		if err != nil {
			var merr manifest.Errors
			require.True(t, errors.As(err, &merr), "%T is not a manifest.Errors: %v", err, err)
			for _, e := range merr {
				assert.Equal(t, "fuzz", e.File)
				assert.NotContains(t, e.Error(), "\n")
			}
			assert.Empty(t, res.Documents)
			return
		}
		for _, doc := range res.Documents {
			assertValidBudget(t, doc)
		}
		again, err := migrate.Migrate("fuzz", data, opts)
		require.NoError(t, err)
		assert.Equal(t, res, again, "the same input converted differently")
	})
}

// FuzzKelosCost checks that any spec.maxCostUSD either becomes a limit that
// is exactly the quantity Kubernetes reads and fits spec.limitUSD, or is
// refused with a message naming the field; and that no exponent or length
// makes the conversion slow (see the committed corpus).
func FuzzKelosCost(f *testing.F) {
	for _, seed := range []string{
		"12500m", "50", "12.50", "1.5e2", "25E-2", "1Ki", "100n", "1u", "0", "-5", "+7", ".5", "5.", "1E", "5 USD",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, cost string) {
		js, err := json.Marshal(cost)
		require.NoError(t, err)
		unprintable := strings.ContainsFunc(cost, func(r rune) bool { return !unicode.IsPrint(r) })
		if unprintable || !bytes.Equal(js[1:len(js)-1], []byte(cost)) {
			t.Skip("YAML cannot hold the string as written")
		}
		doc := kelosBudget(kelosSelector + "  maxCostUSD: " + string(js) + "\n")
		res, err := migrate.Migrate("fuzz", []byte(doc), migrate.Options{})
		if err != nil {
			assert.Contains(t, err.Error(), "spec.maxCostUSD: ")
			assert.NotContains(t, err.Error(), "\n")
			return
		}
		require.Len(t, res.Documents, 1)
		var out struct {
			Spec struct {
				LimitUSD string `json:"limitUSD"`
			} `json:"spec"`
		}
		require.NoError(t, yaml.Unmarshal(res.Documents[0], &out))
		_, err = money.ParseMaxDecimals(out.Spec.LimitUSD, api.LimitDecimals)
		require.NoError(t, err)
		want, got := resource.MustParse(cost), resource.MustParse(out.Spec.LimitUSD)
		assert.Zero(t, want.Cmp(got), "%q became %s", cost, out.Spec.LimitUSD)
	})
}

// assertValidBudget holds one output document to the llmbudget API.
func assertValidBudget(t *testing.T, doc []byte) {
	t.Helper()
	js, err := yaml.YAMLToJSON(doc)
	require.NoError(t, err, "output is not YAML:\n%s", doc)
	var obj struct {
		APIVersion string          `json:"apiVersion"`
		Kind       string          `json:"kind"`
		Metadata   json.RawMessage `json:"metadata"`
		Spec       json.RawMessage `json:"spec"`
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&obj), "output has fields beyond apiVersion, kind, metadata and spec:\n%s", doc)
	assert.Equal(t, api.APIVersion, obj.APIVersion)
	assert.Equal(t, api.Kind, obj.Kind)
	var spec api.Spec
	dec = json.NewDecoder(bytes.NewReader(obj.Spec))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&spec), "spec does not decode strictly:\n%s", doc)
	spec.Default()
	require.NoError(t, spec.Validate().ToAggregate(), "output fails validation:\n%s", doc)
}
