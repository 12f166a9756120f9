package migrate_test

// The examples in examples/migrate are converted and compared with the
// committed *.converted.yaml beside them. Run `go test ./internal/migrate
// -update` to rewrite those files, and review the diff like code.

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/internal/migrate"
)

var update = flag.Bool("update", false, "rewrite examples/migrate/*.converted.yaml")

const examplesDir = "../../examples/migrate"

func TestExamplesConvertToTheirCommittedOutput(t *testing.T) {
	examples := map[string]struct {
		source string
		docs   int
	}{
		"two operator budgets in one file convert to two budgets": {"llm-cost-budget-operator.yaml", 2},
		"an exported Kelos TaskBudget converts to one budget":     {"kelos-taskbudget.yaml", 1},
	}
	for name, ex := range examples {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join(examplesDir, ex.source))
			require.NoError(t, err)
			res, err := migrate.Migrate("examples/migrate/"+ex.source, in, migrate.Options{})
			require.NoError(t, err)
			require.Len(t, res.Documents, ex.docs)
			got := migrate.Join(res.Documents)

			golden := filepath.Join(examplesDir, strings.TrimSuffix(ex.source, ".yaml")+".converted.yaml")
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "missing golden: run go test ./internal/migrate -update")
			assert.Equal(t, string(want), string(got), "run go test ./internal/migrate -update and review the diff")
		})
	}
}

// TestTheSpendWriterExampleMayOnlyPatchItsOwnConfigMap holds the CronJob
// example to least privilege: its Role allows patch on one named ConfigMap,
// the one its job writes, and nothing else.
func TestTheSpendWriterExampleMayOnlyReadAndPatchItsOwnConfigMap(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(examplesDir, "spend-writer-cronjob.yaml"))
	require.NoError(t, err)

	type rule struct {
		APIGroups     []string `json:"apiGroups"`
		Resources     []string `json:"resources"`
		ResourceNames []string `json:"resourceNames"`
		Verbs         []string `json:"verbs"`
	}
	var rules []rule
	kinds := map[string]int{}
	var patched []string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj struct {
			Kind  string `json:"kind"`
			Rules []rule `json:"rules"`
			Spec  struct {
				JobTemplate struct {
					Spec struct {
						Template struct {
							Spec struct {
								Containers []struct {
									Args []string `json:"args"`
								} `json:"containers"`
							} `json:"spec"`
						} `json:"template"`
					} `json:"spec"`
				} `json:"jobTemplate"`
			} `json:"spec"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		kinds[obj.Kind]++
		rules = append(rules, obj.Rules...)
		for _, c := range obj.Spec.JobTemplate.Spec.Template.Spec.Containers {
			for i, a := range c.Args {
				if a == "configmap" && i+1 < len(c.Args) {
					patched = append(patched, c.Args[i+1])
				}
			}
		}
	}
	assert.Equal(t, map[string]int{"ServiceAccount": 1, "Role": 1, "RoleBinding": 1, "CronJob": 1}, kinds)
	require.Len(t, patched, 1, "the job patches exactly one ConfigMap")
	want := []rule{{
		APIGroups:     []string{""},
		Resources:     []string{"configmaps"},
		ResourceNames: patched,
		Verbs:         []string{"get", "patch"},
	}}
	assert.Equal(t, want, rules, "kubectl patch reads the object first")
}

// The writer stamps what it writes, as docs/coming-from.md tells every writer to: without the stamp a budget
// with maxAge reports its spend stale.
func TestTheSpendWriterExampleStampsItsSpend(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(examplesDir, "spend-writer-cronjob.yaml"))
	require.NoError(t, err)
	script := string(data)[strings.Index(string(data), "apiVersion: batch/v1"):]
	assert.Contains(t, script, "'metadata', json_build_object('annotations', json_build_object(",
		"the patch the job applies sets an annotation")
	assert.Contains(t, script, "'llmbudget.dev/spend-as-of',\n")
	assert.Contains(t, script, `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`,
		"stamped in RFC 3339 UTC, as llmbudget reads it")
}
