package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/manifest"
	"github.com/llmbudget/llmbudget/internal/promspend"
)

// maxPricesBytes bounds --prices: a table lives in a ConfigMap, whose data the API server bounds to 1 MiB.
const maxPricesBytes = manifest.MaxConfigMapBytes

// readPrices reads the price table of --prices: a bare table, or a ConfigMap holding one (as the spend writer reads
// it: under key prices.yaml, or its only key), as examples/spend/prices.yaml is.
func readPrices(path string) (*promspend.Prices, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--prices: %w", err)
	}
	defer f.Close()
	doc, err := io.ReadAll(io.LimitReader(f, maxPricesBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--prices: %w", err)
	}
	if len(doc) > maxPricesBytes {
		return nil, fmt.Errorf("--prices %s: larger than %d bytes (1 MiB), the most a price table holds: "+
			"the ConfigMap it lives in holds no more", path, maxPricesBytes)
	}
	table, err := tableOf(path, doc)
	if me, ok := errors.AsType[manifest.Errors](err); ok { // at its line in path
		return nil, fmt.Errorf("--prices %w", me)
	} else if err != nil {
		return nil, fmt.Errorf("--prices %s: %w", path, err)
	}
	prices, err := promspend.ParsePrices(table)
	if err != nil {
		return nil, fmt.Errorf("--prices %s: %w", path, err)
	}
	return prices, nil
}

// tableOf is the price table in doc: doc itself, or the table of the ConfigMap doc is.
func tableOf(path string, doc []byte) ([]byte, error) {
	docs, stop := manifest.Docs(path, doc)
	if stop != nil || len(docs) == 0 {
		return doc, nil // ParsePrices says what is wrong with it
	}
	h, ok := docs[0].Head()
	if !ok || h.Kind != "ConfigMap" {
		return doc, nil
	}
	if len(docs) > 1 {
		return nil, fmt.Errorf("%d YAML documents: give the price table's ConfigMap alone", len(docs))
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if errs, ok := docs[0].Decode(&cm, h.Name()); !ok { // other fields are the ConfigMap's, not ours to check
		return nil, errs
	}
	if table, ok := cm.Data[api.DefaultPricesKey]; ok {
		return []byte(table), nil
	}
	if len(cm.Data) == 1 {
		for _, table := range cm.Data {
			return []byte(table), nil
		}
	}
	return nil, fmt.Errorf("ConfigMap: no key %s, and not one key alone (keys: %s): "+
		"give the table's key as %s, or the table alone", api.DefaultPricesKey,
		strings.Join(slices.Sorted(maps.Keys(cm.Data)), ", "), api.DefaultPricesKey)
}
