package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEvalSumsTheTaskRecordsOfTheKelosExample(t *testing.T) {
	var out bytes.Buffer
	args := []string{"-f", "../../examples/kelos-records/", "--now", "2026-11-20T12:00:00Z"}
	require.NoError(t, evalCmd(args, stdio{out: &out, err: io.Discard}))
	assert.Contains(t, out.String(), "# team-ml/coding-agents is OverBudget (model opus is over: 8.75 of 8.00 USD): "+
		"8.875 of 10.00 USD (88%)")
	assert.Contains(t, out.String(), "spend summed from 3 of the TaskRecords labelled team=platform, those\n"+
		"      completed in the period; 1 completed outside it")
}

func TestEvalReadsARecordWithoutNamespaceInTheDefaultOne(t *testing.T) {
	dir := t.TempDir()
	budget, err := os.ReadFile("../../examples/kelos-records/budget.yaml")
	require.NoError(t, err)
	record, err := os.ReadFile("../../examples/kelos-records/record-refactor.yaml")
	require.NoError(t, err)
	inDefault := strings.ReplaceAll(string(budget), "namespace: team-ml", "namespace: default")
	withoutNamespace := strings.ReplaceAll(string(record), "  namespace: team-ml\n", "")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "budget.yaml"), []byte(inDefault), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "record.yaml"), []byte(withoutNamespace), 0o644))
	var out bytes.Buffer
	require.NoError(t, evalCmd([]string{"-f", dir, "--now", "2026-11-20T12:00:00Z"}, stdio{out: &out, err: io.Discard}))
	assert.Contains(t, out.String(), "# default/coding-agents is UnderBudget: 6.00 of 10.00 USD (60%)")
}
