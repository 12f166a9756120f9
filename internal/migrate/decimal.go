package migrate

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
)

// maxExponent bounds the decimal exponent a quantity may carry ("1e30"): resource.ParseQuantity keeps "1e999999"
// as 1 at scale 999999, and reading it as a decimal would compute a power of ten with a million digits.
const maxExponent = 30

// maxQuantityLen bounds a cost's length: a million-digit mantissa takes seconds to parse; real costs need a few.
const maxQuantityLen = 100

var quantityExponent = regexp.MustCompile(`[eE]([+-]?[0-9]+)$`)

// quantity reads a Kubernetes quantity ("12500m", "50", "1.5e2", "2Ki") as the exact plain decimal it stands for,
// without trailing zeros ("12.5"): the value Kelos and the API server read, since they parse it alike
// (resource.ParseQuantity, which rounds up below a nano-dollar).
func quantity(s string) (string, money.Amount, error) {
	if len(s) > maxQuantityLen {
		return "", money.Amount{}, fmt.Errorf("%.40q... is longer than %d characters", s, maxQuantityLen)
	}
	if m := quantityExponent.FindStringSubmatch(s); m != nil {
		if e, err := strconv.Atoi(m[1]); err != nil || e < -maxExponent || e > maxExponent {
			return "", money.Amount{}, fmt.Errorf("%q: exponent beyond ±%d", s, maxExponent)
		}
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return "", money.Amount{}, fmt.Errorf("%q is not a Kubernetes quantity like 50, 12.5 or 12500m: %w", s, err)
	}
	if q.Sign() < 0 {
		return "", money.Amount{}, fmt.Errorf("%q is negative", s)
	}
	d := trimZeros(q.AsDec().String())
	a, err := money.Parse(d)
	return d, a, err
}

// kelosLimit reads Kelos's maxCostUSD as a limit; a zero, blocking everything in Kelos, has no llmbudget match.
func kelosLimit(text string) (string, error) {
	limit, a, err := quantity(text)
	switch {
	case err != nil:
		return "", err
	case a.Sign() == 0:
		return "", fmt.Errorf("%q blocks every matching Task in Kelos, but an llmbudget limit must be greater than 0: "+
			"set a positive maxCostUSD, or remove it and keep a token limit", text)
	}
	if err := exactLimit(limit); err != nil {
		if limit != text {
			err = fmt.Errorf("%q reads as %s: %w", text, limit, err)
		}
		return "", err
	}
	return limit, nil
}

// operatorLimit reads the operator's monthlyLimitUSD, a plain decimal, and keeps its literal digits ("1500.00")
// unless it has more decimals than a limit holds; zeros beyond those say nothing and are dropped.
func operatorLimit(s string) (string, error) {
	a, err := money.Parse(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w (the operator's pattern is ^[0-9]+(\\.[0-9]+)?$)", err)
	case a.Sign() == 0:
		return "", fmt.Errorf("%q must be greater than 0 (the operator cannot evaluate a zero limit either)", s)
	}
	if _, frac, _ := strings.Cut(s, "."); len(frac) > api.LimitDecimals {
		s = trimZeros(s)
	}
	// The operator accepts leading zeros ("007.5"), the LLMCostBudget CRD does not.
	if s = strings.TrimLeft(s, "0"); s == "" || s[0] == '.' {
		s = "0" + s
	}
	return s, exactLimit(s)
}

// exactLimit refuses a limit more precise than spec.limitUSD rather than round it: the user's call, not ours.
func exactLimit(s string) error {
	if _, err := money.ParseMaxDecimals(s, api.LimitDecimals); err != nil {
		return fmt.Errorf("%w, and llmbudget limits are exact to micro-dollars: round it yourself", err)
	}
	return api.CheckLimit(s)
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}
