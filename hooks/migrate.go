package main

import (
	"errors"
	"fmt"
	"io"
	"os"

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

// migrateCmd converts other tools' budgets into LLMCostBudgets.
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
	readStdin := false
	for _, name := range files {
		data, source, err := readInput(name, std.in, &readStdin)
		if err != nil {
			return err
		}
		res, err := migrate.Migrate(source, data, migrate.Options{SkipUnknownKinds: *skip})
		if errors.Is(err, migrate.ErrUnknownKind) {
			return fmt.Errorf("%w (--skip-unknown-kinds skips such documents)", err)
		}
		if err != nil {
			return err
		}
		docs = append(docs, res.Documents...)
		notes = append(notes, res.Notes...)
	}
	for _, n := range notes {
		fmt.Fprintf(std.err, "llmbudget migrate: note: %s\n", n)
	}
	if len(docs) == 0 {
		return fmt.Errorf("nothing to convert in %s: no finops.kineticgain.com/v1alpha1 LLMCostBudget or kelos.dev/v1alpha2 TaskBudget", files.String())
	}
	_, err := std.out.Write(migrate.Join(docs))
	return err
}

// readInput reads a file, or stdin for "-" (once: a second "-" would read
// nothing and silently convert less than asked).
func readInput(name string, stdin io.Reader, readStdin *bool) ([]byte, string, error) {
	if name != "-" {
		data, err := os.ReadFile(name)
		return data, name, err
	}
	if *readStdin {
		return nil, "", errors.New("-f - given twice: stdin can be read only once")
	}
	*readStdin = true
	data, err := io.ReadAll(stdin)
	if err != nil {
		return nil, "", fmt.Errorf("read stdin: %w", err)
	}
	return data, "stdin", nil
}
