// Package money holds exact decimal USD amounts with nano (1e-9) precision.
//
// Guarantees:
//   - No float64: an Amount counts nano-dollars in an int64, so 0.1 + 0.2 is exactly 0.3; comparisons are exact.
//   - Bounded: an Amount holds at most about ±9.2 billion USD (Max), which no real LLM budget comes near.
//     Parsing refuses more, saying so; arithmetic saturates at the bounds, never wraps.
//   - The zero value is 0; every operation returns a new Amount.
//   - Parse takes only plain non-negative decimals ("12", "007.5"); other input gets a one-line error naming it.
package money

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/llmbudget/llmbudget/internal/text"
)

// MaxDecimals is the precision of an Amount: nano-dollars.
const MaxDecimals = 9

// Amount is an exact USD amount counted in nano-dollars.
type Amount struct{ n int64 }

// Max is the largest Amount, 9223372036.854775807 USD.
var Max = Amount{n: math.MaxInt64}

// FromNanos returns n nano-dollars.
func FromNanos(n int64) Amount { return Amount{n: n} }

// Nanos is a in nano-dollars.
func (a Amount) Nanos() int64 { return a.n }

// Add returns a + b, saturating at the bounds of an Amount.
func (a Amount) Add(b Amount) Amount {
	sum := a.n + b.n // wraps on overflow, which the signs reveal
	switch {
	case a.n > 0 && b.n > 0 && sum < 0:
		return Max
	case a.n < 0 && b.n < 0 && sum >= 0:
		return Amount{n: math.MinInt64}
	}
	return Amount{n: sum}
}

// Sub returns a - b, which may be negative, saturating at the bounds.
func (a Amount) Sub(b Amount) Amount {
	if b.n == math.MinInt64 {
		return a.Add(Max).Add(FromNanos(1))
	}
	return a.Add(Amount{n: -b.n})
}

// MulDiv returns a * num / den, truncated toward zero to whole nanos and saturating at the bounds; it panics if
// den is 0, like integer division. The 128-bit product is exact, so only the sub-nano remainder is lost.
func (a Amount) MulDiv(num, den int64) Amount {
	if den == 0 {
		panic("money: MulDiv with zero denominator")
	}
	q, _ := mulDiv(a.n, num, den)
	return Amount{n: q}
}

// Cmp compares a and b and returns -1, 0 or +1.
func (a Amount) Cmp(b Amount) int { return cmp.Compare(a.n, b.n) }

// Sign returns -1, 0 or +1 by the sign of a.
func (a Amount) Sign() int { return a.Cmp(Amount{}) }

// PercentOf returns floor(a * 100 / limit), exactly: 499.999 of 500 is 99, not 100. The result may exceed 100.
// For a limit that is not positive it returns 0 rather than panicking: callers must check the limit.
func (a Amount) PercentOf(limit Amount) int64 {
	if limit.Sign() <= 0 {
		return 0
	}
	q, truncated := mulDiv(a.n, 100, limit.n)
	if a.n < 0 && truncated && q > math.MinInt64 {
		q-- // floor, not truncation
	}
	return q
}

// mulDiv returns a*num/den truncated toward zero and saturating at the int64 bounds, and whether it dropped a
// remainder or saturated.
func mulDiv(a, num, den int64) (q int64, truncated bool) {
	negative := (a < 0) != (num < 0) != (den < 0)
	hi, lo := bits.Mul64(abs(a), abs(num))
	if d := abs(den); hi < d {
		u, rem := bits.Div64(hi, lo, d)
		switch {
		case negative && u <= 1<<63:
			return -int64(u), rem != 0 // -int64(1<<63) wraps to MinInt64, which is right
		case !negative && u <= math.MaxInt64:
			return int64(u), rem != 0
		}
	}
	if negative {
		return math.MinInt64, true
	}
	return math.MaxInt64, true
}

// abs is |x|, correct for math.MinInt64 too.
func abs(x int64) uint64 {
	if x < 0 {
		return -uint64(x)
	}
	return uint64(x)
}

// String formats a with 2 to 9 decimals, zeros trimmed past the second: "0.00", "12.30", "-0.123456789".
func (a Amount) String() string {
	digits := fmt.Sprintf("%0*d", MaxDecimals+1, abs(a.n)) // at least one digit before the point
	point := len(digits) - MaxDecimals
	sign := ""
	if a.n < 0 {
		sign = "-"
	}
	return sign + digits[:point] + "." + digits[point:point+2] + strings.TrimRight(digits[point+2:], "0")
}

// Parse parses a non-negative plain decimal with at most 9 decimals, such as "12", "12.34" or "0.000000001".
// Refused: signs, exponents, whitespace, a leading or trailing '.', hexadecimal, NaN, Inf and amounts past Max.
func Parse(s string) (Amount, error) { return ParseMaxDecimals(s, MaxDecimals) }

// ParseMaxDecimals is Parse with at most maxDecimals decimals (limits use 6), clamped to the range 0-9.
func ParseMaxDecimals(s string, maxDecimals int) (Amount, error) {
	maxDecimals = max(0, min(MaxDecimals, maxDecimals))
	intPart, frac, err := split(s)
	if err != nil {
		return Amount{}, err
	}
	if len(frac) > maxDecimals {
		if maxDecimals == 0 {
			return Amount{}, fmt.Errorf("%s has decimals; want a whole number", text.Quote(s))
		}
		return Amount{}, fmt.Errorf("%s has more than %d decimals", text.Quote(s), maxDecimals)
	}
	// The digits, the fraction padded to nine places, count nano-dollars.
	n, err := strconv.ParseInt(intPart+frac+strings.Repeat("0", MaxDecimals-len(frac)), 10, 64)
	if err != nil { // only a range error: split checked the digits
		return Amount{}, fmt.Errorf("%s is too large (at most %s)", text.Quote(s), Max)
	}
	return Amount{n: n}, nil
}

// split checks s and returns its integer and fractional digits. The checks' order gives the most useful message:
// an input that would be a fine decimal but for its sign is "negative", one with an exponent says so.
func split(s string) (intPart, frac string, err error) {
	if s == "" {
		return "", "", errors.New(`"" is empty`)
	}
	body, negative := strings.CutPrefix(s, "-")
	mantissa, exponent, hasExponent := strings.Cut(strings.ToLower(body), "e")
	if exponent != "" && (exponent[0] == '+' || exponent[0] == '-') {
		exponent = exponent[1:]
	}
	intPart, frac, point := strings.Cut(mantissa, ".")
	switch {
	case !digits(intPart) || point && !digits(frac) || hasExponent && !digits(exponent):
		return "", "", fmt.Errorf("%s is not a decimal number", text.Quote(s)) // "12.", ".5", "-", "NaN", "1e", ...
	case hasExponent:
		return "", "", fmt.Errorf("%s: exponents are not allowed", text.Quote(s))
	case negative:
		return "", "", fmt.Errorf("%s is negative", text.Quote(s))
	}
	return intPart, frac, nil
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
