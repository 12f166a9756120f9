package spend

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llmbudget/llmbudget/internal/money"
)

// The JSON object's fields. Matching is exact, unlike encoding/json's
// case-insensitive struct matching: "costUsd" is a typo to report, not a
// synonym.
const (
	fieldCost   = "costUSD"
	fieldInput  = "inputTokens"
	fieldOutput = "outputTokens"
	fieldModels = "models"
)

// MaxModelNameLength bounds a model name in the data and in spec.modelLimits.
const MaxModelNameLength = 253

// ValidModelName reports whether name can name a model: 1 to 253 printable
// ASCII characters without spaces, quotes or backslashes, which covers
// "gpt-4o", "anthropic/claude-3-5-sonnet@20241022" and "llama3.1:70b".
func ValidModelName(name string) bool {
	if name == "" || len(name) > MaxModelNameLength {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// ParseValue parses one ConfigMap value: a plain decimal string of USD with
// at most 9 decimals ("12.34"), or a JSON object
// {"costUSD": "12.34", "inputTokens": 1200, "outputTokens": 340} where
// costUSD is required (a decimal string or a JSON number) and the token
// counts are optional non-negative integers (null counts as absent). The
// object may break the usage down by model:
// {"costUSD": "9", "models": {"gpt-4o": {"costUSD": "7", "inputTokens": 10}}},
// each model's object taking the same fields except models.
//
// The plain form allows no surrounding whitespace; the JSON form allows the
// whitespace JSON allows, so a YAML block scalar's final newline is fine.
func ParseValue(s string) (Usage, error) {
	if strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") {
		if u, ok := parseFlatObject(s); ok {
			return u, nil
		}
		return parseObject(s)
	}
	cost, err := money.Parse(s)
	if err != nil {
		return Usage{}, err
	}
	return Usage{CostUSD: cost}, nil
}

func parseObject(s string) (Usage, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()                        // numbers stay literal text, never float64
	if _, err := dec.Token(); err != nil { // the '{' ParseValue saw
		return Usage{}, jsonError(err)
	}
	u, err := parseFields(dec, true)
	if err != nil {
		return Usage{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Usage{}, errors.New("unexpected data after the JSON object")
	}
	return u, nil
}

// parseFields reads an object's fields after its '{', through its '}'.
func parseFields(dec *json.Decoder, allowModels bool) (Usage, error) {
	var u Usage
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Usage{}, jsonError(err)
		}
		field, _ := tok.(string) // Token only returns strings as object keys
		if seen[field] {
			return Usage{}, fmt.Errorf("field %q appears more than once", field)
		}
		seen[field] = true
		if field == fieldModels && allowModels {
			if u.Models, err = parseModels(dec); err != nil {
				return Usage{}, fmt.Errorf("%s: %w", field, err)
			}
			continue
		}
		if field != fieldCost && field != fieldInput && field != fieldOutput {
			if allowModels {
				return Usage{}, fmt.Errorf("unknown field %q (want %s, %s, %s, %s)", field, fieldCost, fieldInput, fieldOutput, fieldModels)
			}
			return Usage{}, fmt.Errorf("unknown field %q (want %s, %s, %s)", field, fieldCost, fieldInput, fieldOutput)
		}
		value, err := dec.Token()
		if err != nil {
			return Usage{}, jsonError(err)
		}
		switch field {
		case fieldCost:
			u.CostUSD, err = parseCost(value)
		case fieldInput:
			u.InputTokens, err = parseTokens(value)
		case fieldOutput:
			u.OutputTokens, err = parseTokens(value)
		}
		if err != nil {
			return Usage{}, fmt.Errorf("%s: %w", field, err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return Usage{}, jsonError(err)
	}
	if !seen[fieldCost] {
		return Usage{}, fmt.Errorf("field %q is missing", fieldCost)
	}
	return u, nil
}

// parseModels reads {"<model>": {usage}, ...}.
func parseModels(dec *json.Decoder) (map[string]Usage, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	models := map[string]Usage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonError(err)
		}
		name, _ := tok.(string)
		if !ValidModelName(name) {
			return nil, fmt.Errorf("%s is not a valid model name (1-%d printable characters, no spaces or quotes)", quote(name), MaxModelNameLength)
		}
		if _, dup := models[name]; dup {
			return nil, fmt.Errorf("model %s appears more than once", quote(name))
		}
		if err := expectDelim(dec, '{'); err != nil {
			return nil, fmt.Errorf("%s: %w", quote(name), err)
		}
		m, err := parseFields(dec, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", quote(name), err)
		}
		models[name] = m
	}
	if _, err := dec.Token(); err != nil {
		return nil, jsonError(err)
	}
	return models, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return jsonError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%s is not an object", describe(tok))
	}
	return nil
}

// parseCost accepts a decimal string or a JSON number, by its literal text.
func parseCost(tok json.Token) (money.Amount, error) {
	switch v := tok.(type) {
	case string:
		return money.Parse(v)
	case json.Number:
		return money.Parse(v.String())
	}
	return money.Amount{}, fmt.Errorf("%s is not a decimal string or number", describe(tok))
}

// parseTokens accepts a non-negative integral JSON number, or null for none.
func parseTokens(tok json.Token) (int64, error) {
	if tok == nil {
		return 0, nil
	}
	n, ok := tok.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s is not a number", describe(tok))
	}
	text := n.String()
	if strings.HasPrefix(text, "-") {
		return 0, fmt.Errorf("%s is negative", clip(text))
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

// describe names a JSON token that has the wrong type.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case string:
		return "string " + quote(v)
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	}
	return fmt.Sprint(tok)
}

// jsonError rewords a decoding error as a one-line message.
func jsonError(err error) error {
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("invalid JSON: unexpected end of input")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}
