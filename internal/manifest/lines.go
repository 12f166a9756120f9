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
	for _, seg := range strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' || r == ']' }) {
		key, value := child(Deref(n), seg)
		if value == nil {
			return line, nil
		}
		line, n = key.Line, value
	}
	return line, Deref(n)
}

// child returns the key and value of seg in a mapping, or the item at index
// seg of a sequence (as both).
func child(n *yaml.Node, seg string) (key, value *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				return n.Content[i], n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i], n.Content[i]
		}
	}
	return nil, nil
}

// Deref follows a YAML alias to the node it stands for; an anchored node is
// never an alias itself, and decoding refuses cycles.
func Deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n.Alias
	}
	return n
}
