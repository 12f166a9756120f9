package deploytest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With the llminstance component, every Policy gate (team and cluster budgets, Deny and Warn) sees new LLMInstances
// and new APITokenRequests: an exhausted namespace starts no instance and mints no token.
func TestTheLLMInstanceComponentGatesNewInstancesAndNewAPITokens(t *testing.T) {
	vaps := byName(ofKind(kustomize(t, "deploy/overlays/all-kinds"), "ValidatingAdmissionPolicy"))
	for _, name := range []string{"llmbudget-budgets", "llmbudget-budgets-warn", "llmbudget-cluster-budgets",
		"llmbudget-cluster-budgets-warn"} {
		rules, _ := dig(vaps[name], "spec", "matchConstraints", "resourceRules")
		require.NotNil(t, rules, name)
		var seen []any
		for _, r := range rules.([]any) {
			groups, _ := dig(r, "apiGroups")
			if g, ok := groups.([]any); ok && len(g) == 1 && g[0] == "llm.privatellms.msp" {
				resources, _ := dig(r, "resources")
				seen = append(seen, resources.([]any)...)
			}
		}
		assert.Equal(t, []any{"llminstances", "apitokenrequests"}, seen, name)
	}
}
