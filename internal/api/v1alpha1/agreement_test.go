package v1alpha1

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// schema is a node of a CRD's openAPIV3Schema, read as YAML gives it.
type schema = map[string]any

// The generated CRDs and the `validate` tags come from the same fields; this test keeps them saying the same: each
// tag has its twin in the schema node of its field (an enum, a bound, or a CEL rule with the tag's message), and a
// disagreement names the field, the tag and what the CRD says instead.
func TestEveryValidateTagAgreesWithTheCRDBesideIt(t *testing.T) {
	for _, file := range []string{"llmcostbudgets.llmbudget.dev.yaml", "clusterllmcostbudgets.llmbudget.dev.yaml"} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "crd", file))
			require.NoError(t, err)
			var crd schema
			require.NoError(t, yaml.Unmarshal(data, &crd))
			spec, _ := dig(crd, "spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec").(schema)
			require.NotNil(t, spec, "the CRD has a spec schema")
			checkTags(t, reflect.TypeFor[Spec](), spec, "spec")
		})
	}
}

// checkTags walks the fields of struct type typ beside their schema node.
func checkTags(t *testing.T, typ reflect.Type, node schema, path string) {
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		child, _ := dig(node, "properties", name).(schema)
		if child == nil {
			t.Errorf("%s.%s: the CRD has no property %s", path, name, name)
			continue
		}
		if tag := f.Tag.Get("validate"); tag != "" {
			checkTag(t, path+"."+name, tag, child)
		}
		switch ft := deref(f.Type); {
		case ft.Kind() == reflect.Struct && ft.PkgPath() == typ.PkgPath():
			checkTags(t, ft, child, path+"."+name)
		case ft.Kind() == reflect.Slice && deref(ft.Elem()).Kind() == reflect.Struct:
			items, _ := child["items"].(schema)
			checkTags(t, deref(ft.Elem()), items, path+"."+name+"[]")
		}
	}
}

// checkTag compares each rule of one field's tag with its twin in the field's schema node; after dive the rules
// are the items' (or a map's values'), and between keys and endkeys a map's keys', whose twin is the map's CEL.
func checkTag(t *testing.T, path, tag string, node schema) {
	target, keys := node, false
	for _, r := range strings.Split(tag, ",") {
		name, param, _ := strings.Cut(r, "=")
		switch name {
		case "omitempty", "omitnil", "required":
			continue
		case "dive":
			target, _ = node["items"].(schema)
			if target == nil {
				target, _ = node["additionalProperties"].(schema)
			}
			continue
		case "keys":
			keys = true
			continue
		case "endkeys":
			keys = false
			continue
		}
		at := target
		if keys {
			at = node
		}
		if what := disagreement(name, param, at); what != "" {
			t.Errorf("%s: the tag rule %s disagrees with the CRD, which has %s", path, r, what)
		}
	}
}

// disagreement is what the schema node says instead of rule name=param, or "" when it says the same.
func disagreement(name, param string, node schema) string {
	if r, ok := rules[name]; ok {
		for _, v := range ruleList(node) {
			msg, _ := v["message"].(string)
			expr, _ := v["messageExpression"].(string)
			if strings.Contains(msg, r.message) || strings.Contains(strings.ReplaceAll(expr, `\'`, `'`), r.message) {
				return ""
			}
		}
		return "no CEL rule with the message " + strconv.Quote(r.message)
	}
	var key string
	switch {
	case name == "oneof":
		got := node["enum"]
		if reflect.DeepEqual(toStrings(got), strings.Fields(param)) {
			return ""
		}
		return "enum " + strings.Join(toStrings(got), " ")
	case name == "min":
		key = "minimum"
	case name == "max" && node["type"] == "string":
		key = "maxLength"
	case name == "max" && node["type"] == "array":
		key = "maxItems"
	case name == "max" && node["type"] == "object":
		key = "maxProperties"
	case name == "max":
		key = "maximum"
	default:
		return "no twin of a tag this test does not know"
	}
	want, _ := strconv.ParseFloat(param, 64)
	if got, ok := node[key].(float64); ok && got == want {
		return ""
	}
	return key + " " + strings.TrimSpace(strings.ReplaceAll(strconv.Quote(toString(node[key])), `"`, ""))
}

func ruleList(node schema) []schema {
	list, _ := node["x-kubernetes-validations"].([]any)
	out := make([]schema, 0, len(list))
	for _, v := range list {
		if m, ok := v.(schema); ok {
			out = append(out, m)
		}
	}
	return out
}

func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(schema)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, s := range l {
		out = append(out, toString(s))
	}
	return out
}

func toString(v any) string {
	if v == nil {
		return "nothing"
	}
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s, _ := v.(string)
	return s
}
