package main

import (
	"encoding/json"
	"fmt"
)

// The Namespace sync at the list limit: 120 blocking cluster budgets of 20,000 namespaces each (MaxSelectedNamespaces,
// every one closing this namespace among them) are some 31 MB, just under --max-list-body-bytes (32 MiB).
func init() {
	scaledSyncs = append(scaledSyncs, scaled{
		"Namespace beside 120 blocking ClusterLLMCostBudgets of 20,000 namespaces (list limit)", "/namespace/sync", 1,
		func(dir string) ([]byte, error) { return namespaceSyncNamed(dir, 120, 20_000, "team-%05d") },
	})
}

// namespaceSyncNamed is namespaceSync with the closed namespaces named by format, the first being the synced one.
func namespaceSyncNamed(dir string, budgets, namespaces int, format string) ([]byte, error) {
	req, err := readCapture(dir, "namespace/sync/capture-cluster-budget-blocks.request.json")
	if err != nil {
		return nil, err
	}
	related := group(req, "related", "ClusterLLMCostBudget.llmbudget.dev/v1alpha1")
	template := related["ml-department"]
	closed := make([]any, namespaces)
	for i := range closed {
		closed[i] = fmt.Sprintf(format, i)
	}
	closed[0] = "ml-research"
	grown := map[string]any{}
	for i := range budgets {
		name := fmt.Sprintf("department-%03d", i)
		b := renamed(template, name, "")
		b["status"].(map[string]any)["enforcement"].(map[string]any)["namespaces"] = closed
		grown[name] = b
	}
	req["related"].(map[string]any)["ClusterLLMCostBudget.llmbudget.dev/v1alpha1"] = grown
	return json.Marshal(req)
}
