package promspend_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/promspend"
)

var instant = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// vector is a successful answer holding series, each written as its metric's JSON.
func vector(series ...string) string {
	results := make([]string, len(series))
	for i, m := range series {
		results[i] = `{"metric":` + m + `,"value":[1795176000,"1"]}`
	}
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(results, ",") + `]}}`
}

func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func query(t *testing.T, url string, limits promspend.Limits) (int, []string, error) {
	t.Helper()
	c, err := promspend.NewClient(url, limits)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	vec, warnings, err := c.Query(ctx, "up", instant)
	return len(vec), warnings, err
}

func TestAnAnswerWithinTheLimitsIsReturned(t *testing.T) {
	url := serve(t, answer(200, vector(`{"model":"gpt-4o"}`, `{"model":"claude"}`)))
	n, warnings, err := query(t, url, promspend.DefaultLimits)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Empty(t, warnings)
}

func TestAnAnswerLargerThanTheLimitFailsNamingItWithoutBeingReadToItsEnd(t *testing.T) {
	endless := func(gz bool) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			var out interface {
				Write([]byte) (int, error)
			} = w
			if gz {
				w.Header().Set("Content-Encoding", "gzip")
				z := gzip.NewWriter(w)
				defer z.Close()
				out = z
			}
			_, _ = out.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[`))
			pad := []byte(strings.Repeat(" ", 64<<10))
			for range 1 << 14 { // 1 GiB, unless the client hangs up first
				if _, err := out.Write(pad); err != nil {
					return
				}
			}
		}
	}
	tests := map[string]struct {
		handler http.HandlerFunc
		limits  promspend.Limits
		want    string
	}{
		"a plain answer past 32 MiB": {endless(false), promspend.DefaultLimits, "more than 32 MiB, the limit of one answer"},
		"a gzip bomb, bounded after decompression": {endless(true), promspend.Limits{Body: 1 << 20, Series: 10},
			"more than 1 MiB, the limit of one answer"},
		"an answer one byte past a small limit": {answer(200, vector()), promspend.Limits{Body: int64(len(vector()) - 1)},
			fmt.Sprintf("more than %d bytes, the limit of one answer", len(vector())-1)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, _, err := query(t, serve(t, tc.handler), tc.limits)
			require.Error(t, err)
			assert.ErrorIs(t, err, promspend.ErrTooLarge)
			assert.Contains(t, err.Error(), tc.want)
			assert.Less(t, time.Since(start), 20*time.Second, "the rest of the answer was not read")
		})
	}
	t.Run("an answer of exactly the limit is whole", func(t *testing.T) {
		_, _, err := query(t, serve(t, answer(200, vector())), promspend.Limits{Body: int64(len(vector())), Series: 1})
		assert.NoError(t, err)
	})
}

func TestAnAnswerWithTooManySeriesOrTooLongALabelValueFails(t *testing.T) {
	many := make([]string, 11)
	for i := range many {
		many[i] = fmt.Sprintf(`{"model":"m%d"}`, i)
	}
	long := strings.Repeat("x", 100_000)
	limits := promspend.Limits{Body: 1 << 20, Series: 10, LabelValue: 1024}
	tests := map[string]struct {
		body string
		want string
	}{
		"11 series of at most 10": {vector(many...), "answered more than the 10 series allowed"},
		"a model name of 100,000 bytes": {vector(`{"model":"` + long + `"}`),
			"answered a series whose label model holds 100000 bytes, more than the 1024 allowed"},
		"a label name of 100,000 bytes with a long value": {vector(`{"` + long + `":"` + long + `"}`),
			"more than the 1024 allowed"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, err := query(t, serve(t, answer(200, tc.body)), limits)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Less(t, len(err.Error()), 2*promspend.Excerpt, "quotes an excerpt only")
		})
	}
	t.Run("10 series and a value of 1024 bytes pass", func(t *testing.T) {
		n, _, err := query(t, serve(t, answer(200, vector(append(many[:9], `{"model":"`+long[:1024]+`"}`)...))), limits)
		require.NoError(t, err)
		assert.Equal(t, 10, n)
	})
}

func TestARedirectIsFollowedOnlyWithinTheSameHost(t *testing.T) {
	var elsewhere atomic.Int32
	other := serve(t, func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		answer(200, vector(`{"model":"stolen"}`))(w, r)
	})
	t.Run("to another host: refused, and the other host never asked", func(t *testing.T) {
		url := serve(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other+r.URL.Path, http.StatusTemporaryRedirect)
		})
		_, _, err := query(t, url, promspend.DefaultLimits)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "refused: only redirects within the same host are followed")
		assert.Zero(t, elsewhere.Load())
	})
	t.Run("within the host: followed", func(t *testing.T) {
		var url string
		url = serve(t, func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasPrefix(r.URL.Path, "/prometheus/") {
				http.Redirect(w, r, url+"/prometheus"+r.URL.Path, http.StatusTemporaryRedirect)
				return
			}
			answer(200, vector(`{"model":"gpt-4o"}`))(w, r)
		})
		n, _, err := query(t, url, promspend.DefaultLimits)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	})
}

func TestWhatTheServerSaysIsQuotedAsAnExcerptOnly(t *testing.T) {
	huge := strings.Repeat("A", 5<<20)
	tests := map[string]http.HandlerFunc{
		"an API error with a 5 MiB message": answer(400, `{"status":"error","errorType":"bad_data","error":"`+huge+`"}`),
		"a 502 with a 5 MiB page":           answer(502, huge),
		"a 200 that is not JSON":            answer(200, huge),
		"a success whose data is a string": answer(200,
			`{"status":"success","data":{"resultType":"string","result":[1,"`+huge+`"]}}`),
	}
	for name, h := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, err := query(t, serve(t, h), promspend.DefaultLimits)
			require.Error(t, err)
			assert.LessOrEqual(t, len(err.Error()), promspend.Excerpt)
		})
	}
	t.Run("a thousand warnings of 16 KiB", func(t *testing.T) {
		warnings := make([]string, 1000)
		for i := range warnings {
			warnings[i] = `"` + huge[:16<<10] + `"`
		}
		body := strings.TrimSuffix(vector(), "}") + `,"warnings":[` + strings.Join(warnings, ",") + `]}`
		_, said, err := query(t, serve(t, answer(200, body)), promspend.DefaultLimits)
		require.NoError(t, err)
		require.Len(t, said, 11)
		for _, w := range said {
			assert.LessOrEqual(t, len(w), promspend.Excerpt)
		}
		assert.Equal(t, "and 990 more warnings", said[10])
	})
}
