package migrate

import (
	goyaml "go.yaml.in/yaml/v3"

	"github.com/llmbudget/llmbudget/internal/manifest"
)

// literal is the number or string v, decoded from path, as written: JSON
// reads "12.50" as 12.5. ok is false when the field is absent.
func (in *input) literal(path string, v any) (text string, ok bool, err error) {
	switch v.(type) {
	case nil:
		return "", false, nil
	case string, int64, float64:
	default:
		return "", false, in.errAt(path, "must be a number or a string")
	}
	_, n := manifest.Find(in.Node, path)
	if n == nil || n.Kind != goyaml.ScalarNode {
		return "", false, in.errAt(path, "must be written in place, not through a YAML merge key")
	}
	return n.Value, true, nil
}
