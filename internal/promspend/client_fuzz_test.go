package promspend_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/llmbudget/llmbudget/internal/promspend"
)

// FuzzQuery: whatever a server answers, Query returns a vector within the limits or an error
// quoting at most an excerpt, never a panic; and the same query within a share of a run's memory
// succeeds only if the answer fitted what the share could take, and its release frees all of it.
func FuzzQuery(f *testing.F) {
	f.Add(200, []byte(vector(`{"model":"gpt-4o"}`, `{}`)))
	f.Add(200, []byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{}]}]}}`))
	f.Add(200, []byte(`{"status":"success","data":{"resultType":"matrix","result":[]},"warnings":["w"]}`))
	f.Add(400, []byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
	f.Add(502, []byte(`<html>bad gateway</html>`))
	f.Add(200, []byte(`{"status":"success","data":{"resultType":"vector","result":{}}}`))
	var mu sync.Mutex
	var status int
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	limits := promspend.Limits{Body: 1 << 16, Series: 5, LabelValue: 64}
	c, err := promspend.NewClient(srv.URL, limits)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, code int, answer []byte) {
		if code < 200 || code > 599 {
			return
		}
		mu.Lock()
		status, body = code, answer
		mu.Unlock()
		memory := promspend.NewMemory(1 << 10)
		share, err := memory.Take(context.Background(), 256, true)
		if err != nil {
			t.Fatal(err)
		}
		_, _, n, shareErr := c.QueryWithin(promspend.WithShare(context.Background(), share), "up",
			time.Unix(1795176000, 0), promspend.Allowance{Series: limits.Series, Body: limits.Body})
		if shareErr == nil && n > share.Held() {
			t.Fatalf("an answer of %d bytes within a share of %d", n, share.Held())
		}
		if share.Held() > memory.Size() {
			t.Fatalf("a share of %d bytes of %d", share.Held(), memory.Size())
		}
		share.Release()
		short, cancel := context.WithTimeout(context.Background(), time.Second)
		whole, err := memory.Take(short, memory.Size(), false)
		cancel()
		if err != nil {
			t.Fatalf("the memory is not all free once the share is released: %v", err)
		}
		whole.Release()

		vec, warnings, err := c.Query(context.Background(), "up", time.Unix(1795176000, 0))
		if err != nil {
			if len(err.Error()) > 2*promspend.Excerpt {
				t.Fatalf("error of %d bytes: %.300s", len(err.Error()), err)
			}
			return
		}
		if len(vec) > limits.Series || len(warnings) > 11 {
			t.Fatalf("%d series, %d warnings", len(vec), len(warnings))
		}
		for _, s := range vec {
			for _, v := range s.Metric {
				if len(v) > limits.LabelValue {
					t.Fatalf("label value of %d bytes", len(v))
				}
			}
		}
	})
}
