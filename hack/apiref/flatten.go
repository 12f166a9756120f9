package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// maxDepth bounds how deep a schema may nest, so that a cyclic or runaway schema fails instead of recursing.
const maxDepth = 32

// field is one field path of a kind, in kubectl explain --recursive order: each object's properties by name,
// each followed by its own fields. Path "" is the object itself; an array's item fields sit under "name[]".
type field struct {
	path     string
	s        *schema
	required bool
	rules    []rule
}

// rule is a CEL rule as shown on a field. A rule whose fieldPath names another field is shown on that field, with
// on naming where it is declared (its self); label says when it applies to each item or value of the field.
type rule struct {
	validation
	on    string
	label string
}

// pendingRule is a rule found while walking the schema, shown once every field path is known.
type pendingRule struct {
	owner    *field
	nodePath string
	label    string
	v        validation
}

// flatten lists every field of root, the root itself first, with the rules that apply to each.
func flatten(root *schema) ([]*field, error) {
	fields := []*field{{s: root}}
	var pending []pendingRule
	if err := walk(root, "", 0, &fields, &pending); err != nil {
		return nil, err
	}
	pending = append(pending, rulesOf(fields[0], "")...)
	attach(fields, pending)
	return fields, nil
}

func walk(s *schema, prefix string, depth int, fields *[]*field, pending *[]pendingRule) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: schema nests deeper than %d levels", prefix, maxDepth)
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		child := s.Properties[name]
		if child == nil {
			return fmt.Errorf("%s: property %q has no schema", prefix, name)
		}
		f := &field{path: join(prefix, name), s: child, required: slices.Contains(s.Required, name)}
		*fields = append(*fields, f)
		*pending = append(*pending, rulesOf(f, f.path)...)
		if err := walkChildren(f, depth, fields, pending); err != nil {
			return err
		}
	}
	return nil
}

// walkChildren lists the fields under f: its properties, those of its array items, or those of its map values.
func walkChildren(f *field, depth int, fields *[]*field, pending *[]pendingRule) error {
	s := f.s
	if err := walk(s, f.path, depth+1, fields, pending); err != nil {
		return err
	}
	if s.Items != nil {
		if err := walk(s.Items, f.path+"[]", depth+1, fields, pending); err != nil {
			return err
		}
	}
	if s.AdditionalProperties != nil {
		return walk(s.AdditionalProperties, f.path+".<key>", depth+1, fields, pending)
	}
	return nil
}

// rulesOf gathers the rules declared on f's schema and on its array items or map values.
func rulesOf(f *field, path string) []pendingRule {
	var out []pendingRule
	for _, v := range f.s.Validations {
		out = append(out, pendingRule{owner: f, nodePath: path, v: v})
	}
	if it := f.s.Items; it != nil {
		for _, v := range it.Validations {
			out = append(out, pendingRule{owner: f, nodePath: path + "[]", label: "each item", v: v})
		}
	}
	if ap := f.s.AdditionalProperties; ap != nil {
		for _, v := range ap.Validations {
			out = append(out, pendingRule{owner: f, nodePath: path + ".<key>", label: "each value", v: v})
		}
	}
	return out
}

// attach puts each rule on the field its fieldPath names, when that is a listed field, else on its owner.
func attach(fields []*field, pending []pendingRule) {
	byPath := make(map[string]*field, len(fields))
	for _, f := range fields {
		byPath[f.path] = f
	}
	for _, p := range pending {
		if p.v.FieldPath != "" {
			if target, ok := byPath[join(p.nodePath, strings.TrimPrefix(p.v.FieldPath, "."))]; ok {
				target.rules = append(target.rules, rule{validation: p.v, on: p.nodePath, label: p.label})
				continue
			}
		}
		p.owner.rules = append(p.owner.rules, rule{validation: p.v, label: p.label})
	}
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
