package source_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/llmbudget/llmbudget/internal/metacontroller"

	"github.com/llmbudget/llmbudget/internal/money"
	"github.com/llmbudget/llmbudget/internal/period"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

// taskRecord is a TaskRecord as Kelos writes it, with spec fields as JSON text.
func taskRecord(name, spec string) []byte {
	return fmt.Appendf(nil, `{"apiVersion": "kelos.dev/v1alpha2", "kind": "TaskRecord", "metadata": {"name": %q, `+
		`"namespace": "team-ml", "labels": {"team": "ml"}}, "spec": {"taskRef": {"name": "t", "uid": "u"}, `+
		`"phase": "Succeeded"%s}}`, name, spec)
}

func TestDecodeRecordReadsKelosUsageExactly(t *testing.T) {
	done := time.Date(2026, 11, 30, 23, 30, 0, 0, time.UTC)
	tests := map[string]struct {
		spec string
		want source.Record
	}{
		"a quantity string, tokens and a model": {
			`, "model": "opus", "completionTime": "2026-11-30T23:30:00Z", ` +
				`"usage": {"costUSD": "1.25", "inputTokens": 1200, "outputTokens": 340}`,
			source.Record{Model: "opus", Completed: done,
				Usage: &spend.Usage{CostUSD: mustParse("1.25"), InputTokens: 1200, OutputTokens: 340}},
		},
		"a milli quantity is exact": {
			`, "completionTime": "2026-11-30T23:30:00Z", "usage": {"costUSD": "12500m"}`,
			source.Record{Completed: done, Usage: &spend.Usage{CostUSD: mustParse("12.5")}},
		},
		"a whole number cost": {
			`, "completionTime": "2026-11-30T23:30:00Z", "usage": {"costUSD": 3}`,
			source.Record{Completed: done, Usage: &spend.Usage{CostUSD: mustParse("3")}},
		},
		"nine decimals are kept": {
			`, "completionTime": "2026-11-30T23:30:00Z", "usage": {"costUSD": "0.123456789"}`,
			source.Record{Completed: done, Usage: &spend.Usage{CostUSD: money.FromNanos(123_456_789)}},
		},
		"usage without a cost has tokens only": {
			`, "completionTime": "2026-11-30T23:30:00Z", "usage": {"outputTokens": 7}`,
			source.Record{Completed: done, Usage: &spend.Usage{OutputTokens: 7}},
		},
		"no usage and no completion time are kept absent": {``, source.Record{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := source.DecodeRecord("team-ml/r", taskRecord("r", tc.spec))
			require.NoError(t, err)
			tc.want.Namespace, tc.want.Name, tc.want.Labels = "team-ml", "r", map[string]string{"team": "ml"}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDecodeRecordNamesTheRecordAndFieldThatDoNotRead(t *testing.T) {
	tests := map[string]struct {
		raw     []byte
		wantErr string
	}{
		"a cost in words": {taskRecord("r", `, "usage": {"costUSD": "five"}`),
			`TaskRecord team-ml/r: spec.usage.costUSD: "five" is not a Kubernetes quantity like 50, 12.5 or 12500m`},
		"a negative cost": {taskRecord("r", `, "usage": {"costUSD": "-1"}`),
			`TaskRecord team-ml/r: spec.usage.costUSD: "-1" is negative`},
		"a cost with an exponent past 30": {taskRecord("r", `, "usage": {"costUSD": "1e31"}`),
			`TaskRecord team-ml/r: spec.usage.costUSD: "1e31": exponent beyond ±30`},
		"a cost as an object": {taskRecord("r", `, "usage": {"costUSD": {}}`),
			`TaskRecord team-ml/r: spec.usage.costUSD: an object is not a quantity (a string or a number)`},
		"negative tokens": {taskRecord("r", `, "usage": {"inputTokens": -3}`),
			`TaskRecord team-ml/r: spec.usage.inputTokens: -3 is negative`},
		"fractional tokens": {taskRecord("r", `, "usage": {"outputTokens": 1.5}`),
			`TaskRecord team-ml/r: spec.usage.outputTokens: 1.5 is not a whole number`},
		"a completion time that is not a time": {taskRecord("r", `, "completionTime": "yesterday"`),
			`TaskRecord team-ml/r: spec.completionTime: "yesterday" is not an RFC 3339 time`},
		"a cost written twice": {taskRecord("r", `, "usage": {"costUSD": "1", "costUSD": "2"}`),
			`TaskRecord team-ml/r: duplicate field "spec.usage.costUSD"`},
		"metadata that does not decode is named by its key": {[]byte(`{"metadata": {"name": 5}}`),
			`TaskRecord team-ml/broken: `},
		"no spec": {[]byte(`{"metadata": {"name": "r", "namespace": "team-ml"}}`),
			`TaskRecord team-ml/r: spec is missing`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := source.DecodeRecord("team-ml/broken", tc.raw)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestARecordWithoutNamespaceIsInTheNamespaceOfItsKey(t *testing.T) {
	r, err := source.DecodeRecord("team-ml/r", []byte(`{"metadata": {"name": "r"}, "spec": {}}`))
	require.NoError(t, err)
	assert.Equal(t, "team-ml", r.Namespace)
}

func TestSumRecordsCountsWhatKelosCountsInThePeriod(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	// December 1st in Berlin: 2026-11-30T23:00Z to 2026-12-01T23:00Z.
	w := period.Window{Start: time.Date(2026, 12, 1, 0, 0, 0, 0, berlin),
		End: time.Date(2026, 12, 2, 0, 0, 0, 0, berlin)}
	use := func(cost string, in, out int64) *spend.Usage {
		return &spend.Usage{CostUSD: mustParse(cost), InputTokens: in, OutputTokens: out}
	}
	rec := func(model, at string, u *spend.Usage) source.Record {
		r := source.Record{Namespace: "team-ml", Name: model + at, Model: model, Usage: u}
		if at != "" {
			r.Completed, err = time.Parse(time.RFC3339, at)
			require.NoError(t, err)
		}
		return r
	}
	rs := []source.Record{
		rec("opus", "2026-11-30T23:00:00Z", use("1.5", 100, 10)),  // Berlin's midnight: the period's first instant
		rec("opus", "2026-12-01T12:00:00Z", use("2.25", 200, 20)), // inside
		rec("haiku", "2026-12-01T22:59:59Z", use("0.25", 50, 5)),  // the last second of the Berlin day
		rec("", "2026-12-01T10:00:00Z", use("1", 0, 0)),           // no model: in the total only
		rec("opus", "2026-11-30T22:59:59Z", use("100", 1, 1)),     // the previous Berlin day, though the same UTC day
		rec("opus", "2026-12-01T23:00:00Z", use("100", 1, 1)),     // the end is excluded
		rec("opus", "2026-12-01T13:00:00Z", nil),                  // no usage
		rec("opus", "", use("100", 1, 1)),                         // no completion time
	}
	got, err := source.SumRecords(rs, w)
	require.NoError(t, err)
	assert.Equal(t, source.RecordSum{
		Usage: spend.Usage{CostUSD: mustParse("5"), InputTokens: 350, OutputTokens: 35, Models: map[string]spend.Usage{
			"opus":  {CostUSD: mustParse("3.75"), InputTokens: 300, OutputTokens: 30},
			"haiku": {CostUSD: mustParse("0.25"), InputTokens: 50, OutputTokens: 5},
		}},
		Counted: 4, Outside: 2, NoUsage: 1, Incomplete: 1,
	}, got)
}

func TestSumRecordsRefusesASumPastTheLargestAmount(t *testing.T) {
	w := period.Window{Start: time.Unix(0, 0), End: time.Unix(100, 0)}
	big := source.Record{Namespace: "ns", Name: "a", Completed: time.Unix(1, 0), Usage: &spend.Usage{CostUSD: money.Max}}
	more := source.Record{Namespace: "ns", Name: "b", Completed: time.Unix(2, 0),
		Usage: &spend.Usage{CostUSD: money.FromNanos(1), InputTokens: math.MaxInt64}}
	_, err := source.SumRecords([]source.Record{big, more}, w)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TaskRecord ns/b: the period's spend passes")
}

// FuzzDecodeRecord checks that no record panics the reader, that every error names the record, and that what
// reads is non-negative usage that SumRecords adds up without panicking.
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range []string{
		`, "model": "opus", "completionTime": "2026-12-01T10:00:00Z", "usage": {"costUSD": "2.75", "inputTokens": 1}`,
		`, "completionTime": "2026-12-01T10:00:00+01:00", "usage": {"costUSD": 3, "outputTokens": null}`,
		`, "completionTime": "2026-12-01T10:00:00Z", "usage": {"costUSD": "12500m"}`,
		`, "usage": {"costUSD": "1e31"}`, `, "usage": {"costUSD": "1Ki", "inputTokens": -1}`,
		`, "usage": {"costUSD": {}}`, `, "usage": null, "completionTime": "x"`,
	} {
		f.Add(taskRecord("r", s))
	}
	f.Add([]byte(`{"metadata": {"name": "r", "name": "s"}, "spec": {}}`))
	f.Add([]byte(`{"metadata": {"labels": {"a": 1}}}`))
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	w := period.Window{Start: day, End: day.AddDate(0, 0, 1)}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := source.DecodeRecord("ns/key", raw)
		if err != nil {
			assert.Contains(t, err.Error(), "TaskRecord ")
			return
		}
		require.NotEmpty(t, r.Name)
		if r.Usage != nil {
			require.GreaterOrEqual(t, r.Usage.CostUSD.Sign(), 0)
			require.GreaterOrEqual(t, r.Usage.InputTokens, int64(0))
			require.GreaterOrEqual(t, r.Usage.OutputTokens, int64(0))
		}
		sum, err := source.SumRecords([]source.Record{r, r}, w)
		if err == nil {
			assert.Equal(t, 2, sum.Counted+sum.Outside+sum.Incomplete+sum.NoUsage)
		}
	})
}

func TestDecodeRecordsNamesEveryRecordItCannotReadAndCountsEachOnce(t *testing.T) {
	const done = `, "completionTime": "2026-12-01T10:00:00Z", "usage": {"costUSD": "2.75"}`
	good, other := taskRecord("a", done), taskRecord("b", done)
	wrongLabel := []byte(strings.Replace(string(taskRecord("c", done)), `"team": "ml"`, `"team": 1`, 1))
	unmatched := []byte(strings.Replace(string(taskRecord("d", `, "usage": {"costUSD": {}}`)), `"ml"`, `"web"`, 1))
	tests := map[string]struct {
		objs  map[string]metacontroller.Raw
		names []string
		bad   string
	}{
		"a record with a wrong-typed label is named, not dropped": {
			objs: map[string]metacontroller.Raw{"team-ml/a": good, "team-ml/c": wrongLabel},
			bad:  "TaskRecord team-ml/c: ", names: []string{"a"},
		},
		"a record listed under two keys counts once": {
			objs:  map[string]metacontroller.Raw{"team-ml/a": good, "a": good, "team-ml/b": other},
			names: []string{"a", "b"},
		},
		"a record that does not decode and that the selector does not match is none of the budget's": {
			objs:  map[string]metacontroller.Raw{"team-ml/a": good, "team-ml/d": unmatched},
			names: []string{"a"},
		},
	}
	sel := source.Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}})
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			related := metacontroller.ObjectMap{source.TaskRecordGroup: tc.objs}
			rs, bad := source.DecodeRecords(related, func(ns string) bool { return ns == "team-ml" }, sel)
			var names []string
			for _, r := range rs {
				names = append(names, r.Name)
			}
			assert.Equal(t, tc.names, names)
			if tc.bad == "" {
				assert.Empty(t, bad)
				return
			}
			require.Error(t, bad["team-ml"])
			assert.True(t, strings.HasPrefix(bad["team-ml"].Error(), tc.bad), bad["team-ml"])
		})
	}
}
