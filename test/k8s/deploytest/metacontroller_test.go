package deploytest_test

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// metacontrollerSchemas are the openAPIV3Schemas of Metacontroller's CRDs by kind, from the
// copy of Metacontroller v4.17.2's CRDs in test/metacontroller.
func metacontrollerSchemas(t testing.TB) map[string]map[string]any {
	t.Helper()
	crds, err := cluster.MetacontrollerCRDs()
	require.NoError(t, err)
	data, err := os.ReadFile(crds)
	require.NoError(t, err)
	out := map[string]map[string]any{}
	for _, crd := range decodeObjects(t, string(data)) {
		kind, _ := dig(crd, "spec", "names", "kind")
		schema, ok := dig(crd, "spec", "versions", 0, "schema", "openAPIV3Schema")
		require.True(t, ok)
		out[kind.(string)] = schema.(map[string]any)
	}
	require.Contains(t, out, "CompositeController")
	require.Contains(t, out, "DecoratorController")
	return out
}

// schemaProblems checks v against a structural OpenAPI schema as the API server's strict
// field validation would: unknown fields, types, required fields and enums.
func schemaProblems(schema map[string]any, v any, path string) []string {
	var out []string
	if schema["x-kubernetes-int-or-string"] == true {
		switch v.(type) {
		case string, float64:
			return nil
		}
		return []string{fmt.Sprintf("%s: want int or string, got %T", path, v)}
	}
	switch schema["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %T", path, v)}
		}
		props, _ := schema["properties"].(map[string]any)
		additional, _ := schema["additionalProperties"].(map[string]any)
		free := schema["x-kubernetes-preserve-unknown-fields"] == true || (path == ".metadata" && props == nil)
		for _, k := range sortedKeys(m) {
			switch sub, declared := props[k].(map[string]any); {
			case declared:
				out = append(out, schemaProblems(sub, m[k], path+"."+k)...)
			case additional != nil:
				out = append(out, schemaProblems(additional, m[k], path+"."+k)...)
			case !free:
				out = append(out, fmt.Sprintf("%s.%s: unknown field", path, k))
			}
		}
		required, _ := schema["required"].([]any)
		for _, r := range required {
			if _, ok := m[r.(string)]; !ok {
				out = append(out, fmt.Sprintf("%s.%s: required", path, r))
			}
		}
	case "array":
		l, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an array, got %T", path, v)}
		}
		items, _ := schema["items"].(map[string]any)
		for i, el := range l {
			out = append(out, schemaProblems(items, el, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case "string":
		s, ok := v.(string)
		if !ok {
			return []string{fmt.Sprintf("%s: want a string, got %T", path, v)}
		}
		if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, any(s)) {
			out = append(out, fmt.Sprintf("%s: %q is not one of %v", path, s, enum))
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			out = append(out, fmt.Sprintf("%s: want an integer, got %v", path, v))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			out = append(out, fmt.Sprintf("%s: want a boolean, got %T", path, v))
		}
	}
	return out
}

func TestControllersMatchMetacontrollersSchemaInEveryVariant(t *testing.T) {
	schemas := metacontrollerSchemas(t)
	variants := map[string][]object{
		"kustomize deploy/":                   kustomize(t, "deploy"),
		"kustomize deploy/overlays/secure":    kustomize(t, "deploy/overlays/secure"),
		"kustomize deploy/overlays/all-kinds": kustomize(t, "deploy/overlays/all-kinds"),
		"helm defaults":                       renderChart(t, nil),
		"helm tls and token":                  renderChart(t, secureValues),
		"helm inline CA bundle": renderChart(t, map[string]any{"tls": map[string]any{
			"enabled": true, "caBundle": "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"}}),
	}
	for _, name := range sortedKeys(variants) {
		t.Run(name, func(t *testing.T) {
			controllers := 0
			for _, o := range variants[name] {
				schema, ok := schemas[o["kind"].(string)]
				if !ok {
					continue
				}
				controllers++
				// Round-trip through JSON numbers, as the API server sees the object.
				data, err := yaml.Marshal(o)
				require.NoError(t, err)
				var v any
				require.NoError(t, yaml.Unmarshal(data, &v))
				problems := schemaProblems(schema, v, "")
				sort.Strings(problems)
				assert.Empty(t, problems, "%s", key(o))
			}
			assert.Equal(t, 6, controllers, "two CompositeControllers and four DecoratorControllers")
		})
	}
}

func TestSchemaCheckRefusesWhatTheAPIServerWould(t *testing.T) {
	schema := metacontrollerSchemas(t)["CompositeController"]
	base := func(webhook map[string]any) map[string]any {
		return map[string]any{
			"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
			"metadata": map[string]any{"name": "x"},
			"spec": map[string]any{
				"parentResource": map[string]any{"apiVersion": "llmbudget.dev/v1alpha1", "resource": "llmcostbudgets"},
				"hooks":          map[string]any{"sync": map[string]any{"webhook": webhook}},
			},
		}
	}
	cases := map[string]struct {
		webhook map[string]any
		problem string
	}{
		"caBundle as a PEM string (the admission-webhook shape) is refused": {
			map[string]any{"url": "https://x", "caBundle": "PEM"},
			".spec.hooks.sync.webhook.caBundle: want an object, got string",
		},
		"authorization without its secretRef is refused": {
			map[string]any{"url": "https://x", "authorization": map[string]any{"type": "Bearer"}},
			".spec.hooks.sync.webhook.authorization.secretRef: required",
		},
		"a misspelt field is refused": {
			map[string]any{"url": "https://x", "cabundle": map[string]any{}}, ".spec.hooks.sync.webhook.cabundle: unknown field",
		},
		"a secretRef without its key is refused": {
			map[string]any{"url": "https://x", "authorization": map[string]any{
				"secretRef": map[string]any{"name": "a", "namespace": "b"},
			}},
			".spec.hooks.sync.webhook.authorization.secretRef.key: required",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Contains(t, schemaProblems(schema, base(tc.webhook), ""), tc.problem)
		})
	}
	assert.Empty(t, schemaProblems(schema, base(map[string]any{"url": "https://x"}), ""), "a plain webhook is accepted")
}
