// Package validation_test checks the validation corpus (see README.md) against
// the Go validator, through the strict decoding that llmbudget eval uses.
package validation_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/manifest"
)

// expectation is what an invalid budget's header says its refusal contains.
type expectation struct {
	field, message string
}

// readHeader reads the "# field:" and "# message:" lines at the top of a corpus file.
func readHeader(t *testing.T, file string) expectation {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var want expectation
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() && strings.HasPrefix(sc.Text(), "#") {
		key, value, _ := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), ": ")
		switch key {
		case "field":
			want.field = value
		case "message":
			want.message = value
		}
	}
	return want
}

func corpus(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	return files
}

func TestTheCorpusIsLargeEnoughToMeanSomething(t *testing.T) {
	valid, invalid := corpus(t, "valid"), corpus(t, "invalid")
	assert.GreaterOrEqual(t, len(valid)+len(invalid), 40)
	assert.GreaterOrEqual(t, len(valid), 10)
	assert.GreaterOrEqual(t, len(invalid), 30)
}

func TestEvalAcceptsEveryValidBudget(t *testing.T) {
	for _, file := range corpus(t, "valid") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			set, err := manifest.Read([]string{file}, nil)
			require.NoError(t, err)
			assert.Len(t, set.Budgets, 1)
		})
	}
}

func TestEvalRefusesEveryInvalidBudgetNamingTheField(t *testing.T) {
	for _, file := range corpus(t, "invalid") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want := readHeader(t, file)
			require.NotEmpty(t, want.field, "an invalid budget's header names the field it must be refused for")
			set, err := manifest.Read([]string{file}, nil)
			require.Error(t, err, "accepted")
			assert.Empty(t, set.Budgets)
			assert.Contains(t, err.Error(), want.field)
			assert.Contains(t, err.Error(), want.message)
		})
	}
}
