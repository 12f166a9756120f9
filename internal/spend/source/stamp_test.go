package source_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/spend"
	"github.com/llmbudget/llmbudget/internal/spend/source"
)

const where = "ConfigMap team-ml/llm-spend"

func TestAStampIsTheRFC3339TimeOfTheSpendAsOfAnnotation(t *testing.T) {
	cases := map[string]struct {
		value string
		want  time.Time
	}{
		"in UTC, to the second, as the writer stamps it": {"2026-11-29T07:25:00Z", time.Date(2026, 11, 29, 7, 25, 0, 0,
			time.UTC)},
		"with an offset and a fraction, as another pipeline may": {"2026-11-29T08:25:00.5+01:00",
			time.Date(2026, 11, 29, 7, 25, 0, 5e8, time.UTC)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := source.StampOf(where, map[string]string{api.AnnotationSpendAsOf: tc.value, "other": "x"})
			assert.Equal(t, where, st.Source)
			assert.True(t, tc.want.Equal(st.AsOf), "%v", st.AsOf)
			assert.Empty(t, st.Problem)
		})
	}
}

func TestAStampThatIsMissingOrNoTimeSaysWhatIsWrong(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		want        string
	}{
		"no annotations at all": {nil, "has no llmbudget.dev/spend-as-of annotation"},
		"only the period's start": {map[string]string{api.AnnotationPeriodStart: "2026-11-01T00:00:00Z"},
			"has no llmbudget.dev/spend-as-of annotation"},
		"a date without a time": {map[string]string{api.AnnotationSpendAsOf: "2026-11-29"},
			`has annotation llmbudget.dev/spend-as-of "2026-11-29", which is not an RFC 3339 time`},
		"a Unix time": {map[string]string{api.AnnotationSpendAsOf: "1795937100"},
			`has annotation llmbudget.dev/spend-as-of "1795937100", which is not an RFC 3339 time`},
		"a huge value, quoted shortened": {map[string]string{api.AnnotationSpendAsOf: strings.Repeat("x", 1<<16)},
			`has annotation llmbudget.dev/spend-as-of "` + strings.Repeat("x", 48) +
				`"..., which is not an RFC 3339 time`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := source.StampOf(where, tc.annotations)
			assert.Equal(t, spend.Stamp{Source: where, Problem: tc.want}, st)
		})
	}
}

func TestTheOlderOfTwoStampsIsTheOneWhoseFiguresAreOlderOrOfUnknownAge(t *testing.T) {
	at := func(name, asOf string) spend.Stamp {
		return source.StampOf("ConfigMap "+name, map[string]string{api.AnnotationSpendAsOf: asOf})
	}
	early, late := at("a/early", "2026-11-29T07:00:00Z"), at("b/late", "2026-11-29T07:20:00Z")
	unstamped := source.StampOf("ConfigMap c/unstamped", nil)
	otherUnstamped := source.StampOf("ConfigMap d/unstamped", nil)
	cases := map[string]struct{ s, t, want spend.Stamp }{
		"the earlier time, either way round":           {late, early, early},
		"the earlier time, the other way round":        {early, late, early},
		"the first on a tie":                           {early, at("e/same", "2026-11-29T08:00:00+01:00"), early},
		"a stamp of unknown age over any time":         {early, unstamped, unstamped},
		"a stamp of unknown age over any time, first":  {unstamped, early, unstamped},
		"the first of two of unknown age":              {unstamped, otherUnstamped, unstamped},
		"any stamp over none (no source read)":         {spend.Stamp{}, late, late},
		"any stamp over none, the other way round":     {unstamped, spend.Stamp{}, unstamped},
		"none of two is none":                          {spend.Stamp{}, spend.Stamp{}, spend.Stamp{}},
		"a later time over none, though young as none": {late, spend.Stamp{}, late},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, tc.s.Older(tc.t)) })
	}
}

// FuzzStampOf checks that any annotation value gives either a time that is the value parsed, or a one-line
// problem of bounded length, never both.
func FuzzStampOf(f *testing.F) {
	for _, v := range []string{
		"2026-11-29T07:25:00Z", "2026-11-29T08:25:00.123456789+01:00", "2026-11-29", "1795937100", "",
		"2026-11-29T07:25:00", "2026-13-01T00:00:00Z", "2026-11-29T24:00:00Z", "0000-01-01T00:00:00Z",
		"9999-12-31T23:59:59Z", "2026-11-29t07:25:00z", "2026-11-29T07:25:00+25:00", "\n", "\"quoted\"",
	} {
		f.Add(v, true)
	}
	f.Add("", false)
	f.Fuzz(func(t *testing.T, value string, present bool) {
		annotations := map[string]string{}
		if present {
			annotations[api.AnnotationSpendAsOf] = value
		}
		st := source.StampOf(where, annotations)
		assert.Equal(t, where, st.Source)
		if st.Problem != "" {
			assert.True(t, st.AsOf.IsZero(), "a time and a problem")
			assert.NotContains(t, st.Problem, "\n")
			assert.LessOrEqual(t, len(st.Problem), 300, "the value is quoted shortened")
			return
		}
		require.True(t, present, "a time without an annotation")
		want, err := time.Parse(time.RFC3339, value)
		require.NoError(t, err)
		assert.True(t, want.Equal(st.AsOf))
	})
}
