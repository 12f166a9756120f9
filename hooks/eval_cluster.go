package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/clusterbudget"
	"github.com/llmbudget/llmbudget/internal/hookwire"
)

// evaluateCluster is evaluateOne for a ClusterLLMCostBudget.
func evaluateCluster(parent json.RawMessage, related hookwire.ObjectMap, now time.Time) ([]byte, error) {
	req := hookwire.CompositeRequest{Parent: parent, Related: related, Children: hookwire.ObjectMap{}}
	resp, sum, err := clusterbudget.Sync(req, now)
	if err != nil {
		return nil, err
	}
	st, _ := resp.Status.(api.Status)
	var out bytes.Buffer
	fmt.Fprintf(&out, "# %s %s is %s", api.ClusterKind, sum.Name, st.State)
	if st.ObservedSpendUSD != "" && st.PercentUsed != nil {
		fmt.Fprintf(&out, ": %s of %s USD (%d%%)", st.ObservedSpendUSD, st.LimitUSD, *st.PercentUsed)
	}
	fmt.Fprintf(&out, "; %d children\n", len(resp.Children))
	y, err := yaml.Marshal(map[string]any{"status": resp.Status, "children": resp.Children})
	if err != nil {
		return nil, err
	}
	out.Write(y)
	return out.Bytes(), nil
}
