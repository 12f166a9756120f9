package main

import (
	"bufio"
	"errors"
	"fmt"

	"github.com/llmbudget/llmbudget/internal/manifest"
	"github.com/llmbudget/llmbudget/internal/migrate"
)

var migrateCommand = command{
	name: "migrate", synopsis: "-f FILE|DIR [-f FILE|DIR ...] [--skip-unknown-kinds]",
	summary: "convert llm-cost-budget-operator and Kelos budgets into LLMCostBudgets",
	about: "Converts llm-cost-budget-operator LLMCostBudgets and Kelos TaskBudgets into\n" +
		"llmbudget.dev/v1alpha1 LLMCostBudgets, printed as YAML with a comment wherever\n" +
		"something does not map. Nothing is printed unless every input converts, so a pipe\n" +
		"into kubectl apply never applies half a migration. A directory stands for its .yaml,\n" +
		".yml and .json files and those of its subdirectories, as with kubectl apply -R -f.\n" +
		"An llmbudget LLMCostBudget (a migration's output beside its input) is skipped with a\n" +
		"note; another kind is refused unless --skip-unknown-kinds. The inputs together may\n" +
		"hold at most 64 MiB.",
	run: migrateCmd,
}

func migrateCmd(args []string, std stdio) error {
	fs := newFlagSet("migrate")
	var files fileList
	fs.Var(&files, "f", "YAML or JSON file or directory with llm-cost-budget-operator or Kelos budgets "+
		"(repeatable; - for stdin)")
	skip := fs.Bool("skip-unknown-kinds", false, "skip documents of other kinds with a note instead of failing")
	if err := parseFileFlags(fs, &files, args); err != nil {
		return err
	}
	var docs [][]byte
	var notes []string
	var errs manifest.Errors // of every file, as eval reports them
	skipped, err := manifest.ReadInputs(files, std.in, func(in manifest.Input) error {
		res, err := migrate.From(in.Name, in.Text(), migrate.Options{SkipUnknownKinds: *skip})
		docs = append(docs, res.Documents...)
		notes = append(notes, res.Notes...)
		if me, ok := errors.AsType[manifest.Errors](err); ok {
			errs = append(errs, me...)
			return nil
		}
		return err
	})
	for _, s := range skipped {
		fmt.Fprintf(std.err, "llmbudget migrate: note: skipped %s: %s\n", s.Path, s.Why)
	}
	if err == nil && len(errs) > 0 {
		err = errs
	}
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(std.err, "llmbudget migrate: note: %s\n", n)
	}
	if len(docs) == 0 {
		return fmt.Errorf("nothing to convert in %s: "+
			"no finops.kineticgain.com/v1alpha1 LLMCostBudget or kelos.dev/v1alpha2 TaskBudget", files.String())
	}
	// Written one by one: joined, the output (several times the input, held until every input converts) would
	// be held twice.
	out := bufio.NewWriter(std.out)
	for i, doc := range docs {
		if i > 0 {
			_, _ = out.WriteString("---\n")
		}
		_, _ = out.Write(doc)
	}
	return out.Flush()
}
