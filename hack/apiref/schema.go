package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// crd holds the parts of a CustomResourceDefinition the reference shows. The rest is ignored, but the schema is
// decoded strictly (schema): a keyword this program does not render fails the run instead of vanishing from the
// reference.
type crd struct {
	Spec struct {
		Group string `json:"group"`
		Scope string `json:"scope"`
		Names struct {
			Kind       string   `json:"kind"`
			ShortNames []string `json:"shortNames"`
			Categories []string `json:"categories"`
		} `json:"names"`
		Versions []version `json:"versions"`
	} `json:"spec"`
}

type version struct {
	Name    string   `json:"name"`
	Served  bool     `json:"served"`
	Columns []column `json:"additionalPrinterColumns"`
	Schema  struct {
		OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema"`
	} `json:"schema"`
}

// column is one of kubectl get's columns.
type column struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	JSONPath    string `json:"jsonPath"`
	Description string `json:"description"`
}

// schema is the subset of a structural OpenAPI v3 schema that controller-gen writes for these CRDs. Numbers,
// defaults and enum values stay raw JSON so that they are shown exactly as written.
type schema struct {
	Type                 string             `json:"type"`
	Format               string             `json:"format"`
	Description          string             `json:"description"`
	Properties           map[string]*schema `json:"properties"`
	Items                *schema            `json:"items"`
	AdditionalProperties *schema            `json:"additionalProperties"`
	Required             []string           `json:"required"`
	Default              json.RawMessage    `json:"default"`
	Enum                 []json.RawMessage  `json:"enum"`
	Minimum              json.RawMessage    `json:"minimum"`
	Maximum              json.RawMessage    `json:"maximum"`
	ExclusiveMinimum     bool               `json:"exclusiveMinimum"`
	ExclusiveMaximum     bool               `json:"exclusiveMaximum"`
	MinLength            json.RawMessage    `json:"minLength"`
	MaxLength            json.RawMessage    `json:"maxLength"`
	MinItems             json.RawMessage    `json:"minItems"`
	MaxItems             json.RawMessage    `json:"maxItems"`
	MinProperties        json.RawMessage    `json:"minProperties"`
	MaxProperties        json.RawMessage    `json:"maxProperties"`
	Pattern              string             `json:"pattern"`
	Nullable             bool               `json:"nullable"`
	ListType             string             `json:"x-kubernetes-list-type"`
	ListMapKeys          []string           `json:"x-kubernetes-list-map-keys"`
	MapType              string             `json:"x-kubernetes-map-type"`
	Validations          []validation       `json:"x-kubernetes-validations"`
}

// validation is a CEL rule of x-kubernetes-validations.
type validation struct {
	Rule              string `json:"rule"`
	Message           string `json:"message"`
	MessageExpression string `json:"messageExpression"`
	Reason            string `json:"reason"`
	FieldPath         string `json:"fieldPath"`
	OptionalOldSelf   bool   `json:"optionalOldSelf"`
}

// parseCRD decodes one CRD's YAML, and each served version's schema strictly.
func parseCRD(name string, data []byte) (*crd, []*schema, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	var c crd
	if err := json.Unmarshal(js, &c); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if c.Spec.Names.Kind == "" {
		return nil, nil, fmt.Errorf("%s: spec.names.kind is empty: not a CustomResourceDefinition", name)
	}
	schemas := make([]*schema, len(c.Spec.Versions))
	for i, v := range c.Spec.Versions {
		dec := json.NewDecoder(bytes.NewReader(v.Schema.OpenAPIV3Schema))
		dec.DisallowUnknownFields()
		var s schema
		if err := dec.Decode(&s); err != nil {
			return nil, nil, fmt.Errorf("%s: version %s: openAPIV3Schema: %w (a keyword hack/apiref does not render?)",
				name, v.Name, err)
		}
		schemas[i] = &s
	}
	return &c, schemas, nil
}
