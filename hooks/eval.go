package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/budget"
	"github.com/llmbudget/llmbudget/internal/hookwire"
)

// fileList collects repeated -f flags.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// evalCmd evaluates budgets offline exactly as the sync hook would, so a user
// can try a budget and its spend data without a cluster.
func evalCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var files fileList
	fs.Var(&files, "f", "YAML or JSON file with budgets and ConfigMaps (repeatable; - for stdin)")
	nowFlag := fs.String("now", "", "evaluation time, RFC 3339 (default: the current time)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\n\n%s", err, usage)
	}
	if len(files) == 0 {
		return fmt.Errorf("no input: give at least one -f FILE\n\n%s", usage)
	}
	now := time.Now()
	if *nowFlag != "" {
		t, err := time.Parse(time.RFC3339, *nowFlag)
		if err != nil {
			return fmt.Errorf("--now %q: must be RFC 3339, like 2026-11-20T12:00:00Z", *nowFlag)
		}
		now = t
	}
	in, err := readObjects(files, stdin)
	if err != nil {
		return err
	}
	if len(in.budgets)+len(in.clusterBudgets) == 0 {
		return fmt.Errorf("no LLMCostBudget found in %s", files.String())
	}
	for i, b := range append(in.budgets, in.clusterBudgets...) {
		eval := evaluateOne
		if i >= len(in.budgets) {
			eval = evaluateCluster
		}
		out, err := eval(b, in.related, now)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(stdout, "---\n"); err != nil {
				return err
			}
		}
		if _, err := stdout.Write(out); err != nil {
			return err
		}
	}
	return nil
}

type objects struct {
	budgets        []json.RawMessage
	clusterBudgets []json.RawMessage
	related        hookwire.ObjectMap
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

func readObjects(files []string, stdin io.Reader) (objects, error) {
	objs := objects{related: hookwire.ObjectMap{hookwire.ConfigMapGroup: {}}}
	for _, name := range files {
		if err := readFile(name, stdin, &objs); err != nil {
			return objs, err
		}
	}
	return objs, nil
}

func readFile(name string, stdin io.Reader, objs *objects) error {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for n := 1; ; n++ {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: read document %d: %w", name, n, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		if err := addObject(doc, objs); err != nil {
			return fmt.Errorf("%s: document %d: %w", name, n, err)
		}
	}
}

func addObject(doc []byte, objs *objects) error {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil
	}
	var tm typeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return fmt.Errorf("not a Kubernetes object: %w", err)
	}
	ns := tm.Metadata.Namespace
	if ns == "" {
		ns = "default"
	}
	switch {
	case addClusterObject(tm, js, objs):
	case tm.Kind == api.Kind && tm.APIVersion == api.APIVersion:
		objs.budgets = append(objs.budgets, withServerDefaults(js, ns))
	case tm.Kind == "ConfigMap" && tm.APIVersion == "v1":
		objs.related[hookwire.ConfigMapGroup][hookwire.Key(ns, tm.Metadata.Name)] = js
	}
	return nil
}

// withServerDefaults sets metadata.namespace and metadata.generation the way
// kubectl and the API server would.
func withServerDefaults(js []byte, ns string) json.RawMessage {
	var obj map[string]any
	if json.Unmarshal(js, &obj) != nil {
		return js
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	md["namespace"] = ns
	if _, ok := md["generation"]; !ok {
		md["generation"] = 1
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return js
	}
	return out
}

func evaluateOne(parent json.RawMessage, related hookwire.ObjectMap, now time.Time) ([]byte, error) {
	req := hookwire.CompositeRequest{Parent: parent, Related: related, Children: hookwire.ObjectMap{}}
	resp, sum, err := budget.Sync(req, now)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# %s\n", headline(sum, resp))
	fmt.Fprintf(&out, "budget: %s/%s\n", sum.Namespace, sum.Name)
	// Sections in reading order (a YAML encoder would sort them).
	for _, sec := range []struct {
		key string
		val any
	}{{"status", resp.Status}, {"children", resp.Children}, {"resyncAfterSeconds", resp.ResyncAfterSeconds}} {
		y, err := yaml.Marshal(map[string]any{sec.key: sec.val})
		if err != nil {
			return nil, err
		}
		out.Write(y)
	}
	return out.Bytes(), nil
}

// headline sums an evaluation up in one line for a person reading eval output.
func headline(sum budget.Summary, resp hookwire.CompositeResponse) string {
	st, _ := resp.Status.(api.Status)
	line := fmt.Sprintf("%s/%s is %s", sum.Namespace, sum.Name, st.State)
	if st.ObservedSpendUSD != "" && st.LimitUSD != "" && st.PercentUsed != nil {
		line += fmt.Sprintf(": %s of %s USD (%d%%)", st.ObservedSpendUSD, st.LimitUSD, *st.PercentUsed)
	}
	if st.Period != nil {
		line += fmt.Sprintf(" in %s to %s", st.Period.Start, st.Period.End)
	}
	if sum.Reason != "" && sum.Reason != api.ReasonEvaluated {
		line += " (" + sum.Reason + ")"
	}
	kids := "children"
	if len(resp.Children) == 1 {
		kids = "child"
	}
	return fmt.Sprintf("%s; %d %s", line, len(resp.Children), kids)
}
