package source_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

func TestParseValueAcceptsEveryValidForm(t *testing.T) {
	tests := map[string]struct {
		in   string
		want spend.Usage
	}{
		"a plain decimal is USD":             {"12.34", spend.Usage{CostUSD: mustParse("12.34")}},
		"a plain whole number is USD":        {"7", spend.Usage{CostUSD: mustParse("7")}},
		"zero is no spend":                   {"0", spend.Usage{}},
		"nine decimals are kept exactly":     {"0.123456789", spend.Usage{CostUSD: money.FromNanos(123_456_789)}},
		"an object with a string cost":       {`{"costUSD": "12.34"}`, spend.Usage{CostUSD: mustParse("12.34")}},
		"an object with a number cost":       {`{"costUSD": 12.34}`, spend.Usage{CostUSD: mustParse("12.34")}},
		"a number cost with nine decimals":   {`{"costUSD": 12.345678901}`, spend.Usage{CostUSD: mustParse("12.345678901")}},
		"a number cost with a trailing zero": {`{"costUSD": 1.50}`, spend.Usage{CostUSD: mustParse("1.5")}},
		"an object with both token counts": {
			`{"costUSD": "12.34", "inputTokens": 1200, "outputTokens": 340}`,
			spend.Usage{CostUSD: mustParse("12.34"), InputTokens: 1200, OutputTokens: 340},
		},
		"fields in any order": {
			`{"outputTokens": 340, "costUSD": 0.5, "inputTokens": 1200}`,
			spend.Usage{CostUSD: mustParse("0.5"), InputTokens: 1200, OutputTokens: 340},
		},
		"only input tokens": {`{"costUSD": "1", "inputTokens": 5}`, spend.Usage{CostUSD: mustParse("1"), InputTokens: 5}},
		"null token counts are absent": {
			`{"costUSD": "1", "inputTokens": null, "outputTokens": null}`,
			spend.Usage{CostUSD: mustParse("1")},
		},
		"zero token counts": {`{"costUSD": "1", "inputTokens": 0, "outputTokens": 0}`, spend.Usage{CostUSD: mustParse("1")}},
		"the largest token count": {
			`{"costUSD": "1", "inputTokens": 9223372036854775807}`,
			spend.Usage{CostUSD: mustParse("1"), InputTokens: math.MaxInt64},
		},
		"a YAML block scalar's newline": {"{\"costUSD\": \"2.5\"}\n", spend.Usage{CostUSD: mustParse("2.5")}},
		"pretty-printed JSON": {
			"{\n  \"costUSD\": \"2.5\",\n  \"inputTokens\": 3\n}\n",
			spend.Usage{CostUSD: mustParse("2.5"), InputTokens: 3},
		},
		"whitespace before the object":            {" \t{\"costUSD\": \"2.5\"}", spend.Usage{CostUSD: mustParse("2.5")}},
		"a JSON escape in the cost string":        {`{"costUSD": "\u0031.5"}`, spend.Usage{CostUSD: mustParse("1.5")}},
		"the largest amount":                      {`{"costUSD": 9223372036.854775807}`, spend.Usage{CostUSD: money.Max}},
		"a number cost of zero":                   {`{"costUSD": 0}`, spend.Usage{}},
		"leading zeros in a string cost are fine": {`{"costUSD": "007.5"}`, spend.Usage{CostUSD: mustParse("7.5")}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := source.ParseValue(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseValueRefusesEveryInvalidForm(t *testing.T) {
	tests := map[string]struct {
		in      string
		wantErr string
	}{
		"an empty value":                        {"", `"" is empty`},
		"a negative amount":                     {"-1", `"-1" is negative`},
		"NaN":                                   {"NaN", `"NaN" is not a decimal number`},
		"Inf":                                   {"Inf", `"Inf" is not a decimal number`},
		"minus Inf":                             {"-Inf", `"-Inf" is not a decimal number`},
		"an exponent":                           {"1e3", `"1e3": exponents are not allowed`},
		"ten decimals":                          {"12.3456789012", `"12.3456789012" has more than 9 decimals`},
		"a leading space":                       {" 12", `" 12" is not a decimal number`},
		"a trailing newline on a plain decimal": {"12\n", `"12\n" is not a decimal number`},
		"only whitespace":                       {"  ", `"  " is not a decimal number`},
		"a decimal comma":                       {"12,5", `"12,5" is not a decimal number`},
		"a currency sign":                       {"$12.34", `"$12.34" is not a decimal number`},
		"a quoted decimal":                      {`"12.34"`, `"\"12.34\"" is not a decimal number`},
		"a JSON array":                          {`["12.34"]`, `"[\"12.34\"]" is not a decimal number`},
		"a number cost with ten decimals": {
			`{"costUSD": 12.3456789012}`,
			`costUSD: "12.3456789012" has more than 9 decimals`,
		},
		"a number cost with an exponent":      {`{"costUSD": 1E2}`, `costUSD: "1E2": exponents are not allowed`},
		"a number cost with a small exponent": {`{"costUSD": 1e-3}`, `costUSD: "1e-3": exponents are not allowed`},
		"a negative number cost":              {`{"costUSD": -1}`, `costUSD: "-1" is negative`},
		"a negative string cost":              {`{"costUSD": "-0.5"}`, `costUSD: "-0.5" is negative`},
		"a NaN string cost":                   {`{"costUSD": "NaN"}`, `costUSD: "NaN" is not a decimal number`},
		"an Infinity string cost":             {`{"costUSD": "Infinity"}`, `costUSD: "Infinity" is not a decimal number`},
		"an empty string cost":                {`{"costUSD": ""}`, `costUSD: "" is empty`},
		"a string cost with spaces":           {`{"costUSD": " 1"}`, `costUSD: " 1" is not a decimal number`},
		"a bare NaN cost": {
			`{"costUSD": NaN}`,
			`malformed JSON at byte 13: invalid character 'N' looking for beginning of value`,
		},
		"a boolean cost": {`{"costUSD": true}`, `costUSD: true is not a decimal string or number`},
		"a null cost":    {`{"costUSD": null}`, `costUSD: null is not a decimal string or number`},
		"an array cost":  {`{"costUSD": [1]}`, `costUSD: an array is not a decimal string or number`},
		"an object cost": {
			`{"costUSD": {"value": 1}}`,
			`costUSD: an object is not a decimal string or number`,
		},
		"an object without a cost":       {`{}`, `field "costUSD" is missing`},
		"an object with only tokens":     {`{"inputTokens": 5}`, `field "costUSD" is missing`},
		"a field name in the wrong case": {`{"costUsd": "1"}`, `unknown field "costUsd"`},
		"an unknown field beside a cost": {`{"costUSD": "1", "currency": "EUR"}`, `unknown field "currency"`},
		"a repeated cost":                {`{"costUSD": "1", "costUSD": "2"}`, `duplicate field "costUSD"`},
		"a repeated token count": {
			`{"costUSD": "1", "inputTokens": 1, "inputTokens": 2}`,
			`duplicate field "inputTokens"`,
		},
		"fractional tokens": {`{"costUSD": "1", "inputTokens": 1.5}`, `inputTokens: 1.5 is not a whole number`},
		"a whole number written with a decimal": {
			`{"costUSD": "1", "outputTokens": 2.0}`,
			`outputTokens: 2.0 is not a whole number`,
		},
		"negative tokens":         {`{"costUSD": "1", "inputTokens": -1}`, `inputTokens: -1 is negative`},
		"negative zero tokens":    {`{"costUSD": "1", "outputTokens": -0}`, `outputTokens: -0 is negative`},
		"tokens with an exponent": {`{"costUSD": "1", "outputTokens": 1e3}`, `outputTokens: 1e3 is not a whole number`},
		"tokens as a string":      {`{"costUSD": "1", "inputTokens": "12"}`, `inputTokens: string "12" is not a number`},
		"tokens as a boolean":     {`{"costUSD": "1", "inputTokens": false}`, `inputTokens: false is not a number`},
		"tokens as an array":      {`{"costUSD": "1", "outputTokens": [1]}`, `outputTokens: an array is not a number`},
		"an amount beyond what money holds": {
			"1234567890123456789012345678901234567890.5",
			`"1234567890123456789012345678901234567890.5" is too large (at most 9223372036.854775807)`,
		},
		"a number cost beyond what money holds": {
			`{"costUSD": 9223372036.854775808}`,
			`costUSD: "9223372036.854775808" is too large (at most 9223372036.854775807)`,
		},
		"tokens beyond int64": {
			`{"costUSD": "1", "inputTokens": 9223372036854775808}`,
			`inputTokens: 9223372036854775808 is too large`,
		},
		"a second object after the first": {
			`{"costUSD": "1"} {"costUSD": "2"}`,
			`malformed JSON at byte 18: invalid character '{' after top-level value`,
		},
		"text after the object": {
			`{"costUSD": "1"}x`,
			`malformed JSON at byte 17: invalid character 'x' after top-level value`,
		},
		"a second closing brace": {
			`{"costUSD": "1"}}`,
			`malformed JSON at byte 17: invalid character '}' after top-level value`,
		},
		"an unterminated object": {`{"costUSD": "1"`, `malformed JSON at byte 15: unexpected end of JSON input`},
		"a lone brace":           {`{`, `malformed JSON at byte 1: unexpected end of JSON input`},
		"a missing colon":        {`{"costUSD" "1"}`, `malformed JSON at byte 12: invalid character '"' after object key`},
		"a trailing comma": {
			`{"costUSD": "1",}`,
			`malformed JSON at byte 17: invalid character '}' looking for beginning of object key string`,
		},
		"a number with a leading zero": {
			`{"costUSD": 01}`,
			`malformed JSON at byte 14: invalid character '1' after object key:value pair`,
		},
		"a number with a leading point": {
			`{"costUSD": .5}`,
			`malformed JSON at byte 13: invalid character '.' looking for beginning of value`,
		},
		"invalid JSON is reported before an unknown field": {
			`{"cost": NaN}`,
			`malformed JSON at byte 10: invalid character 'N' looking for beginning of value`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := source.ParseValue(tc.in)
			require.Error(t, err)
			assert.Equal(t, tc.wantErr, err.Error())
		})
	}
	t.Run("a very long token count is shortened in the message", func(t *testing.T) {
		_, err := source.ParseValue(`{"costUSD": "1", "inputTokens": ` + strings.Repeat("9", 100) + `}`)
		require.Error(t, err)
		assert.Equal(t, "inputTokens: "+strings.Repeat("9", 48)+"... is too large", err.Error())
	})
}

func TestUsageAddSaturates(t *testing.T) {
	tests := map[string]struct {
		a, b            spend.Usage
		wantIn, wantOut int64
		wantCost        string
	}{
		"small counts add": {
			a:      spend.Usage{CostUSD: mustParse("0.1"), InputTokens: 1, OutputTokens: 2},
			b:      spend.Usage{CostUSD: mustParse("0.2"), InputTokens: 10, OutputTokens: 20},
			wantIn: 11, wantOut: 22, wantCost: "0.30",
		},
		"input tokens saturate": {
			a:      spend.Usage{InputTokens: math.MaxInt64 - 1},
			b:      spend.Usage{InputTokens: 5},
			wantIn: math.MaxInt64, wantCost: "0.00",
		},
		"output tokens saturate": {
			a:       spend.Usage{OutputTokens: math.MaxInt64},
			b:       spend.Usage{OutputTokens: math.MaxInt64},
			wantOut: math.MaxInt64, wantCost: "0.00",
		},
		"adding zero changes nothing": {
			a:      spend.Usage{CostUSD: mustParse("3"), InputTokens: 7, OutputTokens: 9},
			wantIn: 7, wantOut: 9, wantCost: "3.00",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := tc.a.Add(tc.b)
			assert.Equal(t, tc.wantIn, got.InputTokens)
			assert.Equal(t, tc.wantOut, got.OutputTokens)
			assert.Equal(t, tc.wantCost, got.CostUSD.String())
			assert.Equal(t, got, tc.b.Add(tc.a), "addition commutes")
		})
	}
}

func TestUsageTotalTokens(t *testing.T) {
	assert.Equal(t, int64(1540), spend.Usage{InputTokens: 1200, OutputTokens: 340}.TotalTokens())
	assert.Equal(t, int64(0), spend.Usage{}.TotalTokens())
	assert.Equal(t, int64(math.MaxInt64), spend.Usage{InputTokens: math.MaxInt64, OutputTokens: 1}.TotalTokens(),
		"a total beyond int64 saturates")
}

func TestParseValueReadsAPerModelBreakdown(t *testing.T) {
	u, err := source.ParseValue(`{"costUSD": "9", "models": {` +
		`"gpt-4o": {"costUSD": "7", "inputTokens": 10, "outputTokens": 2}, "llama3.1:70b": {"costUSD": 2}}}`)
	require.NoError(t, err)
	assert.Equal(t, "9.00", u.CostUSD.String())
	require.Len(t, u.Models, 2)
	assert.Equal(t, "7.00", u.Models["gpt-4o"].CostUSD.String())
	assert.Equal(t, int64(12), u.Models["gpt-4o"].TotalTokens())
	assert.Equal(t, "2.00", u.Models["llama3.1:70b"].CostUSD.String())
}

func TestParseValueRefusesABrokenBreakdown(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"a model name with a space": {
			`{"costUSD": "1", "models": {"gpt 4o": {"costUSD": "1"}}}`,
			`models: "gpt 4o" is not a valid model name (1-253 printable characters, no spaces or quotes)`,
		},
		"an empty model name": {
			`{"costUSD": "1", "models": {"": {"costUSD": "1"}}}`,
			`models: "" is not a valid model name (1-253 printable characters, no spaces or quotes)`,
		},
		"models nested in a model": {
			`{"costUSD": "1", "models": {"m": {"costUSD": "1", "models": {}}}}`,
			`unknown field "models.m.models"`,
		},
		"a model without its cost": {
			`{"costUSD": "1", "models": {"m": {"inputTokens": 1}}}`,
			`models.m: field "costUSD" is missing`,
		},
		"a model that is not an object": {
			`{"costUSD": "1", "models": {"m": "1"}}`,
			`models.m: Invalid value: "string": must be of type object`,
		},
		"models that is a list": {`{"costUSD": "1", "models": []}`, `models: Invalid value: "array": must be of type object`},
		"a model listed twice": {
			`{"costUSD": "1", "models": {"m": {"costUSD": "1"}, "m": {"costUSD": "1"}}}`,
			`duplicate field "models.m"`,
		},
		"a negative model cost": {
			`{"costUSD": "1", "models": {"m": {"costUSD": "-1"}}}`,
			`models.m: costUSD: "-1" is negative`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := source.ParseValue(tc.in)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func TestUsageAddSumsModels(t *testing.T) {
	a, err := source.ParseValue(`{"costUSD": "1", "models": {"m": {"costUSD": "1", "inputTokens": 5}}}`)
	require.NoError(t, err)
	b, err := source.ParseValue(`{"costUSD": "2", "models": {"m": {"costUSD": "2"}, "n": {"costUSD": "0.5"}}}`)
	require.NoError(t, err)
	sum := a.Add(b)
	assert.Equal(t, "3.00", sum.Models["m"].CostUSD.String())
	assert.Equal(t, int64(5), sum.Models["m"].InputTokens)
	assert.Equal(t, "0.50", sum.Models["n"].CostUSD.String())
	assert.Len(t, a.Models, 1, "Add does not change its operands")
}
