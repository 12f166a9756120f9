package manifest

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// lineIndex maps field paths to the lines they are written on. It is used
// only for line numbers: values are decoded by sigs.k8s.io/yaml and json.
type lineIndex struct {
	node *yamlv3.Node // a document's root; nil when unknown
}

// documentLines parses data as a YAML stream and returns one index per
// document that holds something, in order. It returns nil when the stream
// does not parse, so that errors are still reported, without lines.
func documentLines(data []byte) []lineIndex {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var docs []lineIndex
	for {
		var doc yamlv3.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			return nil
		}
		if len(doc.Content) == 0 || isNull(doc.Content[0]) {
			continue
		}
		docs = append(docs, lineIndex{node: doc.Content[0]})
	}
}

func isNull(n *yamlv3.Node) bool {
	return n.Kind == yamlv3.ScalarNode && n.Tag == "!!null"
}

// line is the line of the field at path ("spec.thresholds[0].percent"), or of
// its nearest enclosing field that is written down.
func (x lineIndex) line(path string) int {
	n := x.node
	if n == nil {
		return 0
	}
	line := n.Line
	for _, step := range splitPath(path) {
		next, keyLine := child(n, step)
		if next == nil {
			if keyLine != 0 {
				line = keyLine
			}
			break
		}
		n, line = next, keyLine
	}
	return line
}

// sub is the index of the object at path, for the items of a List.
func (x lineIndex) sub(path string) lineIndex {
	n := x.node
	for _, step := range splitPath(path) {
		if n == nil {
			break
		}
		n, _ = child(n, step)
	}
	return lineIndex{node: n}
}

// child is the node under step (a key, or an index written "[2]") and the
// line where it is named (the key's line, or the item's).
func child(n *yamlv3.Node, step string) (*yamlv3.Node, int) {
	if i, ok := strings.CutPrefix(step, "["); ok {
		idx, err := strconv.Atoi(strings.TrimSuffix(i, "]"))
		if err != nil || n.Kind != yamlv3.SequenceNode || idx < 0 || idx >= len(n.Content) {
			return nil, 0
		}
		return n.Content[idx], n.Content[idx].Line
	}
	if n.Kind != yamlv3.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == step {
			return n.Content[i+1], n.Content[i].Line
		}
	}
	return nil, 0
}

// splitPath turns "spec.thresholds[0].percent" into spec, thresholds, [0], percent.
func splitPath(path string) []string {
	var steps []string
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			i := strings.IndexByte(part[1:], '[') + 1
			if i == 0 {
				steps = append(steps, part)
				break
			}
			steps = append(steps, part[:i])
			part = part[i:]
		}
	}
	return steps
}
