// Package httpapi is the thin HTTP adapter in front of the hook functions: routing, request guards (content
// type, size, JSON shape), response encoding and one log line per hook call. It holds no budget logic. Every
// hook answer is 200 with a response Metacontroller decodes strictly, or a 4xx with a one-line reason (shown
// to users in a SyncError Event) when the request is at fault; a hook's own failure, a panic included, is a
// 500, not a crashed process. Memory stays bounded however many callers: past Config.MaxInFlightBytes, a call
// is answered 429 with Retry-After. A body counts only the bytes that have arrived, so callers that send
// slowly cannot starve the others.
package httpapi

import (
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
	"github.com/llmbudget/llmbudget/internal/posture"
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
	// MaxInFlightBytes bounds the request bytes worked on at once (each call counts its body's bytes as they
	// arrive, and at least MinCallWeight once its body is read): DefaultMaxInFlightBytes when 0, never less than
	// MaxBodyBytes, so any call can be served.
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
	// The Namespace decorator has no finalize hook, so no route: a Namespace never waits on this service.
	s.handle(router, "namespace/customize", customize(posture.Customize))
	s.handle(router, "namespace/sync", lenient(namespaceSync))
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

func namespaceSync(req hookwire.DecoratorRequest, _ time.Time) (any, HookCall, error) {
	resp, sum, err := posture.Sync(req)
	state, budgets := "NotBlocked", sum.Blocking
	if len(budgets) > 0 {
		state = "Blocked"
	}
	if len(budgets) > 3 { // a log line, not a list: the annotation names them
		budgets = append(budgets[:3:3], fmt.Sprintf("and %d more", len(budgets)-3))
	}
	return resp, HookCall{Budget: strings.Join(budgets, ", "), State: state, Workload: "Namespace " + sum.Namespace},
		err
}

func qualified(namespace, name string) string {
	if namespace == "" || name == "" {
		return name
	}
	return namespace + "/" + name
}

type hookFunc func(body []byte, now time.Time) (any, HookCall, error)

// bufPool holds request buffers (*[]byte) for reuse.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

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
	limit := s.cfg.MaxBodyBytes
	body := &meteredBody{r: http.MaxBytesReader(w, r.Body, limit), limit: limit, inFlight: s.inFlight}
	defer body.release()
	defer func() {
		if p := recover(); p != nil {
			c.Status = http.StatusInternalServerError
			c.Reason = fmt.Sprint("panic: ", p)
			http.Error(w, "internal error: the hook failed unexpectedly; see the llmbudget logs", c.Status)
		}
	}()
	buf := bufPool.Get().(*[]byte)
	req, code, reason := readBody((*buf)[:0], body, r, s.cfg.MaxBodyBytes)
	if code == 0 && !body.hold(MinCallWeight) {
		code = http.StatusTooManyRequests
	}
	if code == http.StatusTooManyRequests {
		// Read the rest first, through a small buffer and bounded by the body limit: a server that answers and
		// closes while the caller still sends makes the caller see a reset connection, not the 429. What is read
		// now is discarded, so it holds nothing; what was held is given back first, and the buffer is left to
		// the collector: kept in the pool, the buffers of many refused calls would outgrow the bound.
		body.release()
		_, _ = io.Copy(io.Discard, body.r)
		w.Header().Set("Retry-After", retryAfterSeconds)
		reason = fmt.Sprintf("busy: more than %d request bytes in flight; retry after %s s",
			s.cfg.MaxInFlightBytes, retryAfterSeconds)
	} else {
		defer func() { *buf = req[:0]; bufPool.Put(buf) }()
	}
	if code != 0 {
		return refuse(w, code, reason, c)
	}
	resp, c, err := fn(req, s.cfg.Now())
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

// errBusy stops a body's read when the in-flight bound has no room for more of it.
var errBusy = errors.New("busy")

// meteredBody reads a body while holding in-flight weight for the room it reads into, and makes that room as the
// bytes arrive, not for the length the caller declares: a caller that trickles its body, or declares 4 MiB and
// sends none of it, holds a few KiB (at most MinCallWeight), so slow callers cannot starve the others of the bound.
// Room that does not fit fails the read at once with errBusy (never waits).
type meteredBody struct {
	r        io.Reader // bounded by limit
	limit    int64
	inFlight *semaphore.Weighted
	held     int64
}

// readAll appends the body to buf until EOF; declared is the length the caller declared, or -1.
func (m *meteredBody) readAll(buf []byte, declared int64) ([]byte, error) {
	end := 0 // buf is read up to here: the room held so far
	for {
		if len(buf) == end {
			// Never room past the limit and the one byte that reads EOF or trips it, which is not held.
			end = int(min(int64(end+room(len(buf), declared)), m.limit+1))
			if !m.hold(min(int64(end), m.limit)) {
				return buf, errBusy
			}
			if cap(buf) < end {
				grown := make([]byte, len(buf), end)
				buf = grown[:copy(grown, buf)]
			}
		}
		n, err := m.r.Read(buf[len(buf):end])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// room is how many bytes to add to a full buffer of n bytes. A declared length is made room for, and held, whole
// once the caller has sent MinCallWeight of it (what every call holds once read anyway), or at once when it is no
// more: a caller that declares 4 MiB and trickles it holds at most 64 KiB, while a real large body is read into one
// buffer of its size, and a call that cannot have it is refused after reading 64 KiB, not megabytes. Until then, and
// for a body of undeclared length, the room grows fourfold each time it fills, from 4 KiB.
func room(n int, declared int64) int {
	if declared > int64(n) && (declared <= MinCallWeight || n >= MinCallWeight) {
		return int(declared) - n + 1 // and the read that sees EOF
	}
	more := max(3*n, 4<<10)
	if declared > int64(n) {
		more = min(more, int(declared)-n+1)
	}
	return more
}

// hold tops the weight held up to at least n: the room a body is read into, then what a call holds while its
// request is decoded and answered.
func (m *meteredBody) hold(n int64) bool {
	if m.held >= n {
		return true
	}
	if !m.inFlight.TryAcquire(n - m.held) {
		return false
	}
	m.held = n
	return true
}

func (m *meteredBody) release() {
	m.inFlight.Release(m.held)
	m.held = 0
}

func refuse(w http.ResponseWriter, status int, reason string, c HookCall) HookCall {
	c.Status, c.Reason = status, reason
	http.Error(w, strings.ReplaceAll(reason, "\n", " "), status)
	return c
}

// readBody reads r's JSON body from body into buf, or returns a refusal's status and reason (429 when the in-flight
// bound has no room for the body's bytes).
func readBody(buf []byte, body *meteredBody, r *http.Request, limit int64) ([]byte, int, string) {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return buf, http.StatusUnsupportedMediaType, "Content-Type must be application/json, got " + cmp.Or(ct, "none")
	}
	if r.ContentLength > limit {
		return buf, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, limit)
	}
	buf, err := body.readAll(buf, r.ContentLength)
	if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
		return buf, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds the limit of %d bytes", limit)
	}
	if errors.Is(err, errBusy) {
		return buf, http.StatusTooManyRequests, ""
	}
	if err != nil {
		return buf, http.StatusBadRequest, "read request body: " + err.Error()
	}
	if len(buf) == 0 {
		return buf, http.StatusBadRequest, "request body is empty"
	}
	return buf, 0, ""
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
