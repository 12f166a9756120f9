package spend

// An internal test: the fast paths must agree with the general code they
// bypass, parseObject and time's layout parser, which are unexported or not
// reachable on their own through Read.

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowCheckDate is checkDate without its fast path.
func slowCheckDate(s string) bool {
	t, err := time.Parse(time.DateOnly, s)
	return err == nil && t.Format(time.DateOnly) == s
}

func agreeOnValue(t *testing.T, s string) (fast bool) {
	t.Helper()
	u, ok := parseFlatObject(s)
	if !ok {
		return false
	}
	want, err := parseObject(s)
	require.NoError(t, err, "the fast path accepted %q, which parseObject refuses", s)
	require.True(t, reflect.DeepEqual(want, u), "%q: parseObject %+v, fast path %+v", s, want, u)
	return true
}

func TestFlatObjectsTakeTheFastPathAndAgree(t *testing.T) {
	for _, s := range []string{
		`{"costUSD": "12.34", "inputTokens": 1200, "outputTokens": 340}`,
		`{"outputTokens":0,"costUSD":12.5,"inputTokens":null}`,
		" \n{ \"costUSD\" : \"0\" }\n",
		`{"costUSD": "123456789012345678901234567890.123456789"}`,
		`{"costUSD": "7", "inputTokens": 9223372036854775807}`,
	} {
		assert.True(t, agreeOnValue(t, s), "%q takes the fast path", s)
	}
}

func TestUnusualObjectsAreLeftToTheDecoder(t *testing.T) {
	for _, s := range []string{
		`{"costUSD": "1", "models": {"m": {"costUSD": "1"}}}`,
		`{"costUSD": "1", "costUSD": "2"}`,
		`{"costUSD": "1", "inputTokens": null, "inputTokens": 2}`,
		`{"cost\u0055SD": "1"}`,
		`{"costUSD": "1\u0032"}`,
		`{"costUSD": "-1"}`,
		`{"costUSD": 1e3}`,
		`{"costUSD": 01}`,
		`{"costUSD": "1", "inputTokens": -0}`,
		`{"costUSD": "1", "inputTokens": 1.0}`,
		`{"costUSD": "1", "inputTokens": 99999999999999999999}`,
		`{"costUSD": "1", "inputTokens": "5"}`,
		`{"costUSD": "1",}`,
		`{"costUSD": "1"} x`,
		`{"costUSD": "1"`,
		`{"inputTokens": 1}`,
		`{}`,
		`{"costUSD": null}`,
		`{"costUSD": "1" "inputTokens": 1}`,
		`{"costUsd": "1"}`,
	} {
		assert.False(t, agreeOnValue(t, s), "%q goes to parseObject", s)
	}
}

func FuzzParseFlatObject(f *testing.F) {
	f.Add(`{"costUSD": "12.34", "inputTokens": 1200, "outputTokens": 340}`)
	f.Add(`{"costUSD":1.5,"outputTokens":null}`)
	f.Add(`{"costUSD": "1", "models": {}}`)
	f.Fuzz(func(t *testing.T, s string) { agreeOnValue(t, s) })
}

func TestEveryRealDateTakesTheFastPath(t *testing.T) {
	end := time.Date(2401, 1, 1, 0, 0, 0, 0, time.UTC)
	for d := time.Date(1599, 12, 1, 0, 0, 0, 0, time.UTC); d.Before(end); d = d.AddDate(0, 0, 1) {
		s := d.Format(time.DateOnly)
		if !isCanonicalDate(s) {
			require.Failf(t, "a real date is refused", "%s", s)
		}
	}
}

func TestImpossibleDatesAreRefused(t *testing.T) {
	for _, s := range []string{"2026-02-29", "2100-02-29", "2026-04-31", "2026-13-01", "2026-00-10", "2026-01-00", "2026-1-01", "2026/01/01", "20260101", " 2026-01-01", "2026-01-01 ", "+026-01-01"} {
		assert.False(t, isCanonicalDate(s), s)
		assert.False(t, slowCheckDate(s), s)
	}
	assert.True(t, isCanonicalDate("2000-02-29"))
	assert.True(t, isCanonicalDate("2024-02-29"))
}

func FuzzIsCanonicalDate(f *testing.F) {
	f.Add("2026-11-29")
	f.Add("0000-02-29")
	f.Add("9999-12-31")
	f.Fuzz(func(t *testing.T, s string) {
		if isCanonicalDate(s) != slowCheckDate(s) {
			t.Fatalf("%q: fast path %v, time.Parse %v", s, isCanonicalDate(s), slowCheckDate(s))
		}
	})
}
