package promspend_test

import (
	"os"
	"path/filepath"
	"testing"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/promspend"
)

// FuzzParsePrices: any input is a price table or an error, never a panic, and a table
// that parses holds only valid model names and non-negative prices.
func FuzzParsePrices(f *testing.F) {
	seeds, _ := filepath.Glob("../../examples/spend/*/prices.yaml")
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
			return
		}
		for name, price := range p.Models {
			if !api.ValidModelName(name) || price.Input.Sign() < 0 || price.Output.Sign() < 0 {
				t.Fatalf("accepted %q: %+v", name, price)
			}
		}
	})
}
