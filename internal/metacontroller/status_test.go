package metacontroller

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/stretchr/testify/assert"
	"golang.org/x/sync/semaphore"
)

func TestAHookErrorIs400WhenTheRequestIsAtFaultAnd500WhenTheServiceIs(t *testing.T) {
	cases := map[string]struct {
		err    error
		status int
		body   string
	}{
		"a request no hook can answer": {
			BadRequest("request has no parent"), http.StatusBadRequest, "request has no parent",
		},
		"a request error wrapped with context": {
			fmt.Errorf("budget: %w", BadRequest("no name")), http.StatusBadRequest, "budget: no name",
		},
		"a request error joined with another": {
			errors.Join(errors.New("x"), BadRequest("y")), http.StatusBadRequest, "x y",
		},
		"an error no one marked as the caller's": {
			errors.New("parent: malformed JSON at byte 3"), http.StatusInternalServerError, "parent: malformed JSON at byte 3",
		},
		"an error of the service's own": {
			errors.New("render the quota: name too long"), http.StatusInternalServerError, "render the quota: name too long",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := &server{cfg: Config{Now: time.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
			router := httprouter.New()
			b := bound{1 << 10, semaphore.NewWeighted(DefaultMaxInFlightBytes), DefaultMaxInFlightBytes}
			s.handle(router, "hook", func([]byte, time.Time) (any, Summary, error) { return nil, Summary{}, tc.err }, b)
			r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader("{}"))
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			router.ServeHTTP(w, r)
			assert.Equal(t, tc.status, w.Code)
			assert.Equal(t, tc.body+"\n", w.Body.String(), "one line")
		})
	}
}
