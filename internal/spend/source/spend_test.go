package source_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

// mustParse is money.Parse for amounts a test writes out.
func mustParse(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

func berlin(t testing.TB) *time.Location {
	t.Helper()
	loc, err := period.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	return loc
}

// window returns the Berlin period of the given kind containing now.
func window(t testing.TB, kind period.Kind, startDay int, now string) period.Window {
	t.Helper()
	at, err := time.Parse(time.RFC3339, now)
	require.NoError(t, err)
	return period.Spec{Kind: kind, StartDay: startDay, Location: berlin(t)}.Containing(at)
}

// requireSpendError checks that err has the given reason and message, and
// that the message names the key.
func requireSpendError(t *testing.T, err error, reason string, key, msg string) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, reason, source.ReasonOf(err))
	assert.Equal(t, msg, err.Error())
	assert.Contains(t, err.Error(), strconv.Quote(key), "the message names the key")
}

func TestReadTotal(t *testing.T) {
	src := source.Source{Format: api.Total, Key: "total-usd"}
	w := window(t, period.Monthly, 1, "2026-03-15T12:00:00Z")
	tests := map[string]struct {
		src  source.Source
		data map[string]string
		want spend.Usage
	}{
		"a plain decimal under the key": {
			src:  src,
			data: map[string]string{"total-usd": "12.34", "other": "not money"},
			want: spend.Usage{CostUSD: mustParse("12.34")},
		},
		"a JSON object under the key": {
			src:  src,
			data: map[string]string{"total-usd": `{"costUSD": 12.34, "inputTokens": 1200, "outputTokens": 340}`},
			want: spend.Usage{CostUSD: mustParse("12.34"), InputTokens: 1200, OutputTokens: 340},
		},
		"zero spend": {
			src:  src,
			data: map[string]string{"total-usd": "0"},
			want: spend.Usage{},
		},
		"an empty format means Total": {
			src:  source.Source{Key: "total-usd"},
			data: map[string]string{"total-usd": "5"},
			want: spend.Usage{CostUSD: mustParse("5")},
		},
		"a key prefix does not matter for Total": {
			src:  source.Source{Format: api.Total, Key: "total-usd", KeyPrefix: "spend-"},
			data: map[string]string{"total-usd": "5", "spend-bogus": "bogus"},
			want: spend.Usage{CostUSD: mustParse("5")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := source.Data(tc.src, tc.data, w)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadTotalErrors(t *testing.T) {
	src := source.Source{Format: api.Total, Key: "total-usd"}
	tests := map[string]struct {
		src    source.Source
		data   map[string]string
		reason string
		key    string
		msg    string
	}{
		"a missing key": {
			src: src, data: map[string]string{"total": "1"},
			reason: api.ReasonCostKeyMissing, key: "total-usd", msg: `key "total-usd" is missing`,
		},
		"no data at all": {
			src: src, data: nil,
			reason: api.ReasonCostKeyMissing, key: "total-usd", msg: `key "total-usd" is missing`,
		},
		"a decimal comma": {
			src: src, data: map[string]string{"total-usd": "12,5"},
			reason: api.ReasonInvalidCostData, key: "total-usd", msg: `key "total-usd": "12,5" is not a decimal number`,
		},
		"an empty value": {
			src: src, data: map[string]string{"total-usd": ""},
			reason: api.ReasonInvalidCostData, key: "total-usd", msg: `key "total-usd": "" is empty`,
		},
		"a negative value": {
			src: src, data: map[string]string{"total-usd": "-5"},
			reason: api.ReasonInvalidCostData, key: "total-usd", msg: `key "total-usd": "-5" is negative`,
		},
		"an exponent": {
			src: src, data: map[string]string{"total-usd": "5e2"},
			reason: api.ReasonInvalidCostData, key: "total-usd", msg: `key "total-usd": "5e2": exponents are not allowed`,
		},
		"an Inf value": {
			src: src, data: map[string]string{"total-usd": "Inf"},
			reason: api.ReasonInvalidCostData, key: "total-usd", msg: `key "total-usd": "Inf" is not a decimal number`,
		},
		"a bad JSON field": {
			src: src, data: map[string]string{"total-usd": `{"costUSD": "1", "inputTokens": -1}`},
			reason: api.ReasonInvalidCostData, key: "total-usd", msg: `key "total-usd": inputTokens: -1 is negative`,
		},
		"a JSON number cost with an exponent": {
			src: src, data: map[string]string{"total-usd": `{"costUSD": 1E2}`},
			reason: api.ReasonInvalidCostData, key: "total-usd",
			msg: `key "total-usd": costUSD: "1E2": exponents are not allowed`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := source.Data(tc.src, tc.data, period.Window{})
			requireSpendError(t, err, tc.reason, tc.key, tc.msg)
		})
	}
	t.Run("an invalid value unwraps to the parse error", func(t *testing.T) {
		_, err := source.Data(src, map[string]string{"total-usd": "x"}, period.Window{})
		_, parseErr := source.ParseValue("x")
		require.Error(t, parseErr)
		assert.Equal(t, parseErr.Error(), errors.Unwrap(err).Error())
	})
}

func TestReadDailyLedger(t *testing.T) {
	ledger := map[string]string{
		"spend-2026-02-28":        "100",  // the day before March
		"spend-2026-03-01":        "1.10", // March's first day
		"spend-2026-03-15":        `{"costUSD": 2.25, "inputTokens": 1000, "outputTokens": 200}`,
		"spend-2026-03-29":        "0.000000001",                        // the day Berlin springs forward
		"spend-2026-03-31":        `{"costUSD": "3", "inputTokens": 5}`, // March's last day
		"spend-2026-04-01":        "1000",                               // the day after March
		"total":                   "999",                                // no prefix: ignored
		"team-b/spend-2026-03-10": "50",                                 // prefix not at the start: ignored
		"notes":                   "written by the cost pipeline",       // ignored
	}
	tests := map[string]struct {
		prefix string
		data   map[string]string
		w      period.Window
		want   spend.Usage
	}{
		"a Berlin month sums only its own days": {
			prefix: "spend-", data: ledger, w: window(t, period.Monthly, 1, "2026-03-31T21:59:59Z"),
			want: spend.Usage{CostUSD: mustParse("6.350000001"), InputTokens: 1005, OutputTokens: 200},
		},
		"a UTC instant already in Berlin's April sums April": {
			prefix: "spend-", data: ledger, w: window(t, period.Monthly, 1, "2026-03-31T22:00:00Z"),
			want: spend.Usage{CostUSD: mustParse("1000")},
		},
		"a Berlin month from the 28th takes the days on both sides of March 1": {
			prefix: "spend-", data: ledger, w: window(t, period.Monthly, 28, "2026-03-10T12:00:00Z"),
			want: spend.Usage{CostUSD: mustParse("103.35"), InputTokens: 1000, OutputTokens: 200},
		},
		"a Berlin day sums that day only": {
			prefix: "spend-", data: ledger, w: window(t, period.Daily, 0, "2026-03-29T12:00:00+02:00"),
			want: spend.Usage{CostUSD: money.FromNanos(1)},
		},
		"a Berlin week starting Monday": {
			prefix: "spend-", data: ledger, w: window(t, period.Weekly, 1, "2026-03-31T12:00:00+02:00"),
			want: spend.Usage{CostUSD: mustParse("1003"), InputTokens: 5},
		},
		"a period with no ledger keys has zero usage": {
			prefix: "spend-", data: ledger, w: window(t, period.Monthly, 1, "2026-06-15T12:00:00Z"),
			want: spend.Usage{},
		},
		"an empty ConfigMap has zero usage": {
			prefix: "spend-", data: map[string]string{}, w: window(t, period.Monthly, 1, "2026-03-15T12:00:00Z"),
			want: spend.Usage{},
		},
		"an empty prefix makes every key a date": {
			prefix: "", data: map[string]string{"2026-03-01": "1", "2026-03-02": "2.5", "2026-04-01": "7"},
			w:    window(t, period.Monthly, 1, "2026-03-15T12:00:00Z"),
			want: spend.Usage{CostUSD: mustParse("3.5")},
		},
		"the empty window sums nothing": {
			prefix: "spend-", data: ledger, w: period.Window{},
			want: spend.Usage{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := source.Data(source.Source{Format: api.DailyLedger, KeyPrefix: tc.prefix}, tc.data, tc.w)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadDailyLedgerErrors(t *testing.T) {
	march := window(t, period.Monthly, 1, "2026-03-15T12:00:00Z")
	tests := map[string]struct {
		prefix string
		key    string
		value  string
		msg    string
	}{
		"month 13": {
			prefix: "spend-", key: "spend-2026-13-01", value: "1",
			msg: `key "spend-2026-13-01": "2026-13-01" after the prefix is not a date in YYYY-MM-DD form`,
		},
		"a word instead of a date": {
			prefix: "spend-", key: "spend-yesterday", value: "1",
			msg: `key "spend-yesterday": "yesterday" after the prefix is not a date in YYYY-MM-DD form`,
		},
		"a month without its leading zero": {
			prefix: "spend-", key: "spend-2026-3-01", value: "1",
			msg: `key "spend-2026-3-01": "2026-3-01" after the prefix is not a date in YYYY-MM-DD form`,
		},
		"February 30": {
			prefix: "spend-", key: "spend-2026-02-30", value: "1",
			msg: `key "spend-2026-02-30": "2026-02-30" after the prefix is not a date in YYYY-MM-DD form`,
		},
		"February 29 of a common year": {
			prefix: "spend-", key: "spend-2026-02-29", value: "1",
			msg: `key "spend-2026-02-29": "2026-02-29" after the prefix is not a date in YYYY-MM-DD form`,
		},
		"a date without dashes": {
			prefix: "spend-", key: "spend-20260301", value: "1",
			msg: `key "spend-20260301": "20260301" after the prefix is not a date in YYYY-MM-DD form`,
		},
		"a timestamp instead of a date": {
			prefix: "spend-", key: "spend-2026-03-01T00:00:00Z", value: "1",
			msg: `key "spend-2026-03-01T00:00:00Z": "2026-03-01T00:00:00Z" after the prefix is not a date in YYYY-MM-DD form`,
		},
		"the bare prefix": {
			prefix: "spend-", key: "spend-", value: "1",
			msg: `key "spend-": "" after the prefix is not a date in YYYY-MM-DD form`,
		},
		"a key that is not a date under an empty prefix": {
			prefix: "", key: "notes", value: "1",
			msg: `key "notes": "notes" after the prefix is not a date in YYYY-MM-DD form`,
		},
		"an invalid value in the period": {
			prefix: "spend-", key: "spend-2026-03-05", value: "12,5",
			msg: `key "spend-2026-03-05": "12,5" is not a decimal number`,
		},
		"an invalid value outside the period": {
			prefix: "spend-", key: "spend-2025-12-31", value: "-1",
			msg: `key "spend-2025-12-31": "-1" is negative`,
		},
		"an empty value": {
			prefix: "spend-", key: "spend-2026-03-05", value: "",
			msg: `key "spend-2026-03-05": "" is empty`,
		},
		"a JSON value with an unknown field": {
			prefix: "spend-", key: "spend-2026-03-05", value: `{"costUSD": "1", "model": "gpt"}`,
			msg: `key "spend-2026-03-05": unknown field "model"`,
		},
		"a key with a long prefix keeps its day": {
			prefix: strings.Repeat("p", 40) + "-", key: strings.Repeat("p", 40) + "-2026-03-05", value: "-1",
			msg: `key "` + strings.Repeat("p", 40) + `-2026-03-05": "-1" is negative`,
		},
		"a JSON cost with ten decimals": {
			prefix: "spend-", key: "spend-2026-03-05", value: `{"costUSD": 12.3456789012}`,
			msg: `key "spend-2026-03-05": costUSD: "12.3456789012" has more than 9 decimals`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			data := map[string]string{tc.prefix + "2026-03-02": "1", tc.key: tc.value, "other": "x"}
			if tc.prefix == "" {
				delete(data, "other")
			}
			_, err := source.Data(source.Source{Format: api.DailyLedger, KeyPrefix: tc.prefix}, data, march)
			requireSpendError(t, err, api.ReasonInvalidCostData, tc.key, tc.msg)
		})
	}
	t.Run("a period whose spend passes what money holds is refused", func(t *testing.T) {
		data := map[string]string{"spend-2026-03-01": "9000000000", "spend-2026-03-02": "9000000000"}
		_, err := source.Data(source.Source{Format: api.DailyLedger, KeyPrefix: "spend-"}, data, march)
		requireSpendError(t, err, api.ReasonInvalidCostData, "spend-2026-03-02",
			`key "spend-2026-03-02": the period's spend passes 9223372036.854775807 USD, the most an amount holds`)
	})
	t.Run("a key longer than Kubernetes allows is cut in the middle, keeping its day", func(t *testing.T) {
		prefix := strings.Repeat("p", 300)
		data := map[string]string{prefix + "2026-03-05": "-1"}
		_, err := source.Data(source.Source{Format: api.DailyLedger, KeyPrefix: prefix}, data, march)
		require.Error(t, err)
		assert.Equal(t, `key "`+strings.Repeat("p", 126)+`"..."`+strings.Repeat("p", 116)+`2026-03-05": "-1" is negative`,
			err.Error())
	})
	t.Run("the first bad key in sorted order is reported, every time", func(t *testing.T) {
		data := map[string]string{
			"spend-2026-03-03": "bad", "spend-2026-03-01": "1", "spend-zzz": "1",
			"spend-2026-03-02": "also bad", "spend-2026-03-04": "-1",
		}
		for range 20 {
			_, err := source.Data(source.Source{Format: api.DailyLedger, KeyPrefix: "spend-"}, data, march)
			requireSpendError(t, err, api.ReasonInvalidCostData, "spend-2026-03-02",
				`key "spend-2026-03-02": "also bad" is not a decimal number`)
		}
	})
}

// FuzzParseValue checks that no input panics and that what parses is a
// non-negative amount that survives a round trip through String.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{
		"12.34", "0", "", "-1", "NaN", "1e3", " 12", "12.3456789012",
		`{"costUSD": "12.34", "inputTokens": 1200, "outputTokens": 340}`,
		`{"costUSD": 12.345678901}`, `{"costUSD": 1E2}`, `{"costUSD": -0}`, `{"costUSD": null}`,
		`{"costUSD": "1", "inputTokens": 1.5}`, `{"costUSD": "1"} {}`, `{"costUsd": "1"}`,
		`{"costUSD": "1", "costUSD": "2"}`, `{"costUSD": [[[[1]]]]}`, "{\"costUSD\": \"1\"}\n", `{`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := source.ParseValue(s)
		if err != nil {
			assert.NotContains(t, err.Error(), "\n", "error for %q spans lines", s)
			return
		}
		require.GreaterOrEqual(t, u.CostUSD.Sign(), 0, "negative cost from %q", s)
		require.GreaterOrEqual(t, u.InputTokens, int64(0), "negative input tokens from %q", s)
		require.GreaterOrEqual(t, u.OutputTokens, int64(0), "negative output tokens from %q", s)
		back, err := money.Parse(u.CostUSD.String())
		require.NoError(t, err, "cost from %q does not re-parse", s)
		assert.Equal(t, 0, back.Cmp(u.CostUSD))
		if !strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") {
			plain, err := money.Parse(s)
			require.NoError(t, err, "%q parsed as a value but not as an amount", s)
			assert.Equal(t, spend.Usage{CostUSD: plain}, u)
		}
	})
}

// FuzzRead checks that Read never panics, reports errors naming a key of
// the data (or the Total key that is missing), and returns non-negative usage.
func FuzzRead(f *testing.F) {
	f.Add(false, "", "total-usd", "12.34", "other", "x", int64(1773576000), uint8(2))
	f.Add(true, "spend-", "spend-2026-03-15", `{"costUSD": 2.25, "inputTokens": 1000}`, "spend-2026-13-01", "1",
		int64(1773576000), uint8(2))
	f.Add(true, "spend-", "spend-2026-03-15", "1", "spend-2026-03-16", "2", int64(1773576000), uint8(1))
	f.Add(true, "", "2026-03-15", "1", "notes", "x", int64(1773576000), uint8(0))
	f.Add(true, "spend-", "spend-2026-03-29", "-1", "spend-", "", int64(1774742400), uint8(0))
	f.Add(false, "", "", "1", "k", "1", int64(0), uint8(7))
	loc, err := period.LoadLocation("Europe/Berlin")
	require.NoError(f, err)
	kinds := []period.Kind{period.Daily, period.Weekly, period.Monthly}
	f.Fuzz(func(t *testing.T, ledger bool, prefix, k1, v1, k2, v2 string, unix int64, kind uint8) {
		data := map[string]string{k1: v1, k2: v2}
		src := source.Source{Format: api.Total, Key: k1}
		if ledger {
			src = source.Source{Format: api.DailyLedger, KeyPrefix: prefix}
		}
		// Keep now within 1900-2100 so it is a plausible clock.
		const span = 200 * 365 * 86400
		now := time.Unix(-2208988800+(unix%span+span)%span, 0)
		spec := period.Spec{Kind: kinds[int(kind)%len(kinds)], StartDay: 1 + int(kind)%7, Location: loc}
		w := spec.Containing(now)

		u, err := source.Data(src, data, w)
		if err != nil {
			assert.NotContains(t, err.Error(), "\n")
			if source.ReasonOf(err) == api.ReasonCostKeyMissing {
				assert.NotContains(t, data, src.Key)
				assert.Equal(t, fmt.Sprintf("key %q is missing", src.Key), err.Error())
				return
			}
			named := false
			for k := range data {
				whole := strings.HasPrefix(err.Error(), fmt.Sprintf("key %q: ", k))
				cut := len(k) > 253 && strings.HasPrefix(err.Error(), fmt.Sprintf("key %q...", k[:126]))
				named = named || whole || cut
			}
			assert.True(t, named, "%q names no key of the data", err)
			return
		}
		require.GreaterOrEqual(t, u.CostUSD.Sign(), 0)
		require.GreaterOrEqual(t, u.InputTokens, int64(0))
		require.GreaterOrEqual(t, u.OutputTokens, int64(0))
		back, err := money.Parse(u.CostUSD.String())
		require.NoError(t, err)
		assert.Equal(t, 0, back.Cmp(u.CostUSD))
		if !ledger {
			want, err := source.ParseValue(data[k1])
			require.NoError(t, err)
			assert.Equal(t, want, u, "Total reads exactly the key's value")
		}
	})
}

func TestDecodeConfigMapReadsStringValues(t *testing.T) {
	cm, err := source.DecodeConfigMap([]byte(`{"kind":"ConfigMap","metadata":{"name":"s","namespace":"ns",` +
		`"labels":{"l":"v"}},"data":{"total-usd":"12.5"},"binaryData":{"b":"AA=="}}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"total-usd": "12.5"}, cm.Data)
	assert.Equal(t, "ns", cm.Metadata.Namespace)
	assert.Equal(t, map[string]string{"l": "v"}, cm.Metadata.Labels)
	cm, err = source.DecodeConfigMap([]byte(`{"metadata":{"name":"s"}}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{}, cm.Data, "no data is no keys")
}

func TestDecodeConfigMapNamesWhatItCannotRead(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"a number":            {`{"data":{"b":"1","a":12.5}}`, `key "a": the value is 12.5, not a string`},
		"the first in order":  {`{"data":{"z":true,"m":[1]}}`, `key "m": the value is an array, not a string`},
		"data that is a list": {`{"data":[]}`, `data: Invalid value: "array": must be of type object`},
		"a label":             {`{"metadata":{"labels":{"team":7}}}`, `label "team": the value is 7, not a string`},
		"an annotation": {
			`{"metadata":{"annotations":{"llmbudget.dev/period-start":{}}}}`,
			`annotation "llmbudget.dev/period-start": the value is an object, not a string`,
		},
		"a key written twice": {`{"data":{"total-usd":"900","total-usd":"1"}}`, `duplicate field "data.total-usd"`},
		"a label written twice": {
			`{"metadata":{"labels":{"a":"x","a":"y"}}}`, `duplicate field "metadata.labels.a"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := source.DecodeConfigMap([]byte(tc.in))
			require.Error(t, err)
			assert.Equal(t, api.ReasonInvalidCostData, source.ReasonOf(err))
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func FuzzDecodeConfigMap(f *testing.F) {
	f.Add([]byte(`{"kind":"ConfigMap","data":{"total-usd":"12.5","k":"{\"costUSD\": \"1\"}"},"binaryData":{"b":"AA=="}}`))
	f.Add([]byte(`{"DATA":{"a":"\u00e9"},"data":{"a":1}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		cm, err := source.DecodeConfigMap(raw)
		if err != nil {
			assert.Equal(t, api.ReasonInvalidCostData, source.ReasonOf(err))
			assert.Nil(t, cm.Data)
		} else {
			assert.NotNil(t, cm.Data)
		}
	})
}
