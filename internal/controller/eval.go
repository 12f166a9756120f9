// The offline evaluation behind llmbudget eval: the budget controllers' sync answers for budgets read from files
// (package manifest) instead of from Metacontroller, with what the files say in place of the related objects.

package controller

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/manifest"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

// EvalRelated is what Metacontroller would relate to the budgets of set: its ConfigMaps, Namespaces (for
// cluster budgets) and Kelos TaskRecords (every one, as the hook gets them, matched against each budget's
// selector). hints name the spend ConfigMaps a budget reads that set lacks.
func EvalRelated(set manifest.Set) (related metacontroller.ObjectMap, hints []string, err error) {
	related = metacontroller.ObjectMap{
		metacontroller.ConfigMapGroup: {}, metacontroller.NamespaceGroup: {}, source.TaskRecordGroup: {},
	}
	for _, cm := range set.ConfigMaps {
		related[metacontroller.ConfigMapGroup][metacontroller.Key(cm.Namespace, cm.Name)] = metacontroller.Raw(cm.JSON)
	}
	for _, o := range set.Skipped {
		switch {
		case o.Kind == "Namespace" && o.APIVersion == "v1":
			related[metacontroller.NamespaceGroup][o.Name] = metacontroller.Raw(o.JSON)
		case o.Kind == "TaskRecord" && o.APIVersion == source.KelosAPIVersion:
			ns, raw, err := inNamespace(o)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: TaskRecord %s: %w", o.Source, o.Name, err)
			}
			related[source.TaskRecordGroup][metacontroller.Key(ns, o.Name)] = metacontroller.Raw(raw)
		}
	}
	for _, b := range set.Budgets {
		key := metacontroller.Key(b.Namespace, b.Spec.CostSource.ConfigMapName)
		if _, ok := related[metacontroller.ConfigMapGroup][key]; !ok && b.Spec.CostSource.Format != api.TaskRecords {
			hints = append(hints, fmt.Sprintf("%s: %s/%s reads ConfigMap %s/%s (spec.costSource.configMapName), "+
				"which was not given; add it with -f, for example from kubectl get configmap -n %s %s -o yaml",
				b.Source, b.Namespace, b.Name, b.Namespace, b.Spec.CostSource.ConfigMapName,
				b.Namespace, b.Spec.CostSource.ConfigMapName))
		}
	}
	return related, hints, nil
}

// Eval is the sync hook's answer for the budget p (an LLMCostBudget or a ClusterLLMCostBudget) at now; an error
// names p's file and name.
func Eval(p manifest.Object, related metacontroller.ObjectMap, now time.Time) (Evaluation, error) {
	cluster := p.Kind == api.ClusterKind
	name := p.Namespace + "/" + p.Name
	if cluster {
		name = api.ClusterKind + " " + p.Name
	}
	ev, err := evalSync(p.JSON, related, now, name, cluster)
	if err != nil {
		return ev, fmt.Errorf("%s: %s: %w", p.Source, strings.TrimPrefix(name, api.ClusterKind+" "), err)
	}
	return ev, nil
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

// SkippedNote names the kinds read and skipped, so that a wrong file is noticed.
func SkippedNote(skipped []manifest.Object) string {
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

// withCreation gives a budget read from a file, which no API server has created, the creationTimestamp now: the hook
// dates what a budget's first sync finds by its creation, and eval answers as that first sync would.
func withCreation(parent json.RawMessage, now time.Time) (json.RawMessage, error) {
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

// Evaluation is a budget's sync answer as eval prints it.
type Evaluation struct {
	Name    string    // namespace/name, or ClusterLLMCostBudget and its name
	Doc     []byte    // YAML under a headline that sums it up for a person
	Summary string    // one line: name, state, spend/limit
	State   api.State // the status' state
}

// evalSync is the sync hook's answer for the budget called name.
func evalSync(parent json.RawMessage, related metacontroller.ObjectMap, now time.Time, name string,
	cluster bool) (Evaluation, error) {
	var c metacontroller.CompositeHook = Budget{}
	if cluster {
		c = ClusterBudget{}
	}
	parent, err := withCreation(parent, now)
	if err != nil {
		return Evaluation{}, err
	}
	req := metacontroller.CompositeRequest{Parent: parent, Related: related, Children: metacontroller.ObjectMap{}}
	resp, sum, err := c.Sync(req, now)
	if err != nil {
		return Evaluation{}, err
	}
	st, _ := resp.Status.(api.Status)
	head := fmt.Sprintf("# %s is %s", name, st.State)
	if over := modelsOver(st); over != "" {
		head += " (" + over + ")"
	}
	ev := Evaluation{Name: name, State: st.State, Summary: fmt.Sprintf("%s %s %s/%s USD", name, st.State,
		cmp.Or(st.ObservedSpendUSD, "?"), cmp.Or(st.LimitUSD, "-"))}
	if st.PercentUsed != nil {
		ev.Summary += fmt.Sprintf(" (%d%%)", *st.PercentUsed)
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
	ev.Doc = []byte(head)
	for _, doc := range docs {
		y, err := yaml.Marshal(doc)
		if err != nil {
			return Evaluation{}, err
		}
		ev.Doc = append(ev.Doc, y...)
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
