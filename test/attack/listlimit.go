package main

// The Namespace sync at the list limit: 120 blocking cluster budgets of 20,000 namespaces each (MaxSelectedNamespaces,
// every one closing this namespace among them) are some 31 MB, just under --max-list-body-bytes (32 MiB).
func init() {
	scaledSyncs = append(scaledSyncs, scaled{
		"Namespace beside 120 blocking ClusterLLMCostBudgets of 20,000 namespaces (list limit)", "/namespace/sync", 1,
		func(dir string) ([]byte, error) { return namespaceSync(dir, 120, 20_000, "team-%05d") },
	})
}
