package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/manifest"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

var evalCommand = command{
	name: "eval", synopsis: "[-f] FILE|DIR ... [--now 2026-11-20T12:00:00Z] [--fail-on overbudget,unknown] " +
		"[--output yaml|summary | --quiet] [--exclude GLOB ...] [--strict-zones]",
	summary: "check budgets as the API server would and evaluate them offline",
	about: `Reads LLMCostBudgets and their spend ConfigMaps (or Kelos TaskRecords) from files,
directories (and their subdirectories, as kubectl apply -R -f; other files are noted as
skipped) or stdin ("-"), given with -f or as arguments, checks them as the API server admits
them (strict fields, names, the spec's rules, the size limits) and prints, as YAML, the status
and children the sync hook would return. Files may hold several documents and "kind: List"
objects, as kubectl get llmb,cm -o yaml prints them. An empty file is skipped, and noted, as
kubectl apply skips it, unless no input holds a document. Two objects of one kind, namespace and
name are refused. The inputs together may hold at most 64 MiB. Nothing is printed unless
every budget is valid. A time zone the time zone database lacks is a warning, as the API
server admits it (the hook then reports the budget Unknown); --strict-zones refuses it. In
CI, --fail-on fails the run when a budget ends in one of the states named, after printing the
evaluation; --output summary prints one line per budget instead, --quiet nothing.

exit status:
  0  every budget was evaluated (and none is in a --fail-on state)
  1  invalid input: a file cannot be read, an object or a budget's spec is invalid, two
     objects are one, the inputs exceed 64 MiB, or no LLMCostBudget was found
  2  usage: an unknown flag, no input, a --now that is not RFC 3339, an unknown --fail-on
     state or --output, an --exclude glob that is not one
  3  a budget ended in a --fail-on state`,
	run: evalCmd,
}

// failOnStates are the states --fail-on names, lower-cased as typed.
var failOnStates = []api.State{api.UnderBudget, api.Warning, api.OverBudget, api.Unknown}

// parseFailOn reads a comma-separated list of states, in any case ("overbudget,Unknown").
func parseFailOn(list string) ([]api.State, error) {
	var states []api.State
	for name := range strings.SplitSeq(list, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		i := slices.IndexFunc(failOnStates, func(s api.State) bool { return strings.EqualFold(string(s), name) })
		if i < 0 {
			return nil, fmt.Errorf("--fail-on %q: not a state; give a comma-separated list of "+
				"underbudget, warning, overbudget, unknown", name)
		}
		states = append(states, failOnStates[i])
	}
	return states, nil
}

// failedOn is eval's finding that budgets ended in --fail-on states, one a line: run exits exitFailedOn.
type failedOn []string

func (f failedOn) Error() string { return strings.Join(f, "\n") }

// evalOutputs are what --output prints.
var evalOutputs = []string{"yaml", "summary"}

// evalOptions are eval's flags, checked.
type evalOptions struct {
	files   fileList
	read    manifest.Options
	now     time.Time
	failOn  []api.State
	failOns string // --fail-on as given
	output  string
	quiet   bool
}

func parseEval(args []string) (evalOptions, error) {
	var o evalOptions
	fs := newFlagSet("eval")
	fs.Var(&o.files, "f", "YAML or JSON file or directory with budgets and ConfigMaps (repeatable; - for stdin); "+
		"files and directories may also follow the flags")
	nowFlag := fs.String("now", "", "evaluation time, RFC 3339 (default: the current time)")
	fs.StringVar(&o.failOns, "fail-on", "", "exit 3 when a budget ends in one of these states: a comma-separated "+
		"list of underbudget, warning, overbudget, unknown")
	fs.StringVar(&o.output, "output", "yaml", "yaml: the sync hook's answers; summary: one line per budget "+
		"(name, state, spend/limit)")
	fs.BoolVar(&o.quiet, "quiet", false, "print nothing on stdout: the exit status and stderr say it all")
	var exclude fileList
	fs.Var(&exclude, "exclude", "skip files and directories whose name matches this glob, or whose path does when "+
		"it holds a / (repeatable)")
	strictZones := fs.Bool("strict-zones", false, "refuse a time zone the time zone database lacks, "+
		"which the API server admits")
	if err := parseFileArgs(fs, &o.files, args); err != nil {
		return o, err
	}
	if !slices.Contains(evalOutputs, o.output) {
		return o, badUsage(fs, "--output %q: want yaml or summary", o.output)
	}
	if err := manifest.CheckGlobs(exclude); err != nil {
		return o, badUsage(fs, "--exclude %v", err)
	}
	o.read = manifest.Options{Exclude: exclude, LenientZones: !*strictZones}
	clock, err := parseClock(*nowFlag, "2026-11-20T12:00:00Z")
	if err != nil {
		return o, &usageError{fs: fs, err: err}
	}
	o.now = clock()
	if o.failOn, err = parseFailOn(o.failOns); err != nil {
		return o, &usageError{fs: fs, err: err}
	}
	return o, nil
}

func evalCmd(args []string, std stdio) error {
	o, err := parseEval(args)
	if err != nil {
		return err
	}
	set, err := manifest.ReadWith(o.files, std.in, o.read)
	for _, s := range set.SkippedFiles {
		fmt.Fprintf(std.err, "llmbudget eval: note: skipped %s: %s\n", s.Path, s.Why)
	}
	if err != nil {
		return err
	}
	for _, w := range set.Warnings {
		fmt.Fprintf(std.err, "llmbudget eval: warning: %s\n", w)
	}
	related, hints, err := controller.EvalRelated(set)
	if err != nil {
		return err
	}
	if len(set.Budgets)+len(set.ClusterBudgets) == 0 {
		return fmt.Errorf("no LLMCostBudget (%s) found in %s%s", api.APIVersion, o.files.String(),
			controller.SkippedNote(set.Skipped))
	}
	for _, h := range hints {
		fmt.Fprintf(std.err, "llmbudget eval: hint: %s\n", h)
	}
	parents := make([]manifest.Object, 0, len(set.Budgets)+len(set.ClusterBudgets))
	for _, b := range set.Budgets {
		parents = append(parents, b.Object)
	}
	return printEvaluations(std.out, o, append(parents, set.ClusterBudgets...), related)
}

// printEvaluations writes each answer as it is made, so that the output (several times the input) is never held
// whole, and fails when a budget ends in a --fail-on state.
func printEvaluations(w io.Writer, o evalOptions, parents []manifest.Object, related metacontroller.ObjectMap) error {
	out := bufio.NewWriter(w)
	if o.quiet {
		out = bufio.NewWriter(io.Discard)
	}
	var failed failedOn
	for i, p := range parents {
		ev, err := controller.Eval(p, related, o.now)
		if err != nil {
			return errors.Join(out.Flush(), err)
		}
		switch {
		case o.output == "summary":
			_, err = fmt.Fprintln(out, ev.Summary)
		case i > 0:
			_, err = fmt.Fprintf(out, "---\n%s", ev.Doc)
		default:
			_, err = out.Write(ev.Doc)
		}
		if err != nil {
			return err
		}
		if slices.Contains(o.failOn, ev.State) {
			failed = append(failed, fmt.Sprintf("%s: %s is %s (--fail-on %s)", p.Source, ev.Name, ev.State, o.failOns))
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if len(failed) > 0 {
		return failed
	}
	return nil
}
