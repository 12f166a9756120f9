package source

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/text"
)

// ParseValue parses one ConfigMap value: a plain USD decimal with at most 9 decimals ("12.34"), or a JSON
// object: costUSD is required (a decimal string or a JSON number), token counts are optional non-negative
// integers (null is absent), and models may break the usage down per model with the same fields but models:
// {"costUSD": "9", "inputTokens": 1200, "outputTokens": 340, "models": {"gpt-4o": {"costUSD": "7"}}}.
//
// The object is decoded strictly, since a person or a pipeline wrote it: unknown and repeated fields are errors
// ("costUsd" is a typo, not a synonym). The plain form allows no surrounding whitespace; the JSON form allows
// JSON's, so a YAML block scalar's final newline is fine.
func ParseValue(s string) (spend.Usage, error) {
	if strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") {
		var v valueJSON
		if err := decode.Strict([]byte(s), &v, ""); err != nil {
			return spend.Usage{}, err
		}
		return v.usage()
	}
	cost, err := money.Parse(s) // the zero Amount on error
	return spend.Usage{CostUSD: cost}, err
}

// usageJSON is a value's or a model's object. Each field reads its literal JSON as the decoder meets it, which
// keeps money out of float64 without copying the value, and keeps its error for usage to report with its name.
type usageJSON struct {
	CostUSD      costField  `json:"costUSD"`
	InputTokens  tokenField `json:"inputTokens"`
	OutputTokens tokenField `json:"outputTokens"`
}

type costField struct {
	amount money.Amount
	set    bool
	err    error
}

func (c *costField) UnmarshalJSON(raw []byte) error {
	c.amount, c.err = parseCost(raw)
	c.set = true
	return nil
}

type tokenField struct {
	n   int64
	err error
}

func (t *tokenField) UnmarshalJSON(raw []byte) error {
	t.n, t.err = parseTokens(raw)
	return nil
}

type valueJSON struct {
	usageJSON
	Models map[string]json.RawMessage `json:"models"`
}

func (v valueJSON) usage() (spend.Usage, error) {
	u, err := v.usageJSON.usage()
	if err != nil || v.Models == nil {
		return u, err
	}
	u.Models = make(map[string]spend.Usage, len(v.Models))
	for _, name := range slices.Sorted(maps.Keys(v.Models)) {
		if !api.ValidModelName(name) {
			return spend.Usage{}, fmt.Errorf("models: %s is not a valid model name (1-%d printable characters, "+
				"no spaces or quotes)", text.Quote(name), api.MaxModelNameLength)
		}
		var m usageJSON
		if err := decode.Strict(v.Models[name], &m, "models."+name); err != nil {
			return spend.Usage{}, err
		}
		if u.Models[name], err = m.usage(); err != nil {
			return spend.Usage{}, fmt.Errorf("models.%s: %w", name, err)
		}
	}
	return u, nil
}

func (j usageJSON) usage() (spend.Usage, error) {
	switch {
	case !j.CostUSD.set:
		return spend.Usage{}, errors.New(`field "costUSD" is missing`)
	case j.CostUSD.err != nil:
		return spend.Usage{}, fmt.Errorf("costUSD: %w", j.CostUSD.err)
	case j.InputTokens.err != nil:
		return spend.Usage{}, fmt.Errorf("inputTokens: %w", j.InputTokens.err)
	case j.OutputTokens.err != nil:
		return spend.Usage{}, fmt.Errorf("outputTokens: %w", j.OutputTokens.err)
	}
	return spend.Usage{CostUSD: j.CostUSD.amount, InputTokens: j.InputTokens.n, OutputTokens: j.OutputTokens.n}, nil
}

func parseCost(raw []byte) (money.Amount, error) {
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return money.Amount{}, err
		}
		return money.Parse(s)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return money.Parse(string(raw))
	}
	return money.Amount{}, fmt.Errorf("%s is not a decimal string or number", describe(raw))
}

// parseTokens reads a count, or null for none.
func parseTokens(raw []byte) (int64, error) {
	text := string(raw)
	switch {
	case text == "null":
		return 0, nil
	case raw[0] == '-':
		return 0, fmt.Errorf("%s is negative", clip(text))
	case raw[0] < '0' || raw[0] > '9':
		return 0, fmt.Errorf("%s is not a number", describe(raw))
	}
	v, err := strconv.ParseInt(text, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%s is too large", clip(text))
	case err != nil:
		return 0, fmt.Errorf("%s is not a whole number", clip(text))
	}
	return v, nil
}

func describe(raw []byte) string {
	switch raw[0] {
	case '"':
		return "string " + clip(string(raw))
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return clip(string(raw))
}

// clip shortens inputs too long to read in an error message: past clipAt bytes, to clipAt and "...".
func clip(s string) string { return text.Abbreviate(s, clipAt+len("...")) }

const clipAt = 48
