// Package money holds exact decimal USD amounts with nano (1e-9) precision.
//
// Guarantees:
//   - No float64 anywhere: an Amount is an integer count of nano-dollars, so
//     0.1 + 0.2 is exactly 0.3 and comparisons are exact.
//   - Any size: values that fit in an int64 of nanos (about ±9.2 billion USD)
//     take an allocation-free fast path; larger ones fall back to math/big
//     transparently.
//   - The zero value is 0 and ready to use. Amounts are immutable values:
//     every operation returns a new Amount and never changes its operands.
//
// Parsing accepts only plain non-negative decimals ("12", "12.34", "007.5")
// and refuses everything else with a one-line message naming the input.
package money

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
)

// MaxDecimals is the precision of an Amount: nano-dollars.
const MaxDecimals = 9

// maxIntegerDigits bounds the integer part (leading zeros aside) so that a
// hostile input cannot make parsing slow; no real spend comes near it.
const maxIntegerDigits = 64

// nanosPerUnit is 10^MaxDecimals.
const nanosPerUnit = 1_000_000_000

// Amount is an exact USD amount counted in nano-dollars.
//
// Compare Amounts with Cmp: == compares big values by pointer.
//
// Invariant: b is nil whenever the value fits in an int64, and then n holds
// it; otherwise n is 0 and b holds the value, which is never modified after
// construction. Keeping one representation per value makes reflect.DeepEqual
// (and so testify's assert.Equal) agree with Cmp.
type Amount struct {
	n int64
	b *big.Int
}

// FromNanos returns n nano-dollars.
func FromNanos(n int64) Amount { return Amount{n: n} }

// fromBig returns v as an Amount, normalised to the int64 form when it fits.
// v must not be shared with anyone else afterwards.
func fromBig(v *big.Int) Amount {
	if v.IsInt64() {
		return Amount{n: v.Int64()}
	}
	return Amount{b: v}
}

// view returns the value as a *big.Int that must not be modified: math/big
// operations write only to their receiver, so views serve as operands.
func (a Amount) view() *big.Int {
	if a.b != nil {
		return a.b
	}
	return big.NewInt(a.n)
}

// Nanos returns the amount in nano-dollars and whether it fits in an int64.
func (a Amount) Nanos() (int64, bool) {
	if a.b != nil {
		return 0, false
	}
	return a.n, true
}

// Add returns a + b.
func (a Amount) Add(b Amount) Amount {
	if a.b == nil && b.b == nil {
		if s, ok := add64(a.n, b.n); ok {
			return Amount{n: s}
		}
	}
	return fromBig(new(big.Int).Add(a.view(), b.view()))
}

// Sub returns a - b, which may be negative.
func (a Amount) Sub(b Amount) Amount {
	if a.b == nil && b.b == nil && b.n != math.MinInt64 {
		if s, ok := add64(a.n, -b.n); ok {
			return Amount{n: s}
		}
	}
	return fromBig(new(big.Int).Sub(a.view(), b.view()))
}

// Neg returns -a.
func (a Amount) Neg() Amount {
	if a.b == nil && a.n != math.MinInt64 {
		return Amount{n: -a.n}
	}
	return fromBig(new(big.Int).Neg(a.view()))
}

// MulInt64 returns a * n.
func (a Amount) MulInt64(n int64) Amount {
	if a.b == nil {
		if p, ok := mul64(a.n, n); ok {
			return Amount{n: p}
		}
	}
	return fromBig(new(big.Int).Mul(a.view(), big.NewInt(n)))
}

// MulDiv returns a * num / den, truncated toward zero to whole nanos. The
// product is exact before the division, so scaling spend by elapsed time
// loses nothing but the final sub-nano remainder. It panics if den is 0,
// like integer division; a negative den simply flips the sign.
func (a Amount) MulDiv(num, den int64) Amount {
	if den == 0 {
		panic("money: MulDiv with zero denominator")
	}
	if a.b == nil {
		// MinInt64 / -1 is the one quotient that overflows.
		if p, ok := mul64(a.n, num); ok && (p != math.MinInt64 || den != -1) {
			return Amount{n: p / den}
		}
	}
	p := new(big.Int).Mul(a.view(), big.NewInt(num))
	return fromBig(p.Quo(p, big.NewInt(den)))
}

// Cmp compares a and b and returns -1, 0 or +1.
func (a Amount) Cmp(b Amount) int {
	if a.b == nil && b.b == nil {
		switch {
		case a.n < b.n:
			return -1
		case a.n > b.n:
			return 1
		}
		return 0
	}
	return a.view().Cmp(b.view())
}

// Sign returns -1, 0 or +1 by the sign of a.
func (a Amount) Sign() int {
	if a.b != nil {
		return a.b.Sign()
	}
	switch {
	case a.n < 0:
		return -1
	case a.n > 0:
		return 1
	}
	return 0
}

// IsZero reports whether a is 0.
func (a Amount) IsZero() bool { return a.b == nil && a.n == 0 }

// PercentOf returns floor(a * 100 / limit), exactly: 499.999 of 500 is 99,
// not 100. The result may exceed 100 and saturates at math.MaxInt64 (or
// math.MinInt64 for a very negative a). A limit that is not positive has no
// meaningful percentage; PercentOf then returns 0 rather than panicking, so
// callers must check the limit themselves.
func (a Amount) PercentOf(limit Amount) int64 {
	if limit.Sign() <= 0 {
		return 0
	}
	if a.b == nil && limit.b == nil {
		if p, ok := mul64(a.n, 100); ok {
			q := p / limit.n
			if p%limit.n != 0 && p < 0 {
				q-- // floor, not truncation
			}
			return q
		}
	}
	p := new(big.Int).Mul(a.view(), big.NewInt(100))
	// Div is Euclidean division, which is floor for a positive divisor.
	q := p.Div(p, limit.view())
	switch {
	case q.IsInt64():
		return q.Int64()
	case q.Sign() > 0:
		return math.MaxInt64
	}
	return math.MinInt64
}

// String formats a as a decimal with at least 2 and at most 9 decimals,
// trailing zeros trimmed past the second: "0.00", "12.30", "0.123456789".
// Negative amounts carry a leading '-'.
func (a Amount) String() string {
	var buf [40]byte
	return string(a.appendTo(buf[:0]))
}

// appendTo appends the String form of a to dst.
func (a Amount) appendTo(dst []byte) []byte {
	var digits []byte // absolute value in nanos, at least MaxDecimals+1 digits
	var buf [24]byte
	if a.b == nil {
		if a.n < 0 {
			dst = append(dst, '-')
		}
		u := uint64(a.n)
		if a.n < 0 {
			u = -u // correct for MinInt64 too, in two's complement
		}
		digits = strconv.AppendUint(buf[:0], u, 10)
	} else {
		if a.b.Sign() < 0 {
			dst = append(dst, '-')
		}
		digits = new(big.Int).Abs(a.b).Append(buf[:0], 10)
	}
	if pad := MaxDecimals + 1 - len(digits); pad > 0 {
		zeros := [MaxDecimals + 1]byte{'0', '0', '0', '0', '0', '0', '0', '0', '0', '0'}
		digits = append(zeros[:pad:pad], digits...)
	}
	point := len(digits) - MaxDecimals
	end := len(digits)
	for end > point+2 && digits[end-1] == '0' {
		end--
	}
	dst = append(dst, digits[:point]...)
	dst = append(dst, '.')
	return append(dst, digits[point:end]...)
}

// Parse parses a non-negative plain decimal with at most 9 decimals, such as
// "12", "12.34" or "0.000000001". Signs, exponents, whitespace, a leading or
// trailing '.', hexadecimal, NaN and Inf are refused.
func Parse(s string) (Amount, error) { return ParseMaxDecimals(s, MaxDecimals) }

// ParseMaxDecimals is Parse with at most maxDecimals decimals (limits use 6).
// maxDecimals is clamped to the range 0-9.
func ParseMaxDecimals(s string, maxDecimals int) (Amount, error) {
	maxDecimals = max(0, min(MaxDecimals, maxDecimals))
	intPart, frac, err := split(s)
	if err != nil {
		return Amount{}, err
	}
	if len(frac) > maxDecimals {
		if maxDecimals == 0 {
			return Amount{}, fmt.Errorf("%s has decimals; want a whole number", quote(s))
		}
		return Amount{}, fmt.Errorf("%s has more than %d decimals", quote(s), maxDecimals)
	}
	for len(intPart) > 1 && intPart[0] == '0' {
		intPart = intPart[1:]
	}
	if len(intPart) > maxIntegerDigits {
		return Amount{}, fmt.Errorf("%s is too large (more than %d digits before the decimal point)", quote(s), maxIntegerDigits)
	}
	// 18 digits always fit in an int64 (whose maximum has 19).
	if len(intPart)+MaxDecimals <= 18 {
		var n int64
		for i := 0; i < len(intPart); i++ {
			n = n*10 + int64(intPart[i]-'0')
		}
		for i := 0; i < MaxDecimals; i++ {
			n *= 10
			if i < len(frac) {
				n += int64(frac[i] - '0')
			}
		}
		return Amount{n: n}, nil
	}
	v, ok := new(big.Int).SetString(intPart, 10)
	if !ok {
		return Amount{}, fmt.Errorf("%s is not a decimal number", quote(s)) // unreachable: split checked digits
	}
	v.Mul(v, big.NewInt(nanosPerUnit))
	if len(frac) > 0 {
		f, _ := strconv.ParseInt(frac, 10, 64) // at most 9 digits, checked by split
		for i := len(frac); i < MaxDecimals; i++ {
			f *= 10
		}
		v.Add(v, big.NewInt(f))
	}
	return fromBig(v), nil
}

// MustParse is Parse that panics on error, for constants and tests.
func MustParse(s string) Amount {
	a, err := Parse(s)
	if err != nil {
		panic("money: " + err.Error())
	}
	return a
}

// split checks the syntax of s and returns its integer and fractional digits.
// The checks run in the order that gives the most useful message: an input
// that would be a fine decimal but for its sign is "negative", one that
// carries an exponent says so.
func split(s string) (intPart, frac string, err error) {
	if s == "" {
		return "", "", errors.New(`"" is empty`)
	}
	body := s
	negative := body[0] == '-'
	if negative {
		body = body[1:]
	}
	i := digitsEnd(body, 0)
	intPart = body[:i]
	if i < len(body) && body[i] == '.' {
		j := digitsEnd(body, i+1)
		frac = body[i+1 : j]
		if frac == "" {
			return "", "", notDecimal(s) // "12." and "12.e3"
		}
		i = j
	}
	if intPart == "" {
		return "", "", notDecimal(s) // ".5", "-", "NaN", "Inf", ...
	}
	if i < len(body) {
		if isExponent(body[i:]) {
			return "", "", fmt.Errorf("%s: exponents are not allowed", quote(s))
		}
		return "", "", notDecimal(s)
	}
	if negative {
		return "", "", fmt.Errorf("%s is negative", quote(s))
	}
	return intPart, frac, nil
}

// digitsEnd returns the index of the first non-digit in s at or after i.
func digitsEnd(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// isExponent reports whether s is exactly an exponent suffix like "e3",
// "E+03" or "e-2".
func isExponent(s string) bool {
	if len(s) < 2 || (s[0] != 'e' && s[0] != 'E') {
		return false
	}
	s = s[1:]
	if s[0] == '+' || s[0] == '-' {
		s = s[1:]
	}
	return s != "" && digitsEnd(s, 0) == len(s)
}

func notDecimal(s string) error {
	return fmt.Errorf("%s is not a decimal number", quote(s))
}

// quote quotes s for an error message, shortening inputs too long to read.
func quote(s string) string {
	const limit = 48
	if len(s) > limit {
		return strconv.Quote(s[:limit]) + "..."
	}
	return strconv.Quote(s)
}

// add64 returns a+b and whether it did not overflow.
func add64(a, b int64) (int64, bool) {
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		return 0, false
	}
	return s, true
}

// mul64 returns a*b and whether it did not overflow.
func mul64(a, b int64) (int64, bool) {
	ua, ub := uint64(a), uint64(b)
	if a < 0 {
		ua = -ua
	}
	if b < 0 {
		ub = -ub
	}
	hi, lo := bits.Mul64(ua, ub)
	if hi != 0 {
		return 0, false
	}
	if (a < 0) != (b < 0) {
		if lo > 1<<63 {
			return 0, false
		}
		return -int64(lo), true // -int64(1<<63) wraps to MinInt64, which is right
	}
	if lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}
