package promspend_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/promspend"
)

// FuzzParsePrices: any input is a price table or an error, never a panic, and a table
// that parses holds only valid model names and non-negative prices.
func FuzzParsePrices(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{models: {m: {input: 0.000000001, output: "1"}}, default: {input: "0", output: "0"}}`))
	f.Add([]byte("models:\n  m: {input: [1], output: {}}\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, err := promspend.ParsePrices(doc)
		if err != nil {
			if strings.Contains(err.Error(), "promspend.") {
				t.Fatalf("an error naming a Go type: %v", err)
			}
			return
		}
		for name, price := range p.Models {
			if !api.ValidModelName(name) || price.Input.Sign() < 0 || price.Output.Sign() < 0 {
				t.Fatalf("accepted %q: %+v", name, price)
			}
		}
	})
}

// The example price table, as the spend writer reads it from its ConfigMap, is one.
func TestTheExamplePriceTableParses(t *testing.T) {
	doc, err := os.ReadFile("../../examples/spend/prices.yaml")
	require.NoError(t, err)
	var cm struct {
		Data map[string]string `json:"data"`
	}
	require.NoError(t, yaml.Unmarshal(doc, &cm))
	require.Contains(t, cm.Data, api.DefaultPricesKey)
	p, err := promspend.ParsePrices([]byte(cm.Data[api.DefaultPricesKey]))
	require.NoError(t, err)
	assert.Contains(t, p.Models, "meta-llama/Llama-3.1-8B-Instruct", "the vLLM example's model has a price")
	assert.Contains(t, p.Models, "gpt-4o-mini", "the OpenTelemetry example's model has a price")

	seed, err := os.ReadFile("testdata/prices.yaml")
	require.NoError(t, err)
	want, err := promspend.ParsePrices(seed)
	require.NoError(t, err)
	assert.Equal(t, want, p, "the fuzz seed is the example's table")
}
