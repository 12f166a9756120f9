package migrate

import (
	"fmt"
	"strconv"

	yaml "sigs.k8s.io/yaml/goyaml.v3"
)

// fieldError refuses one field of a source object; its message names the
// field by its path in the source ("spec.costSource.key").
type fieldError struct {
	msg  string
	line int // 1-based line in the source document, 0 when unknown
}

func (e *fieldError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("%s (line %d)", e.msg, e.line)
	}
	return e.msg
}

func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

// errAt refuses the field at path: "spec.x: must be a string".
func errAt(n *yaml.Node, path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	return &fieldError{msg: msg, line: lineOf(n)}
}

// errField is a refusal whose message already names the field.
func errField(n *yaml.Node, format string, args ...any) error {
	return &fieldError{msg: fmt.Sprintf(format, args...), line: lineOf(n)}
}

// join names a field below parent: "spec" + "costSource" is "spec.costSource".
func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// deref follows YAML aliases to the node they stand for. Anchors can form
// cycles, so the number of hops is bounded; every walk below is bounded by
// the fixed depth of the source APIs.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 8; i++ {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or an explicit null, which Kubernetes
// treats alike for optional fields.
func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		case "!!timestamp":
			return "a timestamp"
		}
		return "a value tagged " + n.ShortTag()
	case yaml.AliasNode:
		return "an alias cycle"
	}
	return "an empty node"
}

// mapping is a YAML mapping whose keys are plain strings, in source order.
type mapping struct {
	path  string
	keys  []string
	key   map[string]*yaml.Node
	value map[string]*yaml.Node
}

// asMapping reads n as a mapping; null reads as an empty one. Keys must be
// strings and unique: YAML allows duplicates to parse, Kubernetes does not.
func asMapping(n *yaml.Node, path string) (*mapping, error) {
	m := &mapping{path: path, key: map[string]*yaml.Node{}, value: map[string]*yaml.Node{}}
	n = deref(n)
	if isNull(n) {
		return m, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, errAt(n, path, "must be a mapping, got %s", describe(n))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" {
			return nil, errAt(n.Content[i], path, "has a key that is not a string")
		}
		if k.ShortTag() == "!!merge" {
			return nil, errAt(k, path, "uses a YAML merge key (<<), which Kubernetes does not accept")
		}
		if _, dup := m.key[k.Value]; dup {
			return nil, errField(k, "duplicate field %q", join(path, k.Value))
		}
		m.keys = append(m.keys, k.Value)
		m.key[k.Value] = k
		m.value[k.Value] = v
	}
	return m, nil
}

// allow refuses the first key, in source order, that is not one of names.
func (m *mapping) allow(names ...string) error {
	for _, k := range m.keys {
		known := false
		for _, n := range names {
			if k == n {
				known = true
				break
			}
		}
		if !known {
			return errField(m.key[k], "unknown field %q", join(m.path, k))
		}
	}
	return nil
}

// get returns the value of name, or nil when it is absent or null.
func (m *mapping) get(name string) *yaml.Node {
	v := deref(m.value[name])
	if isNull(v) {
		return nil
	}
	return v
}

func (m *mapping) child(name string) string { return join(m.path, name) }

// optString reads an optional string field.
func (m *mapping) optString(name string) (string, bool, error) {
	n := m.get(name)
	if n == nil {
		return "", false, nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return "", false, errAt(n, m.child(name), "must be a string, got %s", describe(n))
	}
	return n.Value, true, nil
}

// reqString reads a required string field.
func (m *mapping) reqString(name string) (string, error) {
	s, ok, err := m.optString(name)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errAt(m.key[name], m.child(name), "is required")
	}
	return s, nil
}

// optInt reads an optional integer field as its literal decimal text, so
// 1_000 or 0x10, which YAML may resolve as numbers but JSON has no form for,
// are refused rather than reinterpreted.
func (m *mapping) optInt(name string) (int64, bool, error) {
	n := m.get(name)
	if n == nil {
		return 0, false, nil
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, false, errAt(n, m.child(name), "must be an integer, got %s", describe(n))
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, false, errAt(n, m.child(name), "%q is not a decimal integer that fits in 64 bits", n.Value)
	}
	return v, true, nil
}

// optNumberText reads an optional field that holds a number either as a
// YAML number or as a string, and returns its literal text: the value never
// passes through float64.
func (m *mapping) optNumberText(name string) (string, *yaml.Node, error) {
	n := m.get(name)
	if n == nil {
		return "", nil, nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", nil, errAt(n, m.child(name), "must be a number or a string, got %s", describe(n))
	}
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float":
		return n.Value, n, nil
	}
	return "", nil, errAt(n, m.child(name), "must be a number or a string, got %s", describe(n))
}

// stringMap reads labels, annotations or matchLabels: string to string.
func (m *mapping) stringMap(name string) (*mapping, error) {
	sm, err := asMapping(m.value[name], m.child(name))
	if err != nil {
		return nil, err
	}
	for _, k := range sm.keys {
		v := deref(sm.value[k])
		if v == nil || v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
			got := "null"
			if v != nil {
				got = describe(v)
			}
			return nil, errAt(sm.key[k], sm.child(k), "must be a string, got %s (quote it)", got)
		}
	}
	return sm, nil
}

// list reads an optional sequence field.
func (m *mapping) list(name string) ([]*yaml.Node, error) {
	n := m.get(name)
	if n == nil {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, errAt(n, m.child(name), "must be a list, got %s", describe(n))
	}
	return n.Content, nil
}

// stringList reads an optional list of strings.
func (m *mapping) stringList(name string) ([]string, error) {
	items, err := m.list(name)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		it = deref(it)
		if it == nil || it.Kind != yaml.ScalarNode || it.ShortTag() != "!!str" {
			got := "null"
			if it != nil {
				got = describe(it)
			}
			return nil, errAt(it, fmt.Sprintf("%s[%d]", m.child(name), i), "must be a string, got %s", got)
		}
		out = append(out, it.Value)
	}
	return out, nil
}

// eachMapping reads an optional list of mappings, each allowed only names.
func (m *mapping) eachMapping(name string, names ...string) ([]*mapping, error) {
	items, err := m.list(name)
	if err != nil {
		return nil, err
	}
	out := make([]*mapping, 0, len(items))
	for i, it := range items {
		im, err := asMapping(it, fmt.Sprintf("%s[%d]", m.child(name), i))
		if err != nil {
			return nil, err
		}
		if err := im.allow(names...); err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	return out, nil
}
