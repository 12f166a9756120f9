package migrate

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// limitDecimals is the precision of spec.limitUSD in llmbudget (micro-dollars).
const limitDecimals = 6

// maxExponent bounds the decimal exponent a quantity may carry ("1e30"), so
// that a hostile input cannot make the conversion compute huge powers.
const maxExponent = 30

// errNegative marks an amount below zero; callers name the field.
var errNegative = errors.New("is negative")

// isPlainDecimal reports whether s is digits with an optional fraction, the
// pattern ^[0-9]+(\.[0-9]+)?$ of the operator's monthlyLimitUSD.
func isPlainDecimal(s string) bool {
	intPart, frac, hasPoint := strings.Cut(s, ".")
	return allDigits(intPart) && (!hasPoint || allDigits(frac))
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// fitDecimals returns the plain decimal s unchanged when it has at most max
// decimals, and otherwise without the trailing zeros beyond max. It refuses
// s when a significant digit lies beyond max: rounding would change the
// limit, and that is the user's call, not a converter's.
func fitDecimals(s string, max int) (string, error) {
	intPart, frac, _ := strings.Cut(s, ".")
	if len(frac) <= max {
		return s, nil
	}
	if strings.TrimRight(frac[max:], "0") != "" {
		return "", fmt.Errorf("%q has more than %d decimals, and llmbudget limits are exact to %d (micro-dollars); round it yourself", s, max, max)
	}
	frac = strings.TrimRight(frac[:max], "0")
	if frac == "" {
		return intPart, nil
	}
	return intPart + "." + frac, nil
}

// trimLeadingZeros drops the zeros before a plain decimal's first digit
// ("007.5" is 7.5): the operator accepts them, the LLMCostBudget CRD does not.
func trimLeadingZeros(s string) string {
	trimmed := strings.TrimLeft(s, "0")
	if trimmed == "" || trimmed[0] == '.' {
		return "0" + trimmed
	}
	return trimmed
}

// isZeroDecimal reports whether the plain decimal s is zero.
func isZeroDecimal(s string) bool {
	return strings.Trim(s, "0.") == ""
}

// decimalSuffix holds the power of ten of each decimal SI suffix that a
// Kubernetes quantity accepts.
var decimalSuffix = map[string]int{
	"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}

// binarySuffix holds the power of two of each binary SI suffix.
var binarySuffix = map[string]uint{
	"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60,
}

// quantityToDecimal converts a Kubernetes quantity literal ("12500m", "50",
// "1.5e2", "2Ki") exactly to a plain decimal with at most max decimals and
// no trailing zeros ("12.5"). It follows the grammar of apimachinery's
// resource.ParseQuantity but, unlike it, never rounds: a value that needs
// more than max decimals is refused. A negative value returns errNegative.
func quantityToDecimal(s string, max int) (string, error) {
	mantissa, scale, negative, suffix, err := splitQuantity(s)
	if err != nil {
		return "", err
	}
	exp10, exp2, err := suffixPowers(suffix)
	if err != nil {
		return "", fmt.Errorf("%q: %w", s, err)
	}
	if negative && mantissa.Sign() != 0 {
		return "", errNegative
	}
	// value = mantissa * 2^exp2 * 10^(exp10 - scale); scaled by 10^max it
	// must be a whole number for the conversion to be exact.
	num := new(big.Int).Lsh(mantissa, exp2)
	shift := exp10 - scale + max
	if shift >= 0 {
		num.Mul(num, pow10(shift))
	} else {
		q, r := new(big.Int).QuoRem(num, pow10(-shift), new(big.Int))
		if r.Sign() != 0 {
			what := fmt.Sprintf("%q has", s)
			if exact := formatScaled(num, -shift+max); len(exact) <= 40 {
				what = fmt.Sprintf("%q is %s, which has", s, exact)
			}
			return "", fmt.Errorf("%s more than %d decimals, and llmbudget limits are exact to %d (micro-dollars); round it yourself", what, max, max)
		}
		num = q
	}
	return formatScaled(num, max), nil
}

// splitQuantity parses <sign><digits>[.<digits>]<suffix> and returns the
// digits as one integer with the number of fraction digits.
func splitQuantity(s string) (mantissa *big.Int, scale int, negative bool, suffix string, err error) {
	rest := s
	if rest != "" && (rest[0] == '+' || rest[0] == '-') {
		negative = rest[0] == '-'
		rest = rest[1:]
	}
	i := 0
	for i < len(rest) && isDigit(rest[i]) {
		i++
	}
	intPart := rest[:i]
	rest = rest[i:]
	var frac string
	if rest != "" && rest[0] == '.' {
		j := 1
		for j < len(rest) && isDigit(rest[j]) {
			j++
		}
		frac = rest[1:j]
		rest = rest[j:]
	}
	if intPart == "" && frac == "" {
		return nil, 0, false, "", fmt.Errorf("%q is not a quantity (like 50, 12.5 or 12500m)", s)
	}
	mantissa, _ = new(big.Int).SetString(intPart+frac, 10)
	return mantissa, len(frac), negative, rest, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// suffixPowers returns the powers of ten and two a quantity suffix stands for.
func suffixPowers(suffix string) (exp10 int, exp2 uint, err error) {
	if p, ok := decimalSuffix[suffix]; ok {
		return p, 0, nil
	}
	if p, ok := binarySuffix[suffix]; ok {
		return 0, p, nil
	}
	if suffix[0] == 'e' || suffix[0] == 'E' {
		digits := suffix[1:]
		sign := 1
		if digits != "" && (digits[0] == '+' || digits[0] == '-') {
			if digits[0] == '-' {
				sign = -1
			}
			digits = digits[1:]
		}
		if allDigits(digits) {
			digits = strings.TrimLeft(digits, "0")
			if len(digits) > 2 {
				return 0, 0, fmt.Errorf("exponent beyond ±%d", maxExponent)
			}
			e := 0
			for i := 0; i < len(digits); i++ {
				e = e*10 + int(digits[i]-'0')
			}
			if e > maxExponent {
				return 0, 0, fmt.Errorf("exponent beyond ±%d", maxExponent)
			}
			return sign * e, 0, nil
		}
	}
	return 0, 0, fmt.Errorf("unknown suffix %q (a quantity takes n, u, m, k, M, G, T, P, E, Ki to Ei, or an exponent like e3)", suffix)
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// formatScaled prints v / 10^decimals as a plain decimal without trailing zeros.
func formatScaled(v *big.Int, decimals int) string {
	digits := v.String()
	if len(digits) <= decimals {
		digits = strings.Repeat("0", decimals-len(digits)+1) + digits
	}
	intPart, frac := digits[:len(digits)-decimals], strings.TrimRight(digits[len(digits)-decimals:], "0")
	if frac == "" {
		return intPart
	}
	return intPart + "." + frac
}
