package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	goyaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/manifest"
)

// The output is built as a YAML node tree so that comments sit next to the fields they explain, and the encoder,
// not string concatenation, decides how each value must be quoted.

// str is a string value; the encoder quotes it when it would read as something else ("true", "123").
func str(v string) *goyaml.Node {
	n := &goyaml.Node{Kind: goyaml.ScalarNode, Tag: "!!str", Value: v}
	if plainIn12Only(v) {
		n.Style = goyaml.DoubleQuotedStyle
	}
	return n
}

// plainIn12Only is whether v, written without quotes, is the string v to YAML 1.2 (so the encoder leaves it plain)
// but not to YAML 1.1, as kubectl and eval read it (sigs.k8s.io/yaml): "yes", "on", "y", "NO" are booleans there.
func plainIn12Only(v string) bool {
	var in12 any
	if goyaml.Unmarshal([]byte(v), &in12) != nil || in12 != v {
		return false
	}
	var in11 any
	return sigsyaml.Unmarshal([]byte(v), &in11) != nil || in11 != v
}

// usd is an exact decimal as a double-quoted string, as the API wants it.
func usd(v string) *goyaml.Node {
	return &goyaml.Node{Kind: goyaml.ScalarNode, Tag: "!!str", Value: v, Style: goyaml.DoubleQuotedStyle}
}

func integer(v int64) *goyaml.Node {
	return &goyaml.Node{Kind: goyaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v, 10)}
}

// object is a mapping under construction whose fields keep insertion order.
type object struct{ node *goyaml.Node }

func newObject() *object { return &object{node: &goyaml.Node{Kind: goyaml.MappingNode}} }

// set adds name: value under the comment lines head; the encoder starts each with "# ". No line is empty or holds
// a line break: names and selectors are validated first, and everything else is our own prose.
func (o *object) set(name string, value *goyaml.Node, head ...string) *object {
	k := str(name)
	k.HeadComment = strings.Join(head, "\n")
	o.node.Content = append(o.node.Content, k, value)
	return o
}

func note(n *goyaml.Node, text string) *goyaml.Node {
	n.LineComment = text
	return n
}

// budgetDocument builds the LLMCostBudget converted from the object md of type from, headed by a comment that
// says so and then by the lines head.
func budgetDocument(from string, md *metav1.ObjectMeta, spec *object, head ...string) *goyaml.Node {
	meta := newObject().set("name", str(md.Name))
	ref := md.Name
	if md.Namespace != "" {
		meta.set("namespace", str(md.Namespace))
		ref = md.Namespace + "/" + md.Name
	}
	if len(md.Labels) > 0 {
		meta.set("labels", pairs(md.Labels))
	}
	annotations := maps.Clone(md.Annotations)
	// It describes the old object: kubectl apply would diff against it.
	delete(annotations, "kubectl.kubernetes.io/last-applied-configuration")
	if len(annotations) > 0 {
		meta.set("annotations", pairs(annotations))
	}
	head = append([]string{"Converted by llmbudget migrate from " + from + " " + ref + "."}, head...)
	root := newObject()
	root.set("apiVersion", str(api.APIVersion), head...)
	root.set("kind", str(api.Kind))
	root.set("metadata", meta.node)
	root.set("spec", spec.node)
	return &goyaml.Node{Kind: goyaml.DocumentNode, Content: []*goyaml.Node{root.node}}
}

// pairs renders a string map in key order.
func pairs(m map[string]string) *goyaml.Node {
	n := &goyaml.Node{Kind: goyaml.MappingNode}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		n.Content = append(n.Content, str(k), str(m[k]))
	}
	return n
}

// render prints a converted budget and reads it back exactly as printed, as eval reads it: what migrate prints is
// what kubectl apply and the hook accept.
func render(doc *goyaml.Node) ([]byte, error) {
	var b bytes.Buffer
	e := goyaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := errors.Join(e.Encode(doc), e.Close()); err != nil {
		return nil, fmt.Errorf("encode the converted budget: %w", err)
	}
	var errs manifest.Errors
	if _, err := manifest.Read([]string{"-"}, bytes.NewReader(b.Bytes())); errors.As(err, &errs) {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Message
		}
		return nil, fmt.Errorf("the converted budget is not valid: %s", strings.Join(msgs, "; "))
	}
	// Held until every input converts: the buffer has grown past the document by up to its double.
	return bytes.Clone(b.Bytes()), nil
}
