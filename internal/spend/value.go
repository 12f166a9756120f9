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
)

// ParseValue parses one ConfigMap value: a plain decimal string of USD with
// at most 9 decimals ("12.34"), or a JSON object
// {"costUSD": "12.34", "inputTokens": 1200, "outputTokens": 340} where
// costUSD is required (a decimal string or a JSON number) and the token
// counts are optional non-negative integers (null counts as absent).
//
// The plain form allows no surrounding whitespace; the JSON form allows the
// whitespace JSON allows, so a YAML block scalar's final newline is fine.
func ParseValue(s string) (Usage, error) {
	if strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") {
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
		if field != fieldCost && field != fieldInput && field != fieldOutput {
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
	if _, err := dec.Token(); err != io.EOF {
		return Usage{}, errors.New("unexpected data after the JSON object")
	}
	if !seen[fieldCost] {
		return Usage{}, fmt.Errorf("field %q is missing", fieldCost)
	}
	return u, nil
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
