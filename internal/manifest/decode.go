package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// Doc is one object of a YAML or JSON stream: a document, or an item of a List in one. Its values are decoded from
// JSON, as kubectl reads YAML; its YAML node serves only for lines and literal text.
type Doc struct {
	File   string
	Node   *yaml.Node // nil when unknown
	Prefix string     // "items[2]." for an item of a List
	JSON   []byte
}

// At is where the field at path ("spec.costSource.key") is written, or its nearest enclosing field when absent.
func (d Doc) At(path string) Source {
	line, _ := Find(d.Node, path)
	return Source{File: d.File, Line: line}
}

// Errorf is a problem of the object named object, at the field at path.
func (d Doc) Errorf(path, object, format string, args ...any) Error {
	return Error{Source: d.At(path), Object: object, Message: fmt.Sprintf(format, args...)}
}

// Docs returns the non-empty documents of a stream up to the first one JSON cannot represent (a repeated key,
// .inf), and the error that stopped it there; a stream that is not YAML yields no documents.
func Docs(file string, data []byte) ([]Doc, *Error) {
	nodes, err := documentNodes(data)
	if err != nil {
		return nil, &Error{Source: Source{File: file}, Message: "not valid YAML: " + err.Error()}
	}
	var docs []Doc
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		text, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		d := Doc{File: file}
		if len(docs) < len(nodes) {
			d.Node = nodes[len(docs)]
		}
		if err == nil {
			d.JSON, err = sigsyaml.YAMLToJSONStrict(text)
		}
		if err != nil {
			// The YAML parser counts lines from the document's start, hence its number.
			e := d.Errorf("", "", "document %d: %s", len(docs)+1, strings.ReplaceAll(err.Error(), "\n ", ""))
			return docs, &e
		}
		if js := bytes.TrimSpace(d.JSON); len(js) > 0 && string(js) != "null" {
			docs = append(docs, d)
		}
	}
}

// documentNodes returns the root node of every non-empty document, the documents that Docs keeps.
func documentNodes(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return docs, nil
		} else if err != nil {
			return nil, err
		}
		if len(doc.Content) > 0 && (doc.Content[0].Kind != yaml.ScalarNode || doc.Content[0].Tag != "!!null") {
			docs = append(docs, doc.Content[0])
		}
	}
}

// Head is what an object says of its type and name.
type Head struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// Head reads d's type and name leniently, to name it in messages (strict decoding says what is wrong with it);
// ok is false when d is not an object.
func (d Doc) Head() (h Head, ok bool) {
	if !bytes.HasPrefix(bytes.TrimSpace(d.JSON), []byte("{")) {
		return h, false
	}
	_ = decode.Lenient(d.JSON, &h, "")
	return h, true
}

// IsList is whether h is a kubectl List (or an LLMCostBudgetList).
func (h Head) IsList() bool {
	return h.APIVersion == "v1" && h.Kind == "List" || h.APIVersion == api.APIVersion && h.Kind == api.Kind+"List"
}

// Name names the object as kubectl does, kind then namespace/name, on one line however odd the input is.
func (h Head) Name() string {
	name := h.Metadata.Name
	if h.Metadata.Namespace != "" && name != "" {
		name = h.Metadata.Namespace + "/" + name
	}
	return strings.TrimSpace(printable(h.Kind) + " " + printable(name))
}

// Type is "apiVersion kind", on one line however odd the input is.
func (h Head) Type() string {
	return strings.TrimSpace(printable(h.APIVersion) + " " + printable(h.Kind))
}

func printable(s string) string {
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// Items decodes d as a List, strictly, and returns its items.
func (d Doc) Items(object string) ([]Doc, Errors) {
	var l metav1.List
	errs, ok := d.Decode(&l, object)
	if !ok {
		return nil, errs
	}
	items := make([]Doc, len(l.Items))
	for i, item := range l.Items {
		path := fmt.Sprintf("items[%d]", i)
		_, node := Find(d.Node, path)
		items[i] = Doc{File: d.File, Node: node, Prefix: d.Prefix + path + ".", JSON: item.Raw}
	}
	return items, errs
}

// Decode decodes d into v as kubectl apply's strict field validation does: an unknown, wrongly-cased or repeated
// field is a problem, each at its line and named by its path ("unknown field "spec.limitUsd""). ok is whether v
// was decoded: a value of the wrong type stops decoding, an unknown field does not.
func (d Doc) Decode(v any, object string) (errs Errors, ok bool) {
	strict, err := kjson.UnmarshalStrict(d.JSON, v)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		path, want, got, ok := decode.TypeMismatch(err)
		if ok && path != "" { // worded as the API server words it
			msg = fmt.Sprintf("%s: must be of type %s, got %s", path, want, got)
			if want == "string" && (got == "number" || got == "bool") {
				msg += " (quote it)"
			}
		}
		return Errors{d.Errorf(path, object, "%s%s", d.Prefix, msg)}, false
	}
	for _, e := range strict {
		path := ""
		if fe, ok := e.(kjson.FieldError); ok {
			path = fe.FieldPath()
			fe.SetFieldPath(d.Prefix + path)
		}
		errs = append(errs, d.Errorf(path, object, "%v", e))
	}
	return errs, true
}

// Find walks path ("spec.costSource.key", "items[2].spec") down from n, following aliases. It returns the line of
// the field, or of the deepest field on the way when it is absent, and the field's value when present.
func Find(n *yaml.Node, path string) (int, *yaml.Node) {
	if n == nil {
		return 0, nil
	}
	line := n.Line
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			// A step is a key, or an index written "[2]" (a key may hold "]").
			end := strings.IndexByte(part[1:], '[') + 1
			if end == 0 {
				end = len(part)
			}
			key, value := child(deref(n), part[:end])
			if value == nil {
				return line, nil
			}
			line, n, part = key.Line, value, part[end:]
		}
	}
	return line, deref(n)
}

// child is the key and value of step in a mapping, or the item at "[2]" of a sequence (as both).
func child(n *yaml.Node, step string) (key, value *yaml.Node) {
	if i, ok := strings.CutPrefix(step, "["); ok {
		idx, err := strconv.Atoi(strings.TrimSuffix(i, "]"))
		if err != nil || n.Kind != yaml.SequenceNode || idx < 0 || idx >= len(n.Content) {
			return nil, nil
		}
		return n.Content[idx], n.Content[idx]
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == step {
				return n.Content[i], n.Content[i+1]
			}
		}
	}
	return nil, nil
}

// deref follows a YAML alias to its node; an anchored node is never an alias itself, and decoding refuses cycles.
func deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n.Alias
	}
	return n
}
