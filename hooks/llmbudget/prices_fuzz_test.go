package main

import (
	"strings"
	"testing"

	"github.com/llmbudget/llmbudget/internal/promspend"
)

// FuzzPriceTable: any --prices file is a price table or an error naming no Go type, never a panic. Seeds are in
// testdata/fuzz/FuzzPriceTable.
func FuzzPriceTable(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p}\ndata:\n  prices.yaml: |\n    models: {}\n"))
	f.Add([]byte("models: {m: {input: \"1\", output: \"2\"}}\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		table, err := tableOf("prices.yaml", doc)
		if err == nil {
			_, err = promspend.ParsePrices(table)
		}
		if err != nil && strings.Contains(err.Error(), "promspend.") {
			t.Fatalf("an error naming a Go type: %v", err)
		}
	})
}
