package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// budgetListKind is the kind kubectl get llmb -o yaml prints for one budget type.
const budgetListKind = api.Kind + "List"

// typeMeta is what every document is first read as, leniently, to learn its
// kind. Its name is in the message for a document that is not an object.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// List is a v1 List (or LLMCostBudgetList) as kubectl get -o yaml prints it.
type List struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ListMeta   `json:"metadata"`
	Items      []json.RawMessage `json:"items"`
}

// object is one document or List item being decoded.
type object struct {
	file   string
	node   *yaml.Node // locates lines; nil when the stream does not parse
	prefix string     // "items[2]." inside a List
	js     []byte
}

// at is the source of the field at path within the object.
func (o object) at(path string) Source {
	line, _ := Find(o.node, path)
	return Source{File: o.file, Line: line}
}

func (r *reader) readStream(file string, data []byte) {
	nodes := documentNodes(data)
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n := 0; ; {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			r.errs = append(r.errs, Error{Source: Source{File: file}, Message: fmt.Sprintf("document %d: %v", n+1, err)})
			return
		}
		o := object{file: file}
		if n < len(nodes) {
			o.node = nodes[n]
		}
		if o.js, err = sigsyaml.YAMLToJSONStrict(doc); err != nil {
			// The YAML parser counts lines from the document's start, hence its number.
			msg := strings.ReplaceAll(err.Error(), "\n ", "")
			r.errs = append(r.errs, Error{Source: o.at(""), Message: fmt.Sprintf("document %d: %s", n+1, msg)})
			return
		}
		if js := bytes.TrimSpace(o.js); len(js) == 0 || string(js) == "null" {
			continue
		}
		n++
		r.readObject(o)
	}
}

// documentNodes is the root of every document of a YAML stream that holds
// something, in order; nil when the stream does not parse, so that errors
// are still reported, without lines.
func documentNodes(data []byte) []*yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return docs
		} else if err != nil {
			return nil
		}
		if len(doc.Content) > 0 && (doc.Content[0].Kind != yaml.ScalarNode || doc.Content[0].Tag != "!!null") {
			docs = append(docs, doc.Content[0])
		}
	}
}

func (r *reader) fail(o object, path, object, format string, args ...any) {
	r.errs = append(r.errs, Error{Source: o.at(path), Object: object, Message: fmt.Sprintf(format, args...)})
}

func (r *reader) readObject(o object) {
	var tm typeMeta
	if err := json.Unmarshal(o.js, &tm); err != nil {
		r.fail(o, "", "", "not a Kubernetes object: %v", err)
		return
	}
	group, version := splitAPIVersion(tm.APIVersion)
	switch {
	case tm.APIVersion == "" || tm.Kind == "":
		r.fail(o, "", "", "not a Kubernetes object: apiVersion and kind are required")
	case tm.APIVersion == "v1" && tm.Kind == "List", tm.APIVersion == api.APIVersion && tm.Kind == budgetListKind:
		r.readList(o)
	case tm.APIVersion == api.APIVersion && tm.Kind == api.ClusterKind:
		r.set.ClusterBudgets = append(r.set.ClusterBudgets, Object{Source: o.at(""), Name: tm.Metadata.Name, JSON: o.js})
	case group == api.Group || strings.EqualFold(tm.Kind, api.Kind):
		if path, msg := wrongBudgetType(tm, group, version); msg != "" {
			r.fail(o, path, describe(tm), "%s", msg)
		} else {
			r.readBudget(o, describe(tm))
		}
	case tm.Kind == "ConfigMap" && tm.APIVersion == "v1":
		r.readConfigMap(o, describe(tm))
	case tm.Kind == "ConfigMap" && group == "":
		r.fail(o, "apiVersion", describe(tm), "ConfigMap is apiVersion v1, not %q", tm.APIVersion)
	default:
		r.set.Skipped = append(r.set.Skipped, Skipped{Source: o.at(""), APIVersion: tm.APIVersion, Kind: tm.Kind, Name: tm.Metadata.Name, JSON: o.js})
	}
}

// wrongBudgetType says what is wrong with an apiVersion and kind that look
// like an LLMCostBudget's, and at which field; "" when they are right.
func wrongBudgetType(tm typeMeta, group, version string) (path, msg string) {
	switch {
	case group != api.Group:
		return "kind", fmt.Sprintf("apiVersion %q is not llmbudget's: an LLMCostBudget is %s "+
			"(llmbudget migrate converts llm-cost-budget-operator and Kelos budgets)", tm.APIVersion, api.APIVersion)
	case version != api.Version:
		return "apiVersion", fmt.Sprintf("apiVersion %q is not served: LLMCostBudget is %s", tm.APIVersion, api.APIVersion)
	case tm.Kind != api.Kind:
		return "kind", fmt.Sprintf("kind %q is not served by %s: its only kind is %s (kinds are case-sensitive)", tm.Kind, api.APIVersion, api.Kind)
	}
	return "", ""
}

func splitAPIVersion(apiVersion string) (group, version string) {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return "", apiVersion
	}
	return group, version
}

// describe names an object as kubectl does: kind, then namespace/name.
func describe(tm typeMeta) string {
	name := tm.Metadata.Name
	if tm.Metadata.Namespace != "" {
		name = tm.Metadata.Namespace + "/" + name
	}
	if name == "" {
		return tm.Kind
	}
	return tm.Kind + " " + name
}

func (r *reader) readList(o object) {
	var l List
	if !r.decodeStrict(o, &l, "") {
		return
	}
	for i, item := range l.Items {
		prefix := fmt.Sprintf("items[%d]", i)
		_, node := Find(o.node, prefix)
		r.readObject(object{file: o.file, node: node, prefix: o.prefix + prefix + ".", js: item})
	}
}

// decodeStrict decodes o.js into v refusing unknown, wrongly-cased and
// duplicate fields, and records every problem. It reports whether v was
// decoded: a value of the wrong type stops decoding, an unknown field does not.
func (r *reader) decodeStrict(o object, v any, name string) bool {
	strict, err := kjson.UnmarshalStrict(o.js, v)
	if err != nil {
		path, msg := typeErrorMessage(err, reflect.TypeOf(v))
		r.fail(o, path, name, "%s%s", o.prefix, msg)
		return false
	}
	for _, e := range strict {
		path := ""
		var fe kjson.FieldError
		if errors.As(e, &fe) {
			path = fe.FieldPath()
		}
		r.fail(o, path, name, "%s", strictMessage(o.prefix, e, path))
	}
	return true
}

// strictMessage words a strict decoding error as kubectl does:
// unknown field "spec.limitUsd".
func strictMessage(prefix string, err error, path string) string {
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if path != "" && prefix != "" {
		msg = strings.Replace(msg, `"`+path+`"`, `"`+prefix+path+`"`, 1)
	}
	return msg
}

// typeErrorMessage turns a decoding error into "path: must be of type
// integer, got string", naming the field's path and its type in the API's
// terms (target is the type decoded into).
func typeErrorMessage(err error, target reflect.Type) (path, msg string) {
	path, _, got, ok := decode.TypeMismatch(err)
	if !ok || path == "" || strings.Contains(got, " ") { // "number 1e99" for an integer
		return "", strings.TrimPrefix(err.Error(), "json: ")
	}
	return path, fmt.Sprintf("%s: must be of type %s, got %s", path, schemaType(fieldType(target, path)), got)
}

// fieldType is the type of the field at a JSON path ("spec.period.startDay")
// of t, or nil when the path leaves t's structs.
func fieldType(t reflect.Type, path string) reflect.Type {
	for _, step := range strings.Split(path, ".") {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		next := t
		for i := range t.NumField() {
			if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag == step {
				next = t.Field(i).Type
				break
			}
		}
		if next == t {
			return nil
		}
		t = next
	}
	return t
}

// schemaType is the OpenAPI type a Go type is written as.
func schemaType(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[metav1.Time]() {
		return "string"
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	}
	return t.Kind().String()
}
