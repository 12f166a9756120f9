package money_test

import (
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/money"
)

// mustParse is money.Parse for amounts a test writes out.
func mustParse(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

func TestParseAcceptsPlainDecimals(t *testing.T) {
	tests := map[string]struct {
		in    string
		nanos int64
		str   string
	}{
		"a whole number has no decimals":           {"12", 12_000_000_000, "12.00"},
		"zero is allowed":                          {"0", 0, "0.00"},
		"zero with decimals is zero":               {"0.000", 0, "0.00"},
		"two decimals are kept":                    {"12.34", 12_340_000_000, "12.34"},
		"one decimal is padded to two":             {"12.3", 12_300_000_000, "12.30"},
		"nine decimals are the full precision":     {"0.123456789", 123_456_789, "0.123456789"},
		"one nano is the smallest positive amount": {"0.000000001", 1, "0.000000001"},
		"trailing zeros are trimmed past two":      {"1.500000000", 1_500_000_000, "1.50"},
		"leading zeros are fine":                   {"007.5", 7_500_000_000, "7.50"},
		"many leading zeros are fine":              {strings.Repeat("0", 200) + "1", 1_000_000_000, "1.00"},
		"nine digits before the point parse": {
			"999999999.999999999", 999_999_999_999_999_999, "999999999.999999999",
		},
		"ten digits before the point parse":           {"1000000000", 1_000_000_000_000_000_000, "1000000000.00"},
		"the largest int64 of nanos parses":           {"9223372036.854775807", math.MaxInt64, "9223372036.854775807"},
		"six decimals like a limit parse under Parse": {"500.123456", 500_123_456_000, "500.123456"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, err := money.Parse(tc.in)
			require.NoError(t, err)
			assert.Equal(t, money.FromNanos(tc.nanos), a)
			assert.Equal(t, tc.str, a.String())
		})
	}
}

func TestParseRefusesEveryInvalidForm(t *testing.T) {
	tests := map[string]struct {
		in      string
		wantErr string
	}{
		"an empty string":                    {"", `"" is empty`},
		"a negative number":                  {"-3", `"-3" is negative`},
		"a negative decimal":                 {"-0.01", `"-0.01" is negative`},
		"negative zero":                      {"-0", `"-0" is negative`},
		"a lower-case exponent":              {"1e3", `"1e3": exponents are not allowed`},
		"an upper-case exponent":             {"1E2", `"1E2": exponents are not allowed`},
		"a signed exponent":                  {"1.5e-2", `"1.5e-2": exponents are not allowed`},
		"an exponent with a plus sign":       {"2E+03", `"2E+03": exponents are not allowed`},
		"a negative number with an exponent": {"-1e3", `"-1e3": exponents are not allowed`},
		"an exponent without digits":         {"1e", `"1e" is not a decimal number`},
		"NaN":                                {"NaN", `"NaN" is not a decimal number`},
		"Inf":                                {"Inf", `"Inf" is not a decimal number`},
		"plus Inf":                           {"+Inf", `"+Inf" is not a decimal number`},
		"Infinity":                           {"Infinity", `"Infinity" is not a decimal number`},
		"ten decimals":                       {"1.1234567891", `"1.1234567891" has more than 9 decimals`},
		"ten decimals that are all zeros":    {"1.0000000000", `"1.0000000000" has more than 9 decimals`},
		"a trailing point":                   {"12.", `"12." is not a decimal number`},
		"a leading point":                    {".5", `".5" is not a decimal number`},
		"a lone point":                       {".", `"." is not a decimal number`},
		"a leading space":                    {" 12", `" 12" is not a decimal number`},
		"a trailing space":                   {"12 ", `"12 " is not a decimal number`},
		"a trailing newline":                 {"12\n", `"12\n" is not a decimal number`},
		"a plus sign":                        {"+12", `"+12" is not a decimal number`},
		"a lone minus sign":                  {"-", `"-" is not a decimal number`},
		"two minus signs":                    {"--1", `"--1" is not a decimal number`},
		"hexadecimal":                        {"0x1F", `"0x1F" is not a decimal number`},
		"a decimal comma":                    {"12,5", `"12,5" is not a decimal number`},
		"a thousands separator":              {"1,000.00", `"1,000.00" is not a decimal number`},
		"underscores":                        {"1_000", `"1_000" is not a decimal number`},
		"two points":                         {"1.2.3", `"1.2.3" is not a decimal number`},
		"a currency sign":                    {"$12", `"$12" is not a decimal number`},
		"a currency code":                    {"12 USD", `"12 USD" is not a decimal number`},
		"a JSON-quoted number":               {`"12"`, `"\"12\"" is not a decimal number`},
		"non-ASCII digits":                   {"١٢", `"١٢" is not a decimal number`},
		"a fraction":                         {"1/2", `"1/2" is not a decimal number`},
		"one nano beyond the largest amount": {
			"9223372036.854775808",
			`"9223372036.854775808" is too large (at most 9223372036.854775807)`,
		},
		"ten billion dollars": {"10000000000", `"10000000000" is too large (at most 9223372036.854775807)`},
		"a huge integer part": {
			"1" + strings.Repeat("0", 64),
			`"1` + strings.Repeat("0", 47) + `"... is too large (at most 9223372036.854775807)`,
		},
		"a very long invalid input is shortened in the message": {
			strings.Repeat("x", 100),
			`"` + strings.Repeat("x", 48) + `"... is not a decimal number`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := money.Parse(tc.in)
			require.Error(t, err)
			assert.Equal(t, tc.wantErr, err.Error())
		})
	}
}

func TestParseMaxDecimalsLimitsPrecision(t *testing.T) {
	tests := map[string]struct {
		in      string
		max     int
		want    string
		wantErr string
	}{
		"six decimals fit a limit":         {in: "500.123456", max: 6, want: "500.123456"},
		"seven decimals exceed a limit":    {in: "500.1234567", max: 6, wantErr: `"500.1234567" has more than 6 decimals`},
		"a whole number fits zero":         {in: "12", max: 0, want: "12.00"},
		"any decimal exceeds zero":         {in: "12.0", max: 0, wantErr: `"12.0" has decimals; want a whole number`},
		"a max above nine is nine":         {in: "1.1234567891", max: 12, wantErr: `"1.1234567891" has more than 9 decimals`},
		"syntax errors win over precision": {in: "-1.1234567", max: 6, wantErr: `"-1.1234567" is negative`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, err := money.ParseMaxDecimals(tc.in, tc.max)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tc.wantErr, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, a.String())
		})
	}
}

func TestArithmeticIsExact(t *testing.T) {
	t.Run("0.1 plus 0.2 is exactly 0.3", func(t *testing.T) {
		sum := mustParse("0.1").Add(mustParse("0.2"))
		assert.Equal(t, 0, sum.Cmp(mustParse("0.3")))
		assert.Equal(t, mustParse("0.3"), sum)
		assert.Equal(t, "0.30", sum.String())
	})
	t.Run("adding nine-decimal values carries into the integer part", func(t *testing.T) {
		sum := mustParse("0.999999999").Add(mustParse("0.000000001"))
		assert.Equal(t, "1.00", sum.String())
	})
	t.Run("subtracting a larger amount goes negative", func(t *testing.T) {
		diff := mustParse("499.999").Sub(mustParse("500"))
		assert.Equal(t, -1, diff.Sign())
		assert.Equal(t, "-0.001", diff.String())
	})
	t.Run("negative amounts below one keep their sign", func(t *testing.T) {
		assert.Equal(t, "-0.000000001", money.FromNanos(-1).String())
		assert.Equal(t, "-12.30", money.Amount{}.Sub(mustParse("12.3")).String())
	})
	t.Run("the bounds format exactly", func(t *testing.T) {
		assert.Equal(t, "9223372036.854775807", money.Max.String())
		assert.Equal(t, "-9223372036.854775808", money.FromNanos(math.MinInt64).String())
	})
}

func TestArithmeticSaturatesAtTheBounds(t *testing.T) {
	one := money.FromNanos(1)
	minimum := money.FromNanos(math.MinInt64)
	assert.Equal(t, money.Max, money.Max.Add(one), "add past the top")
	assert.Equal(t, minimum, minimum.Sub(one), "subtract past the bottom")
	assert.Equal(t, money.Max, money.Amount{}.Sub(minimum), "0 minus the minimum")
	assert.Equal(t, money.FromNanos(-1), minimum.Sub(money.FromNanos(math.MinInt64+1)), "a difference that fits is exact")
	assert.Equal(t, money.Max, money.FromNanos(-1).Sub(minimum), "-1 minus the minimum is exactly the maximum")
}

func TestMulDivTruncatesTowardZero(t *testing.T) {
	tests := map[string]struct {
		a        money.Amount
		num, den int64
		want     string
	}{
		"a third of a dollar truncates":              {mustParse("1"), 1, 3, "0.333333333"},
		"two thirds of a dollar truncates":           {mustParse("1"), 2, 3, "0.666666666"},
		"an exact division is exact":                 {mustParse("10"), 3, 6, "5.00"},
		"a forecast over a 30-day month":             {mustParse("100"), 30, 7, "428.571428571"},
		"a negative amount truncates toward 0":       {money.FromNanos(-1_000_000_000), 2, 3, "-0.666666666"},
		"a negative denominator flips the sign":      {mustParse("1"), 1, -3, "-0.333333333"},
		"a sub-nano result truncates to zero":        {money.FromNanos(1), 1, 2, "0.00"},
		"an int64-overflowing product is exact":      {money.Max, 1_000_000, 1_000_000, "9223372036.854775807"},
		"the int64 minimum over minus one saturates": {money.FromNanos(math.MinInt64), 1, -1, "9223372036.854775807"},
		"a quotient beyond the bounds saturates": {
			mustParse("9000000000"), 2_678_400_000, 604_800_000, "9223372036.854775807",
		},
		"a negative quotient beyond saturates":   {money.FromNanos(math.MinInt64), 3, 2, "-9223372036.854775808"},
		"a numerator of zero gives zero":         {mustParse("12"), 0, 5, "0.00"},
		"scaling by one over one is an identity": {mustParse("0.123456789"), 1, 1, "0.123456789"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.a.MulDiv(tc.num, tc.den).String())
		})
	}
	t.Run("a zero denominator panics like integer division", func(t *testing.T) {
		assert.PanicsWithValue(t, "money: MulDiv with zero denominator", func() { money.FromNanos(1).MulDiv(1, 0) })
	})
}

func TestPercentOfIsFloored(t *testing.T) {
	tests := map[string]struct {
		spend, limit string
		want         int64
	}{
		"79.99 percent of 500 is 79":            {"399.95", "500", 79},
		"80 percent of 500 is 80":               {"400", "500", 80},
		"99.999 percent of 500 is 99":           {"499.995", "500", 99},
		"499.999 of 500 is not 100":             {"499.999", "500", 99},
		"100 percent of 500 is 100":             {"500", "500", 100},
		"150 percent of 500 is 150":             {"750", "500", 150},
		"nothing spent is 0":                    {"0", "500", 0},
		"79.9 percent of a micro-dollar is 79":  {"0.000000799", "0.000001", 79},
		"80 percent of a micro-dollar is 80":    {"0.0000008", "0.000001", 80},
		"100 percent of a micro-dollar is 100":  {"0.000001", "0.000001", 100},
		"a nano of a micro-dollar is 0 percent": {"0.000000001", "0.000001", 0},
		"a huge overspend is counted exactly":   {"5000000000", "0.000001", 500_000_000_000_000_000},
		"a hopeless overspend saturates":        {"9223372036", "0.000000001", math.MaxInt64},
		"a big spend of a big limit":            {"9000000000", "6000000000", 150},
		"a tiny spend of a big limit":           {"1", "9000000000", 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, mustParse(tc.spend).PercentOf(mustParse(tc.limit)))
		})
	}
	t.Run("a negative amount is floored below zero", func(t *testing.T) {
		assert.Equal(t, int64(-1), money.FromNanos(-1).PercentOf(mustParse("500")))
	})
	t.Run("a hugely negative amount saturates at the int64 minimum", func(t *testing.T) {
		assert.Equal(t, int64(math.MinInt64), money.FromNanos(math.MinInt64).PercentOf(money.FromNanos(1)))
	})
	t.Run("a limit that is not positive gives 0", func(t *testing.T) {
		assert.Equal(t, int64(0), mustParse("10").PercentOf(money.Amount{}))
		assert.Equal(t, int64(0), mustParse("10").PercentOf(money.FromNanos(-5)))
	})
}

func TestCmpAndSign(t *testing.T) {
	tests := map[string]struct {
		a, b string
		want int
	}{
		"equal values compare equal":            {"12.30", "12.3", 0},
		"a smaller value compares less":         {"499.999", "500", -1},
		"a larger value compares greater":       {"500.000000001", "500", 1},
		"leading zeros do not change the value": {"007.5", "7.5", 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, mustParse(tc.a).Cmp(mustParse(tc.b)))
			assert.Equal(t, -tc.want, mustParse(tc.b).Cmp(mustParse(tc.a)))
		})
	}
	t.Run("sign follows the value", func(t *testing.T) {
		assert.Equal(t, 1, money.FromNanos(1).Sign())
		assert.Equal(t, -1, money.FromNanos(-1).Sign())
		assert.Equal(t, 0, money.Amount{}.Sign())
	})
}

func TestStringFormatting(t *testing.T) {
	tests := map[string]struct {
		nanos int64
		want  string
	}{
		"zero has two decimals":                   {0, "0.00"},
		"one nano shows all nine decimals":        {1, "0.000000001"},
		"ten cents keeps two decimals":            {100_000_000, "0.10"},
		"twelve thirty keeps its trailing zero":   {12_300_000_000, "12.30"},
		"three decimals are not padded":           {12_345_000_000, "12.345"},
		"nine significant decimals are all shown": {123_456_789, "0.123456789"},
		"a whole dollar amount shows .00":         {1_000_000_000, "1.00"},
		"a negative cent":                         {-10_000_000, "-0.01"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, money.FromNanos(tc.nanos).String())
		})
	}
	t.Run("a billion and a half shows two decimals", func(t *testing.T) {
		assert.Equal(t, "1000000000.50", mustParse("1000000000.5").String())
	})
}

// FuzzParse checks that whatever parses has the exact value of the decimal
// it came from and survives a round trip through String.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"0", "12.34", "0.000000001", "007.5", "9223372036.854775807", "9223372036.854775808",
		"1234567890123456789012345678901234567890.123456789", "", "-3", "10000000000", "1e3", "NaN", "12.",
		" 12", ".5", "+1", "0x10", "1.1234567891", "Inf", "1E+2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := money.Parse(s)
		if err != nil {
			require.NotEmpty(t, err.Error())
			assert.NotContains(t, err.Error(), "\n")
			return
		}
		require.GreaterOrEqual(t, a.Sign(), 0, "parsed a negative amount from %q", s)

		// The value is the decimal's exact value: big.Rat, an independent
		// exact parser, formats it the same way once padded to nine decimals.
		r, ok := new(big.Rat).SetString(s)
		require.True(t, ok, "big.Rat refuses %q that Parse accepted", s)
		str := a.String()
		point := strings.IndexByte(str, '.')
		require.Positive(t, point, "%q formats without a point as %q", s, str)
		decimals := len(str) - point - 1
		require.True(t, decimals >= 2 && decimals <= 9, "%q formats with %d decimals as %q", s, decimals, str)
		assert.Equal(t, r.FloatString(9), str+strings.Repeat("0", 9-decimals), "%q parsed to the wrong value", s)

		back, err := money.Parse(str)
		require.NoError(t, err, "String() of %q does not re-parse", s)
		assert.Equal(t, 0, a.Cmp(back), "%q -> %q changed the value", s, str)
		assert.Equal(t, a, back)
	})
}

func BenchmarkParseAddString(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		x, err := money.Parse("123.456789")
		if err != nil {
			b.Fatal(err)
		}
		y, err := money.Parse("0.000000001")
		if err != nil {
			b.Fatal(err)
		}
		_ = x.Add(y).String()
	}
}
