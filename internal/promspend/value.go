package promspend

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/spend"
)

// maxExactTokens is the largest count a float64 holds exactly (2^53).
const maxExactTokens = 1 << 53

// costDecimals is the precision cost counters are rounded to: float64
// sums of per-request costs carry noise far below it.
const costDecimals = 6

// usage is one window's or one model's figures, in the JSON form the hooks
// read (package spend).
type usage struct {
	CostUSD      string           `json:"costUSD"`
	InputTokens  int64            `json:"inputTokens"`
	OutputTokens int64            `json:"outputTokens"`
	Models       map[string]usage `json:"models,omitempty"`
}

// Data turns the answers to p.Queries (answers[i] answers p.Queries[i])
// into the ConfigMap data: one key per window, except finished days without
// any series. prices cost the tokens of a source without a cost counter and
// may be nil otherwise.
func (p Plan) Data(answers []model.Vector, prices *Prices) (map[string]string, error) {
	if len(answers) != len(p.Queries) {
		return nil, fmt.Errorf("%d answers for %d queries", len(answers), len(p.Queries))
	}
	if p.source.Series[Cost] == "" && prices == nil {
		return nil, errors.New("this source counts tokens only: a price table is required")
	}
	// byModel[window][measure][model] is the growth; "" is series without a model label.
	byModel := make([]map[Measure]map[string]float64, len(p.Windows))
	empty := make([]int, len(p.Windows)) // how many of the window's queries found no series
	for i, q := range p.Queries {
		if byModel[q.Window] == nil {
			byModel[q.Window] = map[Measure]map[string]float64{}
		}
		vals := map[string]float64{}
		for _, s := range answers[i] {
			vals[string(s.Metric[model.LabelName(p.source.ModelLabel)])] += float64(s.Value)
		}
		byModel[q.Window][q.Measure] = vals
		if len(vals) == 0 {
			empty[q.Window]++
		}
	}
	// A finished day without any series is left out, so the value written
	// while Prometheus still had its data stays; anything else partial is
	// an error.
	for i, q := range p.Queries {
		w := p.Windows[q.Window]
		if len(answers[i]) == 0 && (w.Open || empty[q.Window] < len(byModel[q.Window])) {
			return nil, fmt.Errorf("key %q, %s: %w: %s", w.Key, q.Measure, ErrEmpty, q.PromQL)
		}
	}
	data := make(map[string]string, len(p.Windows))
	for i, w := range p.Windows {
		if empty[i] > 0 {
			continue
		}
		u, err := p.window(byModel[i], prices)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", w.Key, err)
		}
		js, _ := json.Marshal(u) // strings and integers: it cannot fail
		data[w.Key] = string(js)
	}
	return data, nil
}

// window adds one window's models up; the total is the exact sum of the
// rounded per-model figures, so the breakdown always adds up.
func (p Plan) window(vals map[Measure]map[string]float64, prices *Prices) (usage, error) {
	names := map[string]bool{}
	for _, m := range vals {
		for name := range m {
			names[name] = true
		}
	}
	total := usage{Models: map[string]usage{}} // omitempty leaves out an empty breakdown
	var missing []string
	var sum money.Amount
	for _, name := range slices.Sorted(maps.Keys(names)) {
		if name != "" && !spend.ValidModelName(name) {
			return usage{}, fmt.Errorf("model %q is not a valid model name", name)
		}
		in, inErr := tokens("input", vals[Input][name])
		out, outErr := tokens("output", vals[Output][name])
		var cost money.Amount
		var costErr error
		if p.source.Series[Cost] != "" {
			cost, costErr = dollars(vals[Cost][name])
		} else if c, ok := prices.cost(name, in, out); ok {
			cost = c
		} else {
			missing = append(missing, strconv.Quote(name))
		}
		if err := cmp.Or(inErr, outErr, costErr); err != nil {
			return usage{}, fmt.Errorf("model %q: %w", name, err)
		}
		sum = sum.Add(cost)
		total.InputTokens += in
		total.OutputTokens += out
		if name != "" {
			total.Models[name] = usage{CostUSD: cost.String(), InputTokens: in, OutputTokens: out}
		}
	}
	if len(missing) > 0 {
		return usage{}, fmt.Errorf("no price for model %s and no default price", strings.Join(missing, ", "))
	}
	total.CostUSD = sum.String()
	return total, nil
}

// tokens rounds a float64 count of input or output tokens to a whole number.
func tokens(direction string, v float64) (int64, error) {
	if math.IsNaN(v) || v < 0 || v > maxExactTokens {
		return 0, fmt.Errorf("%s tokens: %v is not a token count between 0 and 2^53", direction, v)
	}
	return int64(math.Round(v)), nil
}

// dollars rounds a float64 USD amount to costDecimals decimals.
func dollars(v float64) (money.Amount, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return money.Amount{}, fmt.Errorf("cost: %v is not a non-negative amount", v)
	}
	return money.Parse(strconv.FormatFloat(v, 'f', costDecimals, 64))
}

// Price is what a million tokens of a model cost, in USD.
type Price struct{ Input, Output money.Amount }

// Prices is a price table: per model, and optionally a default for models
// not listed.
type Prices struct {
	Models  map[string]Price
	Default *Price
}

// decimal is a price as written: quoted or not, YAML keeps its literal text,
// so "0.000000001" and 0.000000001 both read exactly.
type decimal struct{ money.Amount }

func (d *decimal) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode { // a null never gets here: the field stays nil
		return fmt.Errorf("line %d: want a decimal price", n.Line)
	}
	v, err := money.Parse(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	d.Amount = v
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
// Unknown fields and a missing direction are errors.
func ParsePrices(doc []byte) (*Prices, error) {
	var raw struct {
		Models  map[string]priceYAML `yaml:"models"`
		Default *priceYAML           `yaml:"default"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("price table: %w", err)
	}
	p := &Prices{Models: make(map[string]Price, len(raw.Models))}
	for name, py := range raw.Models {
		if !spend.ValidModelName(name) {
			return nil, fmt.Errorf("price table: %q is not a valid model name", name)
		}
		price, err := py.price()
		if err != nil {
			return nil, fmt.Errorf("price table: models.%s: %w", name, err)
		}
		p.Models[name] = price
	}
	if raw.Default != nil {
		price, err := raw.Default.price()
		if err != nil {
			return nil, fmt.Errorf("price table: default: %w", err)
		}
		p.Default = &price
	}
	return p, nil
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

// cost prices in and out tokens of model, each rounded half up to 1e-9 USD,
// and reports whether the table has a price for it.
func (p *Prices) cost(name string, in, out int64) (money.Amount, bool) {
	price, ok := p.Models[name]
	if !ok && p.Default != nil {
		price, ok = *p.Default, true
	}
	// Twice the exact product of USD per million tokens in half-nanos,
	// truncated, then halved with the half added.
	halfUp := func(perMillion money.Amount, tokens int64) money.Amount {
		return perMillion.MulDiv(tokens, 1_000_000/2).Add(money.FromNanos(1)).MulDiv(1, 2)
	}
	return halfUp(price.Input, in).Add(halfUp(price.Output, out)), ok
}
