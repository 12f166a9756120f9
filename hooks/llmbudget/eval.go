package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/manifest"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/spend/source"
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

func evalCmd(args []string, std stdio) error {
	fs := newFlagSet("eval")
	var files, exclude fileList
	fs.Var(&files, "f", "YAML or JSON file or directory with budgets and ConfigMaps (repeatable; - for stdin); "+
		"files and directories may also follow the flags")
	nowFlag := fs.String("now", "", "evaluation time, RFC 3339 (default: the current time)")
	failOnFlag := fs.String("fail-on", "", "exit 3 when a budget ends in one of these states: a comma-separated list of "+
		"underbudget, warning, overbudget, unknown")
	output := fs.String("output", "yaml", "yaml: the sync hook's answers; summary: one line per budget "+
		"(name, state, spend/limit)")
	quiet := fs.Bool("quiet", false, "print nothing on stdout: the exit status and stderr say it all")
	fs.Var(&exclude, "exclude", "skip files and directories whose name matches this glob, or whose path does when "+
		"it holds a / (repeatable)")
	strictZones := fs.Bool("strict-zones", false, "refuse a time zone the time zone database lacks, "+
		"which the API server admits")
	if err := parseFileArgs(fs, &files, args); err != nil {
		return err
	}
	if !slices.Contains(evalOutputs, *output) {
		return badUsage(fs, "--output %q: want yaml or summary", *output)
	}
	if err := manifest.CheckGlobs(exclude); err != nil {
		return badUsage(fs, "--exclude %v", err)
	}
	clock, err := parseClock(*nowFlag, "2026-11-20T12:00:00Z")
	if err != nil {
		return &usageError{fs: fs, err: err}
	}
	failOn, err := parseFailOn(*failOnFlag)
	if err != nil {
		return &usageError{fs: fs, err: err}
	}
	now := clock()
	set, err := manifest.ReadWith(files, std.in, manifest.Options{Exclude: exclude, LenientZones: !*strictZones})
	for _, s := range set.SkippedFiles {
		fmt.Fprintf(std.err, "llmbudget eval: note: skipped %s: %s\n", s.Path, s.Why)
	}
	if err != nil {
		return err
	}
	for _, w := range set.Warnings {
		fmt.Fprintf(std.err, "llmbudget eval: warning: %s\n", w)
	}
	related := metacontroller.ObjectMap{
		metacontroller.ConfigMapGroup: {}, metacontroller.NamespaceGroup: {}, source.TaskRecordGroup: {},
	}
	for _, cm := range set.ConfigMaps {
		related[metacontroller.ConfigMapGroup][metacontroller.Key(cm.Namespace, cm.Name)] = metacontroller.Raw(cm.JSON)
	}
	for _, o := range set.Skipped {
		switch {
		case o.Kind == "Namespace" && o.APIVersion == "v1":
			related[metacontroller.NamespaceGroup][o.Name] = metacontroller.Raw(o.JSON) // for cluster budgets
		case o.Kind == "TaskRecord" && o.APIVersion == source.KelosAPIVersion:
			// As the hook gets them: every record, which it matches against each budget's selector.
			ns, raw, err := inNamespace(o)
			if err != nil {
				return fmt.Errorf("%s: TaskRecord %s: %w", o.Source, o.Name, err)
			}
			related[source.TaskRecordGroup][metacontroller.Key(ns, o.Name)] = metacontroller.Raw(raw)
		}
	}
	if len(set.Budgets)+len(set.ClusterBudgets) == 0 {
		return fmt.Errorf("no LLMCostBudget (%s) found in %s%s", api.APIVersion, files.String(), skippedNote(set.Skipped))
	}
	var parents []manifest.Object
	for _, b := range set.Budgets {
		key := metacontroller.Key(b.Namespace, b.Spec.CostSource.ConfigMapName)
		if _, ok := related[metacontroller.ConfigMapGroup][key]; !ok &&
			b.Spec.CostSource.Format != api.TaskRecords {
			fmt.Fprintf(std.err, "llmbudget eval: hint: %s: %s/%s reads ConfigMap %s/%s (spec.costSource.configMapName), "+
				"which was not given; add it with -f, for example from kubectl get configmap -n %s %s -o yaml\n",
				b.Source, b.Namespace, b.Name, b.Namespace, b.Spec.CostSource.ConfigMapName,
				b.Namespace, b.Spec.CostSource.ConfigMapName)
		}
		parents = append(parents, b.Object)
	}
	// Each answer is written as it is made, so that the output (several times the input) is never held whole.
	out := bufio.NewWriter(std.out)
	if *quiet {
		out = bufio.NewWriter(io.Discard)
	}
	var failed failedOn
	for i, p := range append(parents, set.ClusterBudgets...) {
		cluster := p.Kind == api.ClusterKind
		name := p.Namespace + "/" + p.Name
		if cluster {
			name = api.ClusterKind + " " + p.Name
		}
		ev, err := evaluate(p.JSON, related, now, name, cluster)
		if err != nil {
			name = strings.TrimPrefix(name, api.ClusterKind+" ")
			return errors.Join(out.Flush(), fmt.Errorf("%s: %s: %w", p.Source, name, err))
		}
		switch {
		case *output == "summary":
			_, err = fmt.Fprintln(out, ev.summary)
		case i > 0:
			_, err = fmt.Fprintf(out, "---\n%s", ev.doc)
		default:
			_, err = out.Write(ev.doc)
		}
		if err != nil {
			return err
		}
		if slices.Contains(failOn, ev.state) {
			failed = append(failed, fmt.Sprintf("%s: %s is %s (--fail-on %s)", p.Source, name, ev.state, *failOnFlag))
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

// inNamespace is a namespaced object's JSON with metadata.namespace set, "default" when the file has none, as
// kubectl applies it in the default context.
func inNamespace(o manifest.Object) (string, json.RawMessage, error) {
	if o.Namespace != "" {
		return o.Namespace, o.JSON, nil
	}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(o.JSON))
	dec.UseNumber() // a cost written as a number keeps its digits
	if err := dec.Decode(&obj); err != nil {
		return "", nil, err
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		return "", nil, errors.New("metadata is missing")
	}
	md["namespace"] = "default"
	raw, err := json.Marshal(obj)
	return "default", raw, err
}

// skippedNote names the kinds read and skipped, so that a wrong file is noticed.
func skippedNote(skipped []manifest.Object) string {
	if len(skipped) == 0 {
		return ""
	}
	var kinds []string
	for _, s := range skipped {
		k := s.Kind + " (" + s.APIVersion + ")"
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return "; skipped " + strings.Join(kinds, ", ")
}

// created gives a budget read from a file, which no API server has created, the creationTimestamp now: the hook
// dates what a budget's first sync finds by its creation, and eval answers as that first sync would.
func created(parent json.RawMessage, now time.Time) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(parent, &obj); err != nil {
		return nil, fmt.Errorf("decode the budget: %w", err)
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(obj["metadata"], &meta); err != nil || meta == nil {
		return parent, nil //nolint:nilerr // the hook names what is wrong with the metadata
	}
	if ts, ok := meta["creationTimestamp"]; ok && string(ts) != "null" {
		return parent, nil
	}
	meta["creationTimestamp"], _ = json.Marshal(now.UTC().Format(time.RFC3339))
	obj["metadata"], _ = json.Marshal(meta)
	return json.Marshal(obj)
}

// evaluation is a budget's sync answer as eval prints it.
type evaluation struct {
	doc     []byte // YAML under a headline that sums it up for a person
	summary string // one line: name, state, spend/limit
	state   api.State
}

// evaluate is the sync hook's answer for the budget called name.
func evaluate(parent json.RawMessage, related metacontroller.ObjectMap, now time.Time, name string,
	cluster bool) (evaluation, error) {
	var c metacontroller.CompositeHook = controller.Budget{}
	if cluster {
		c = controller.ClusterBudget{}
	}
	parent, err := created(parent, now)
	if err != nil {
		return evaluation{}, err
	}
	req := metacontroller.CompositeRequest{Parent: parent, Related: related, Children: metacontroller.ObjectMap{}}
	resp, sum, err := c.Sync(req, now)
	if err != nil {
		return evaluation{}, err
	}
	st, _ := resp.Status.(api.Status)
	head := fmt.Sprintf("# %s is %s", name, st.State)
	if over := modelsOver(st); over != "" {
		head += " (" + over + ")"
	}
	ev := evaluation{state: st.State, summary: fmt.Sprintf("%s %s %s/%s USD", name, st.State,
		cmp.Or(st.ObservedSpendUSD, "?"), cmp.Or(st.LimitUSD, "-"))}
	if st.PercentUsed != nil {
		ev.summary += fmt.Sprintf(" (%d%%)", *st.PercentUsed)
	}
	if st.ObservedSpendUSD != "" && (st.LimitUSD != "" || cluster) && st.PercentUsed != nil {
		head += fmt.Sprintf(": %s of %s USD (%d%%)", st.ObservedSpendUSD, st.LimitUSD, *st.PercentUsed)
	}
	// One YAML document's keys come sorted: a namespaced budget's answer is three documents, status first.
	docs := []map[string]any{
		{"status": resp.Status}, {"children": resp.Children}, {"resyncAfterSeconds": resp.ResyncAfterSeconds},
	}
	if cluster {
		head += fmt.Sprintf("; %d children\n", len(resp.Children))
		docs = []map[string]any{{"status": resp.Status, "children": resp.Children}}
	} else {
		if st.Period != nil {
			head += fmt.Sprintf(" in %s to %s", st.Period.Start, st.Period.End)
		}
		if sum.Reason != "" && sum.Reason != api.ReasonEvaluated {
			head += " (" + sum.Reason + ")"
		}
		kids := "children"
		if len(resp.Children) == 1 {
			kids = "child"
		}
		head += fmt.Sprintf("; %d %s\nbudget: %s\n", len(resp.Children), kids, name)
	}
	ev.doc = []byte(head)
	for _, doc := range docs {
		y, err := yaml.Marshal(doc)
		if err != nil {
			return evaluation{}, err
		}
		ev.doc = append(ev.doc, y...)
	}
	return ev, nil
}

// modelsOver names the limited models that are OverBudget, with their figures: "model gpt-4o is over: 120 of
// 100 USD"; "" when none is.
func modelsOver(st api.Status) string {
	var over []string
	for _, m := range st.Models {
		if m.State != api.OverBudget {
			continue
		}
		s := "model " + m.Model + " is over"
		if m.LimitUSD != "" {
			s += fmt.Sprintf(": %s of %s USD", m.ObservedSpendUSD, m.LimitUSD)
		} else {
			s += " its token limits"
		}
		over = append(over, s)
	}
	return strings.Join(over, "; ")
}
