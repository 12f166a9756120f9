package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	goyaml "go.yaml.in/yaml/v3"
	kjson "sigs.k8s.io/json"

	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/manifest"
)

// input is one object as JSON, which typed decoding reads as the API server
// would, and as a YAML node, which locates lines and keeps literal numbers.
type input struct {
	node *goyaml.Node
	json []byte
}

// readInput refuses anything but a mapping, repeated keys, and values JSON
// cannot hold (.inf, a key that is not a string), with their line.
func readInput(n *goyaml.Node) (*input, error) {
	n = manifest.Deref(n)
	if n.Kind != goyaml.MappingNode {
		return nil, atLine(n.Line, "not a Kubernetes object: a YAML mapping is expected")
	}
	var v any
	if err := n.Decode(&v); err != nil {
		var te *goyaml.TypeError
		if errors.As(err, &te) {
			return nil, errors.New(strings.Join(te.Errors, "; ")) // "line 11: mapping key "key" already defined at line 10"
		}
		return nil, err
	}
	js, err := json.Marshal(v)
	if err != nil {
		return nil, atLine(n.Line, fmt.Sprintf("has a value JSON cannot hold (%v)", err))
	}
	return &input{node: n, json: js}, nil
}

// jsonWords names the kinds of JSON value in a type error as YAML has them.
var jsonWords = strings.NewReplacer("array", "a list", "object", "a mapping", "bool", "a boolean", "string", "a string", "number", "a number")

// typeWords names the Go type a field wants: a struct of this package is a
// mapping to the reader; Kubernetes types keep their API names.
func typeWords(goType string) string {
	switch goType = strings.TrimPrefix(goType, "*"); {
	case goType == "string", goType == "bool":
		return jsonWords.Replace(goType)
	case strings.HasPrefix(goType, "int"):
		return "an integer"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "struct"), strings.HasPrefix(goType, "migrate."):
		return "a mapping"
	}
	return goType
}

// decode reads the object into v strictly, naming each refused field's line.
func (o *input) decode(v any) error {
	strict, err := kjson.UnmarshalStrict(o.json, v)
	if path, t, value, ok := decode.TypeMismatch(err); ok && path != "" {
		want, got := typeWords(t.String()), jsonWords.Replace(value)
		if want == "a string" && got != "a mapping" && got != "a list" {
			got += " (quote it)"
		}
		return o.errAt(path, "must be %s, got %s", want, got)
	}
	if err != nil {
		return err
	}
	msgs := make([]string, len(strict))
	for i, e := range strict {
		var fe interface{ FieldPath() string }
		if errors.As(e, &fe) {
			line, _ := manifest.Find(o.node, fe.FieldPath())
			e = atLine(line, e.Error())
		}
		msgs[i] = e.Error()
	}
	if len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// literal is the number or string v, decoded from path, as written: JSON
// reads "12.50" as 12.5. ok is false when the field is absent.
func (o *input) literal(path string, v any) (text string, ok bool, err error) {
	switch v.(type) {
	case nil:
		return "", false, nil
	case string, int64, float64:
	default:
		return "", false, o.errAt(path, "must be a number or a string")
	}
	_, n := manifest.Find(o.node, path)
	if n == nil || n.Kind != goyaml.ScalarNode {
		return "", false, o.errAt(path, "must be written in place, not through a YAML merge key")
	}
	return n.Value, true, nil
}

// errAt refuses the field at path: "spec.x: must be a string (line 7)".
func (o *input) errAt(path, format string, args ...any) error {
	line, _ := manifest.Find(o.node, path)
	return atLine(line, path+": "+fmt.Sprintf(format, args...))
}

// atLine is msg at a 1-based line of the input, 0 when unknown.
func atLine(line int, msg string) error {
	if line > 0 {
		return fmt.Errorf("%s (line %d)", msg, line)
	}
	return errors.New(msg)
}
