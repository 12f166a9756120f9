//go:build integration

package integration_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The validation corpus (test/validation, see its README) is also checked by the Go
// validator in make test: together the two tests show that llmbudget eval and the API
// server give every budget the same verdict, naming the same field.

// corpusCase is one budget of the corpus and what its header says a refusal contains.
type corpusCase struct {
	file                      string
	field, message, apiserver string
}

func readCorpus(t *testing.T, kind string) []corpusCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "test", "validation", kind, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	cases := make([]corpusCase, len(files))
	for i, file := range files {
		cases[i] = corpusCase{file: file}
		f, err := os.Open(file)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for sc.Scan() && strings.HasPrefix(sc.Text(), "#") {
			key, value, _ := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), ": ")
			switch key {
			case "field":
				cases[i].field = value
			case "message":
				cases[i].message = value
			case "apiserver":
				cases[i].apiserver = value
			}
		}
		f.Close()
	}
	return cases
}

// admit asks the API server, without storing anything, to create the budget in file
// with strict field validation, and to server-side apply it; it returns both outputs.
func admit(t *testing.T, ns, file string) (create, apply string, createErr, applyErr error) {
	t.Helper()
	create, createErr = kube.KubectlErr(t, "", "create", "-n", ns, "--dry-run=server", "--validate=strict", "-f", file)
	apply, applyErr = kube.KubectlErr(t, "", "apply", "--server-side", "--field-manager=llmbudget-test",
		"-n", ns, "--dry-run=server", "--validate=strict", "-f", file)
	return create, apply, createErr, applyErr
}

func TestTheAPIServerAcceptsEveryValidBudgetOfTheCorpus(t *testing.T) {
	installBudgetCRD(t)
	ns := kube.Namespace(t, "corpus-valid")
	for _, tc := range readCorpus(t, "valid") {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			create, apply, createErr, applyErr := admit(t, ns, tc.file)
			assert.NoError(t, createErr, create)
			assert.NoError(t, applyErr, apply)
		})
	}
}

func TestTheAPIServerRefusesEveryInvalidBudgetOfTheCorpusNamingTheField(t *testing.T) {
	installBudgetCRD(t)
	ns := kube.Namespace(t, "corpus-invalid")
	for _, tc := range readCorpus(t, "invalid") {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			require.NotEmpty(t, tc.field, "an invalid budget's header names the field it must be refused for")
			create, apply, createErr, applyErr := admit(t, ns, tc.file)
			require.Error(t, createErr, "kubectl create accepted it:\n%s", create)
			require.Error(t, applyErr, "kubectl apply --server-side accepted it:\n%s", apply)
			assert.Contains(t, create, tc.field)
			assert.Contains(t, create, tc.message)
			assert.Contains(t, create, tc.apiserver)
			assert.Contains(t, apply, tc.field)
			assert.NotContains(t, create, "should match", "a rule answers with a regular expression")
		})
	}
}
