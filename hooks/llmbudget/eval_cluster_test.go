package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEvalSumsTheDepartmentExampleOverItsTeamNamespaces(t *testing.T) {
	var args []string
	for _, f := range []string{
		"namespaces/ml-research.yaml", "namespaces/ml-serving.yaml", "namespaces/team-ml.yaml",
		"department/department-budget.yaml", "department/spend-ml-research.yaml", "department/spend-ml-serving.yaml",
	} {
		args = append(args, "-f", "../../examples/"+f)
	}
	var out bytes.Buffer
	require.NoError(t, evalCmd(append(args, "--now", "2026-12-10T12:00:00Z"), stdio{out: &out, err: io.Discard}))
	assert.Contains(t, out.String(),
		"# ClusterLLMCostBudget ml-department is UnderBudget: 9990.25 of 20000.00 USD (49%); 0 children\n")
	assert.Contains(t, out.String(), "- namespace: ml-research\n    observedSpendUSD: \"6100.25\"")
	assert.NotContains(t, out.String(), "team-ml", "a namespace without the department label is not summed")
}
