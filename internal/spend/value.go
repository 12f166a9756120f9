package spend

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/money"
)

// MaxModelNameLength bounds a model name in the data and in spec.modelLimits.
const MaxModelNameLength = 253

// ValidModelName reports whether name can name a model: 1 to 253 printable
// ASCII characters without spaces, quotes or backslashes, which covers
// "gpt-4o", "anthropic/claude-3-5-sonnet@20241022" and "llama3.1:70b".
func ValidModelName(name string) bool {
	return name != "" && len(name) <= MaxModelNameLength && !strings.ContainsFunc(name, func(c rune) bool {
		return c <= ' ' || c >= 0x7f || c == '"' || c == '\\'
	})
}

// ParseValue parses one ConfigMap value: a plain decimal string of USD with
// at most 9 decimals ("12.34"), or a JSON object
// {"costUSD": "12.34", "inputTokens": 1200, "outputTokens": 340} where
// costUSD is required (a decimal string or a JSON number) and the token
// counts are optional non-negative integers (null counts as absent). The
// object may break the usage down by model, each model taking the same
// fields except models:
// {"costUSD": "9", "models": {"gpt-4o": {"costUSD": "7", "inputTokens": 10}}}.
//
// The object is decoded strictly, since a person or a pipeline wrote it:
// unknown and repeated fields are errors, and "costUsd" is a typo, not a
// synonym. The plain form allows no surrounding whitespace; the JSON form
// allows JSON's, so a YAML block scalar's final newline is fine.
func ParseValue(s string) (Usage, error) {
	if strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") {
		var v valueJSON
		if err := decode.Strict([]byte(s), &v, ""); err != nil {
			return Usage{}, err
		}
		return v.usage()
	}
	cost, err := money.Parse(s)
	if err != nil {
		return Usage{}, err
	}
	return Usage{CostUSD: cost}, nil
}

// usageJSON is a value's (or a model's) object. Each field keeps its literal
// JSON for usage to read, so that money never passes through float64 and
// each error names its field.
type usageJSON struct {
	CostUSD      json.RawMessage `json:"costUSD"`
	InputTokens  json.RawMessage `json:"inputTokens"`
	OutputTokens json.RawMessage `json:"outputTokens"`
}

type valueJSON struct {
	usageJSON
	Models map[string]json.RawMessage `json:"models"`
}

func (v valueJSON) usage() (Usage, error) {
	u, err := v.usageJSON.usage()
	if err != nil || v.Models == nil {
		return u, err
	}
	u.Models = make(map[string]Usage, len(v.Models))
	// In sorted order, so that the same data always reports the same model.
	for _, name := range slices.Sorted(maps.Keys(v.Models)) {
		if !ValidModelName(name) {
			return Usage{}, fmt.Errorf("models: %s is not a valid model name (1-%d printable characters, no spaces or quotes)", quote(name), MaxModelNameLength)
		}
		var m usageJSON
		if err := decode.Strict(v.Models[name], &m, "models."+name); err != nil {
			return Usage{}, err
		}
		if u.Models[name], err = m.usage(); err != nil {
			return Usage{}, fmt.Errorf("models.%s: %w", name, err)
		}
	}
	return u, nil
}

func (j usageJSON) usage() (Usage, error) {
	if j.CostUSD == nil {
		return Usage{}, errors.New(`field "costUSD" is missing`)
	}
	cost, err := parseCost(j.CostUSD)
	if err != nil {
		return Usage{}, fmt.Errorf("costUSD: %w", err)
	}
	in, err := parseTokens(j.InputTokens)
	if err != nil {
		return Usage{}, fmt.Errorf("inputTokens: %w", err)
	}
	out, err := parseTokens(j.OutputTokens)
	if err != nil {
		return Usage{}, fmt.Errorf("outputTokens: %w", err)
	}
	return Usage{CostUSD: cost, InputTokens: in, OutputTokens: out}, nil
}

// parseCost accepts a decimal string or a JSON number, by its literal text.
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

// parseTokens accepts a non-negative integral JSON number, or null or no
// field for none.
func parseTokens(raw []byte) (int64, error) {
	text := string(raw)
	switch {
	case text == "" || text == "null":
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

// describe names a JSON value that has the wrong type.
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
