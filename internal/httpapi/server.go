// Package httpapi is the thin HTTP adapter in front of the hook functions: routing, request guards (content
// type, size, JSON shape), response encoding and one log line per hook call. It holds no budget logic. Every
// hook answer is 200 with a response Metacontroller decodes strictly, or a 4xx with a one-line reason (shown
// to users in a SyncError Event) when the request is at fault; a hook's own failure, a panic included, is a
// 500, not a crashed process. Memory stays
// bounded however many callers: past Config.MaxInFlightBytes, a call is answered 429 with Retry-After.
package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/sync/semaphore"

	"github.com/llmbudget/llmbudget/internal/budget"
	"github.com/llmbudget/llmbudget/internal/clusterbudget"
	"github.com/llmbudget/llmbudget/internal/decode"
	"github.com/llmbudget/llmbudget/internal/hookwire"
	"github.com/llmbudget/llmbudget/internal/workload"
)

// Memory bounds; docs/operations.md ("Sizing the service") derives them from the Deployment's 128Mi limit.
const (
	// DefaultMaxBodyBytes bounds a hook request. The largest real one carries a spend ConfigMap (1 MiB of data at
	// most, twice that JSON-escaped) or a workload (1.5 MiB at most, etcd's limit) next to a budget of tens of KiB.
	DefaultMaxBodyBytes = 4 << 20
	// DefaultMaxInFlightBytes is four maximum-size requests in flight, or 256 ordinary ones (see MinCallWeight).
	DefaultMaxInFlightBytes = 16 << 20
	// MinCallWeight is what any hook call counts against the in-flight bound, however small its body: a call's
	// goroutine, connection buffers and decoded request cost tens of KiB beyond the body itself.
	MinCallWeight = 64 << 10
)

// retryAfterSeconds is a refused caller's wait; Metacontroller honours Retry-After on 429 and requeues the sync.
const retryAfterSeconds = "1"

// Config configures the handler.
type Config struct {
	Now          func() time.Time // the clock; required so tests and `eval` can fix it
	Logger       *slog.Logger     // receives one line per hook call; required
	MaxBodyBytes int64            // bounds request bodies; DefaultMaxBodyBytes when 0
	// MaxInFlightBytes bounds the request bytes worked on at once (each call counts its body, at least
	// MinCallWeight): DefaultMaxInFlightBytes when 0, never less than MaxBodyBytes, so any call can be served.
	MaxInFlightBytes int64
	Ready            func() bool    // reports readiness for /readyz; always ready when nil
	Observe          func(HookCall) // when set, told about every hook call (for metrics)
}

// HookCall is one hook call, as logged and told to Observe.
type HookCall struct {
	Hook     string
	Status   int
	Duration time.Duration
	Budget   string // namespace/name, or a cluster budget's name
	State    string // the budget's resulting state, where one was evaluated
	Reason   string // the BudgetEvaluated reason, or the refusal reason
	Workload string // kind namespace/name, for the workload hooks
}

// New returns the service's router with every hook route and the probes; the caller may add routes of its own
// (metrics, pprof) to the same router.
func New(cfg Config) (*httprouter.Router, error) {
	switch {
	case cfg.Now == nil:
		return nil, errors.New("httpapi: Config.Now is required")
	case cfg.Logger == nil:
		return nil, errors.New("httpapi: Config.Logger is required")
	case cfg.MaxBodyBytes < 0:
		return nil, fmt.Errorf("httpapi: Config.MaxBodyBytes must not be negative, got %d", cfg.MaxBodyBytes)
	}
	cfg.MaxBodyBytes = cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	cfg.MaxInFlightBytes = cmp.Or(cfg.MaxInFlightBytes, max(DefaultMaxInFlightBytes, cfg.MaxBodyBytes))
	if cfg.MaxInFlightBytes < cfg.MaxBodyBytes {
		return nil, fmt.Errorf("httpapi: Config.MaxInFlightBytes (%d) must be at least MaxBodyBytes (%d)",
			cfg.MaxInFlightBytes, cfg.MaxBodyBytes)
	}
	s := &server{cfg: cfg, inFlight: semaphore.NewWeighted(cfg.MaxInFlightBytes)}
	router := httprouter.New()
	// Sync and finalize share a hook: Metacontroller's finalizing flag, not the URL, decides between Apply and
	// Cleanup, so a finalize URL that receives finalizing=false (a misconfigured controller) still only applies.
	s.handle(router, "budget/customize", customize(budget.Customize))
	s.handle(router, "budget/sync", composite(budget.Sync))
	s.handle(router, "budget/finalize", composite(budget.Sync))
	s.handle(router, "clusterbudget/customize", customize(clusterbudget.Customize))
	s.handle(router, "clusterbudget/sync", composite(clusterbudget.Sync))
	s.handle(router, "clusterbudget/finalize", composite(clusterbudget.Sync))
	s.handle(router, "workload/customize", customize(workload.Customize))
	s.handle(router, "workload/sync", lenient(workloadSync))
	s.handle(router, "workload/finalize", lenient(workloadSync))
	router.GET("/healthz", healthz)
	router.GET("/readyz", func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		if s.cfg.Ready != nil && !s.cfg.Ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		healthz(w, r, p)
	})
	return router, nil
}

type server struct {
	cfg      Config
	inFlight *semaphore.Weighted // MaxInFlightBytes; a call that does not fit is refused at once, so none pile up
}

// healthz answers "ok", which net/http sniffs as text/plain; charset=utf-8.
func healthz(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	_, _ = io.WriteString(w, "ok\n")
}

// lenient ignores members Req lacks, as Metacontroller adds fields across versions; names are case-sensitive.
func lenient[Req any](answer func(Req, time.Time) (any, HookCall, error)) hookFunc {
	return func(body []byte, now time.Time) (any, HookCall, error) {
		var req Req
		if err := decode.Lenient(body, &req, "request"); err != nil {
			return nil, HookCall{}, hookwire.BadRequest("%w", err)
		}
		return answer(req, now)
	}
}

func customize(hook func(hookwire.CustomizeRequest) (hookwire.CustomizeResponse, error)) hookFunc {
	return lenient(func(req hookwire.CustomizeRequest, _ time.Time) (any, HookCall, error) {
		resp, err := hook(req)
		return resp, HookCall{}, err
	})
}

// compositeSync is a CompositeController's sync (and finalize) hook.
type compositeSync func(hookwire.CompositeRequest, time.Time) (hookwire.CompositeResponse, budget.Summary, error)

func composite(sync compositeSync) hookFunc {
	return lenient(func(req hookwire.CompositeRequest, now time.Time) (any, HookCall, error) {
		resp, sum, err := sync(req, now)
		return resp, HookCall{Budget: qualified(sum.Namespace, sum.Name), State: string(sum.State), Reason: sum.Reason}, err
	})
}

func workloadSync(req hookwire.DecoratorRequest, now time.Time) (any, HookCall, error) {
	resp, sum, err := workload.Sync(req, now)
	return resp, HookCall{
		Budget:   qualified(sum.Namespace, sum.Budget),
		State:    sum.State,
		Workload: sum.Kind + " " + sum.Namespace + "/" + sum.Name,
	}, err
}

func qualified(namespace, name string) string {
	if namespace == "" || name == "" {
		return name
	}
	return namespace + "/" + name
}

type hookFunc func(body []byte, now time.Time) (any, HookCall, error)

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (s *server) handle(router *httprouter.Router, name string, fn hookFunc) {
	router.POST("/"+name, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		start := time.Now()
		c := s.serve(w, r, fn)
		c.Hook, c.Duration = name, time.Since(start)
		if s.cfg.Observe != nil {
			s.cfg.Observe(c)
		}
		attrs := []slog.Attr{
			slog.String("hook", name),
			slog.Int("status", c.Status),
			// Milliseconds as a number to microsecond precision, which log tools plot (slog's Duration is integer ns).
			slog.Float64("duration_ms", float64(c.Duration.Microseconds())/1e3),
		}
		optional := [][2]string{{"budget", c.Budget}, {"state", c.State}, {"reason", c.Reason}, {"workload", c.Workload}}
		for _, kv := range optional {
			if kv[1] != "" {
				attrs = append(attrs, slog.String(kv[0], kv[1]))
			}
		}
		level := slog.LevelInfo
		if c.Status >= 400 {
			level = slog.LevelWarn
		}
		s.cfg.Logger.LogAttrs(r.Context(), level, "hook call", attrs...)
	})
}

func (s *server) serve(w http.ResponseWriter, r *http.Request, fn hookFunc) (c HookCall) {
	n := weight(r, s.cfg.MaxBodyBytes)
	if !s.inFlight.TryAcquire(n) {
		// Read the body first, through a small buffer and bounded by the body limit: a server that answers and
		// closes while the caller still sends makes the caller see a reset connection, not the 429.
		_, _ = io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		w.Header().Set("Retry-After", retryAfterSeconds)
		reason := fmt.Sprintf("busy: more than %d request bytes in flight; retry after %s s",
			s.cfg.MaxInFlightBytes, retryAfterSeconds)
		return refuse(w, http.StatusTooManyRequests, reason, c)
	}
	defer s.inFlight.Release(n)
	defer func() {
		if p := recover(); p != nil {
			c.Status = http.StatusInternalServerError
			c.Reason = fmt.Sprint("panic: ", p)
			http.Error(w, "internal error: the hook failed unexpectedly; see the llmbudget logs", c.Status)
		}
	}()
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	if code, reason := readBody(buf, w, r, s.cfg.MaxBodyBytes); code != 0 {
		return refuse(w, code, reason, c)
	}
	resp, c, err := fn(buf.Bytes(), s.cfg.Now())
	if err != nil {
		return refuse(w, statusOf(err), err.Error(), c)
	}
	c.Status = writeJSON(w, resp)
	return c
}

// statusOf answers a request no hook can answer 400, and any other hook error 500: the service's own fault.
func statusOf(err error) int {
	if _, ok := errors.AsType[*hookwire.RequestError](err); ok {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// weight counts a declared length over the body limit as the minimum: readBody refuses it unread.
func weight(r *http.Request, maxBody int64) int64 {
	n := r.ContentLength
	switch {
	case n < 0:
		n = maxBody
	case n > maxBody:
		n = 0
	}
	return max(n, MinCallWeight)
}

func refuse(w http.ResponseWriter, status int, reason string, c HookCall) HookCall {
	c.Status, c.Reason = status, reason
	http.Error(w, strings.ReplaceAll(reason, "\n", " "), status)
	return c
}

// readBody reads r's JSON body into buf, or returns a refusal's status and reason.
func readBody(buf *bytes.Buffer, w http.ResponseWriter, r *http.Request, limit int64) (int, string) {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return http.StatusUnsupportedMediaType, "Content-Type must be application/json, got " + cmp.Or(ct, "none")
	}
	if r.ContentLength > limit {
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, limit)
	}
	if r.ContentLength > 0 {
		// Room for the body and ReadFrom's final EOF probe, so the buffer is allocated once, not doubled past it.
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds the limit of %d bytes", limit)
	}
	if err != nil {
		return http.StatusBadRequest, "read request body: " + err.Error()
	}
	if buf.Len() == 0 {
		return http.StatusBadRequest, "request body is empty"
	}
	return 0, ""
}

// writeJSON can still answer 500 on failure: the encoder marshals v whole before it writes.
func writeJSON(w http.ResponseWriter, v any) int {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return http.StatusInternalServerError
	}
	return http.StatusOK
}
