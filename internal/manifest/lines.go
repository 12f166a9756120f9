package manifest

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Find walks path ("spec.costSource.key", "items[2].spec") down from n,
// following aliases. It returns the line of the field, or of the deepest
// field on the way when it is absent, and the field's value when present.
// YAML nodes serve only for lines and literal text: values are decoded from
// JSON, strictly.
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

// child returns the key and value of step in a mapping, or the item at an
// index step ("[2]") of a sequence (as both).
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

// deref follows a YAML alias to the node it stands for; an anchored node is
// never an alias itself, and decoding refuses cycles.
func deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n.Alias
	}
	return n
}
