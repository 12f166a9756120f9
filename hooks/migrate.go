package main

import (
	"fmt"

	"github.com/llmbudget/llmbudget/internal/manifest"
	"github.com/llmbudget/llmbudget/internal/migrate"
)

var migrateCommand = command{
	name: "migrate", synopsis: "-f FILE [-f FILE ...] [--skip-unknown-kinds]",
	summary: "convert llm-cost-budget-operator and Kelos budgets into LLMCostBudgets",
	about: "Converts llm-cost-budget-operator LLMCostBudgets and Kelos TaskBudgets into\n" +
		"llmbudget.dev/v1alpha1 LLMCostBudgets, printed as YAML with a comment wherever\n" +
		"something does not map. Nothing is printed unless every input converts, so a pipe\n" +
		"into kubectl apply never applies half a migration.",
	run: migrateCmd,
}

func migrateCmd(args []string, std stdio) error {
	fs := newFlagSet("migrate")
	var files fileList
	fs.Var(&files, "f", "YAML or JSON file with llm-cost-budget-operator or Kelos budgets (repeatable; - for stdin)")
	skip := fs.Bool("skip-unknown-kinds", false, "skip documents of other kinds with a note instead of failing")
	if err := parseFileFlags(fs, &files, args); err != nil {
		return err
	}
	var docs [][]byte
	var notes []string
	err := manifest.ReadInputs(files, std.in, func(file string, data []byte) error {
		res, err := migrate.Migrate(file, data, migrate.Options{SkipUnknownKinds: *skip})
		docs = append(docs, res.Documents...)
		notes = append(notes, res.Notes...)
		return err
	})
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(std.err, "llmbudget migrate: note: %s\n", n)
	}
	if len(docs) == 0 {
		return fmt.Errorf("nothing to convert in %s: no finops.kineticgain.com/v1alpha1 LLMCostBudget or kelos.dev/v1alpha2 TaskBudget", files.String())
	}
	_, err = std.out.Write(migrate.Join(docs))
	return err
}
