package authz_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/authz"
)

// The admission policies build their message as status.enforcement.message, or a fallback naming the budget,
// followed by what is refused where. A refusal at the gateway says that first sentence: here each policy's
// messageExpression is read from deploy/ and its first term compared with what Sentence says for the same budget.
// (The integration test compares the two with a real API server's refusal.)
func TestSentenceIsTheFirstSentenceOfEachAdmissionPolicysMessage(t *testing.T) {
	tests := map[string]struct {
		file string
		kind string
		mode api.Mode
	}{
		"LLMCostBudget":               {"validatingadmissionpolicy.yaml", api.Kind, ""},
		"LLMCostBudget in Warn mode":  {"warn-validatingadmissionpolicy.yaml", api.Kind, api.ModeWarn},
		"ClusterLLMCostBudget":        {"cluster-validatingadmissionpolicy.yaml", api.ClusterKind, ""},
		"ClusterLLMCostBudget (Warn)": {"cluster-warn-validatingadmissionpolicy.yaml", api.ClusterKind, api.ModeWarn},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			expr := messageExpression(t, tt.file)
			first, _, ok := strings.Cut(expr, " + ': new '")
			require.True(t, ok, "the sentence is followed by what is refused: %s", expr)
			b := &authz.Budget{Kind: tt.kind, Namespace: "team-ml", Name: "chatbot",
				Enforcement: api.EnforcementStatus{Blocking: true, Mode: tt.mode}}
			fallback := strings.TrimPrefix(authz.Sentence(b), tt.kind+" chatbot")
			assert.Equal(t, "params.?status.?enforcement.?message.orValue('"+tt.kind+" ' + params.metadata.name + '"+
				fallback+"')", first, "the fallback, when the status has no message")
			b.Enforcement.Message = "LLMCostBudget team-ml/chatbot is OverBudget (...)"
			assert.Equal(t, b.Enforcement.Message, authz.Sentence(b), "the status's own sentence otherwise")
		})
	}
}

func messageExpression(t *testing.T, file string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "base", "admission", file))
	require.NoError(t, err)
	var policy struct {
		Spec struct {
			Validations []struct {
				MessageExpression string `json:"messageExpression"`
			} `json:"validations"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &policy))
	require.Len(t, policy.Spec.Validations, 1)
	return policy.Spec.Validations[0].MessageExpression
}
