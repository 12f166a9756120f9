package promspend

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
)

// Price is what a million tokens of a model cost, in USD.
type Price struct{ Input, Output money.Amount }

// Prices is a price table: per model, and optionally a default for the rest.
type Prices struct {
	Models  map[string]Price
	Default *Price
}

// decimal is a price as written: quoted or not, YAML keeps its literal text, so 0.000000001 reads exactly.
type decimal struct{ money.Amount }

func (d *decimal) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode { // a null never gets here: the field stays nil
		return fmt.Errorf("line %d: want a decimal price", n.Line)
	}
	var err error
	if d.Amount, err = money.Parse(n.Value); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	return nil
}

type priceYAML struct {
	Input  *decimal `yaml:"input"`
	Output *decimal `yaml:"output"`
}

// ParsePrices reads a price table in YAML (or JSON):
//
//	# USD per million tokens, at most 9 decimals
//	models:
//	  gpt-4o: {input: "2.50", output: "10.00"}
//	default: {input: "1", output: "4"}   # optional
//
// Unknown fields, a missing direction and a second YAML document are errors, worded without Go's type names.
func ParsePrices(doc []byte) (*Prices, error) {
	var raw struct {
		Models  map[string]priceYAML `yaml:"models"`
		Default *priceYAML           `yaml:"default"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return nil, tableError(err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, errors.New("price table: a second YAML document: a table is one document")
	}
	p := &Prices{Models: make(map[string]Price, len(raw.Models))}
	var err error
	for name, py := range raw.Models {
		if !api.ValidModelName(name) {
			return nil, fmt.Errorf("price table: %q is not a valid model name", name)
		}
		if p.Models[name], err = py.price(); err != nil {
			return nil, fmt.Errorf("price table: models.%s: %w", name, err)
		}
	}
	if raw.Default != nil {
		p.Default = new(Price)
		if *p.Default, err = raw.Default.price(); err != nil {
			return nil, fmt.Errorf("price table: default: %w", err)
		}
	}
	return p, nil
}

// The yaml.v3 messages that name Go types: "field x not found in type struct { Models ... }" and
// "cannot unmarshal !!str `x` into map[string]promspend.priceYAML".
var (
	unknownField = regexp.MustCompile(`(?s)field (.*) not found in type .*`)
	notMapping   = regexp.MustCompile("(?s)cannot unmarshal (\\S+)( `.*`)? into .*")
)

// tableError words a price table's decoding error as the table's fields, not as Go's types.
func tableError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("price table: %w", err)
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		m = unknownField.ReplaceAllString(m, "unknown field $1: a price table has models and default, "+
			"a price input and output")
		msgs[i] = notMapping.ReplaceAllString(m, "a mapping is expected, got $1$2")
	}
	return fmt.Errorf("price table: %s", strings.Join(msgs, "; "))
}

func (py priceYAML) price() (Price, error) {
	switch {
	case py.Input == nil:
		return Price{}, errors.New("input is missing")
	case py.Output == nil:
		return Price{}, errors.New("output is missing")
	}
	return Price{Input: py.Input.Amount, Output: py.Output.Amount}, nil
}

// cost prices model name's in and out tokens, each rounded half up to 1e-9 USD, and reports whether it has a price.
func (p *Prices) cost(name string, in, out int64) (money.Amount, bool) {
	price, ok := p.Models[name]
	if !ok && p.Default != nil {
		price, ok = *p.Default, true
	}
	// Twice the exact product of USD per million tokens in half-nanos, truncated, then halved with the half added.
	halfUp := func(perMillion money.Amount, tokens int64) money.Amount {
		return perMillion.MulDiv(tokens, 1_000_000/2).Add(money.FromNanos(1)).MulDiv(1, 2)
	}
	return halfUp(price.Input, in).Add(halfUp(price.Output, out)), ok
}
