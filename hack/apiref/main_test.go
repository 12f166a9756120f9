package main

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheCommittedReferenceMatchesTheCRDs(t *testing.T) {
	want, err := generate("../../deploy/crd")
	require.NoError(t, err)
	got, err := os.ReadFile("../../docs/reference.md")
	require.NoError(t, err)
	if string(got) != string(want) {
		t.Fatal("docs/reference.md is stale: run make generate")
	}
}

// tinyCRD wraps a schema's properties (indented for openAPIV3Schema.properties) in a CRD of kind Tiny.
func tinyCRD(properties string) []byte {
	return []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
spec:
  group: example.dev
  scope: Namespaced
  names: {kind: Tiny, shortNames: [tn]}
  versions:
  - name: v1
    served: true
    schema:
      openAPIV3Schema:
        description: Tiny is a test kind.
        type: object
        properties:
` + properties)
}

func renderTiny(t *testing.T, properties string) (string, error) {
	t.Helper()
	c, schemas, err := parseCRD("tiny.yaml", tinyCRD(properties))
	if err != nil {
		return "", err
	}
	md, err := render([]document{{c: c, schemas: schemas}})
	return string(md), err
}

func TestTheRendererShowsEachPropertyOfAField(t *testing.T) {
	tests := []struct {
		name       string
		properties string
		want       []string
	}{{
		name: "a required field says so, an optional one too",
		properties: `
          spec:
            type: object
            required: [a]
            properties:
              a: {type: string, description: The a.}
              b: {type: string}`,
		want: []string{"#### `spec.a`\n\n`string` · required\n\nThe a.\n", "#### `spec.b`\n\n`string` · optional\n"},
	}, {
		name: "a default and an enum are shown as written, in the CRD's order",
		properties: `
          spec:
            type: object
            properties:
              mode: {type: string, default: Warn, enum: [Warn, Deny]}`,
		want: []string{"`string` · optional · default `Warn` · one of `Warn`, `Deny`\n"},
	}, {
		name: "bounds of numbers, lengths and counts are named",
		properties: `
          spec:
            type: object
            properties:
              n: {type: integer, format: int32, minimum: 1, maximum: 28}
              s: {type: string, minLength: 1, maxLength: 63, pattern: '^[a-z]+$'}
              l: {type: array, maxItems: 4, items: {type: string, maxLength: 8}}`,
		want: []string{
			"`integer (int32)` · optional · range 1–28\n",
			"`string` · optional · length 1–63 · pattern `^[a-z]+$`\n",
			"`[]string` · optional · items ≤ 4 · each item length ≤ 8\n",
		},
	}, {
		name: "a nested object's fields follow it, sorted by name",
		properties: `
          spec:
            type: object
            properties:
              z: {type: string}
              outer:
                type: object
                properties:
                  inner: {type: boolean}`,
		want: []string{"#### `spec.outer`\n\n`object` · optional\n\n#### `spec.outer.inner`\n\n`boolean`", "#### `spec.z`"},
	}, {
		name: "the fields of an array's objects sit under name[]",
		properties: `
          spec:
            type: object
            properties:
              items:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [model]
                items:
                  type: object
                  required: [model]
                  properties:
                    model: {type: string}`,
		want: []string{
			"#### `spec.items`\n\n`[]object` · optional · list map keyed by `model`\n",
			"#### `spec.items[].model`\n\n`string` · required\n",
		},
	}, {
		name: "a CEL rule is shown with its message on the field that declares it",
		properties: `
          spec:
            type: object
            properties:
              key:
                type: string
                x-kubernetes-validations:
                - rule: self != '..'
                  message: key must not be <dots>`,
		want: []string{"Validation:\n\n- `self != '..'`:\n  key must not be &lt;dots>\n"},
	}, {
		name: "a CEL rule with a fieldPath is shown on the field it names",
		properties: `
          spec:
            type: object
            x-kubernetes-validations:
            - rule: has(self.a)
              fieldPath: .a
              reason: FieldValueRequired
              messageExpression: "'a is required'"
            properties:
              a: {type: string}`,
		want: []string{"#### `spec.a`\n\n`string` · optional\n\nValidation:\n\n- `has(self.a)`:\n" +
			"  message `'a is required'`\n  (self is `spec`; reason `FieldValueRequired`)\n"},
	}, {
		name: "apiVersion, kind and metadata are left to kubectl explain",
		properties: `
          apiVersion: {type: string}
          metadata: {type: object}
          status: {type: object, properties: {state: {type: string}}}`,
		want: []string{
			"## Tiny\n\n`example.dev/v1` · namespaced · short names `tn`\n\nTiny is a test kind.\n\n### status\n",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md, err := renderTiny(t, tt.properties)
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(md, header), "the header opens the reference")
			for _, w := range tt.want {
				assert.Contains(t, md, w)
			}
			assert.NotContains(t, md, "apiVersion")
		})
	}
}

func TestTheRendererRefusesASchemaItCannotShowInFull(t *testing.T) {
	tests := []struct {
		name       string
		properties string
		wantErr    string
	}{{
		name:       "a keyword it does not render",
		properties: "          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
		wantErr:    `unknown field "x-kubernetes-preserve-unknown-fields"`,
	}, {
		name:       "a schema nested deeper than maxDepth",
		properties: nested(maxDepth + 2),
		wantErr:    "schema nests deeper than 32 levels",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderTiny(t, tt.properties)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestALongRuleMessageIsWrappedAtWrapAt(t *testing.T) {
	got := wrap(strings.Repeat("word ", 40), "  ", wrapAt)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	require.Len(t, lines, 2)
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), wrapAt)
		assert.True(t, strings.HasPrefix(l, "  word"), "each line is indented: %q", l)
	}
	assert.Equal(t, strings.Repeat("word ", 40), strings.Join(strings.Fields(got), " ")+" ", "no word is lost")
}

func TestTheGeneratorRefusesACRDOverMaxCRDBytes(t *testing.T) {
	path := t.TempDir() + "/big.yaml"
	require.NoError(t, os.WriteFile(path, make([]byte, maxCRDBytes+1), 0o600))
	_, err := readBounded(path)
	require.ErrorContains(t, err, "maxCRDBytes")
}

// nested is a spec with depth objects each holding the next as property o.
func nested(depth int) string {
	var b strings.Builder
	indent := "          "
	b.WriteString(indent + "spec:\n")
	for range depth {
		indent += "  "
		b.WriteString(indent + "type: object\n" + indent + "properties:\n" + indent + "  o:\n")
		indent += "  "
	}
	b.WriteString(indent + "  type: string\n")
	return b.String()
}
