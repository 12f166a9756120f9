package metacontroller

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/sync/semaphore"

	"github.com/llmbudget/llmbudget/internal/decode"
)

// Memory bounds; docs/operations.md ("Sizing the service") derives them from the Deployment's 128Mi limit.
const (
	// DefaultMaxBodyBytes bounds a hook request. The largest real one carries a spend ConfigMap (1 MiB of data at
	// most, twice that JSON-escaped) or a workload (1.5 MiB at most, etcd's limit) next to a budget of tens of KiB.
	DefaultMaxBodyBytes = 4 << 20
	// DefaultMaxInFlightBytes is four maximum-size requests in flight, or 256 ordinary ones (see MinCallWeight).
	DefaultMaxInFlightBytes = 16 << 20
	// DefaultMaxListBodyBytes bounds a sync or finalize request of a Lists route, one that carries a list the size
	// of the cluster: a ClusterLLMCostBudget over 8,000 namespaces, each with its ResourceQuota and a spend
	// ConfigMap in an eighth of them, is 28 MB as Metacontroller sends it. These calls have an in-flight bound of
	// their own, of the same size: one at a time at the limit, beside the ordinary calls.
	DefaultMaxListBodyBytes = 32 << 20
	// MinCallWeight is what any hook call counts against the in-flight bound, however small its body: a call's
	// goroutine, connection buffers and decoded request cost tens of KiB beyond the body itself.
	MinCallWeight = 64 << 10
)

// retryAfterSeconds is a refused caller's wait; Metacontroller honours Retry-After on 429 and requeues the sync.
const retryAfterSeconds = "1"

// CompositeHook is a CompositeController's hooks. Sync answers sync and finalize alike: Metacontroller's
// finalizing flag, not the URL, decides between Apply and Cleanup (see Finalizer), so a finalize URL that receives
// finalizing=false (a misconfigured controller) still only applies.
type CompositeHook interface {
	Customize(CustomizeRequest) (CustomizeResponse, error)
	Sync(CompositeRequest, time.Time) (CompositeResponse, Summary, error)
}

// DecoratorHook is a DecoratorController's hooks. A decorator without a finalize hook has no finalize route, so
// Metacontroller puts no finalizer on its objects.
type DecoratorHook interface {
	Customize(CustomizeRequest) (CustomizeResponse, error)
	Sync(DecoratorRequest, time.Time) (DecoratorResponse, Summary, error)
}

// DecoratorFinalizer is a DecoratorHook that also answers a finalize hook.
type DecoratorFinalizer interface {
	Finalize(DecoratorRequest, time.Time) (DecoratorResponse, Summary, error)
}

// Summary is what a hook call did: the outcome metrics count and the hook's own attributes for its log line.
type Summary struct {
	State, Reason string      // the object's resulting state and why, where the hook decides one
	Attrs         []slog.Attr // logged after the call's hook, status and duration, in order
}

// Attrs are a Summary's attributes from key-value pairs, leaving out each pair whose value is empty.
func Attrs(keyValues ...string) []slog.Attr {
	var attrs []slog.Attr
	for i := 0; i+1 < len(keyValues); i += 2 {
		if keyValues[i+1] != "" {
			attrs = append(attrs, slog.String(keyValues[i], keyValues[i+1]))
		}
	}
	return attrs
}

// Call is one hook call, as logged and told to Config.Observe.
type Call struct {
	Hook     string // the route, "budget/sync"
	Status   int
	Duration time.Duration
	State    string // the hook's Summary.State
	Reason   string // the hook's Summary.Reason, or why the call was refused
	attrs    []slog.Attr
}

// Config configures the handler; Composite and Decorator map each controller's route prefix to its hooks.
type Config struct {
	Now          func() time.Time // the clock; required so tests and `eval` can fix it
	Logger       *slog.Logger     // receives one line per hook call; required
	MaxBodyBytes int64            // bounds request bodies; DefaultMaxBodyBytes when 0
	// MaxInFlightBytes bounds the request bytes worked on at once (each call counts its body's bytes as they
	// arrive, and at least MinCallWeight once its body is read): DefaultMaxInFlightBytes when 0, never less than
	// MaxBodyBytes, so any call can be served.
	MaxInFlightBytes int64
	// Lists are the route prefixes whose sync and finalize requests carry cluster-sized lists: they accept up to
	// MaxListBodyBytes (DefaultMaxListBodyBytes when 0, never less than MaxBodyBytes), within an in-flight bound of
	// that size of their own.
	Lists            []string
	MaxListBodyBytes int64
	Ready            func() bool // reports readiness for /readyz; always ready when nil
	Observe          func(Call)  // when set, told about every hook call (for metrics)
	Composite        map[string]CompositeHook
	Decorator        map[string]DecoratorHook
}

// validate checks the config and fills in its defaults.
func (cfg Config) validate() (Config, error) {
	switch {
	case cfg.Now == nil:
		return cfg, errors.New("metacontroller: Config.Now is required")
	case cfg.Logger == nil:
		return cfg, errors.New("metacontroller: Config.Logger is required")
	case cfg.MaxBodyBytes < 0:
		return cfg, fmt.Errorf("metacontroller: Config.MaxBodyBytes must not be negative, got %d", cfg.MaxBodyBytes)
	}
	cfg.MaxBodyBytes = cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	cfg.MaxListBodyBytes = cmp.Or(cfg.MaxListBodyBytes, max(DefaultMaxListBodyBytes, cfg.MaxBodyBytes))
	if cfg.MaxListBodyBytes < cfg.MaxBodyBytes {
		return cfg, fmt.Errorf("metacontroller: Config.MaxListBodyBytes (%d) must be at least MaxBodyBytes (%d)",
			cfg.MaxListBodyBytes, cfg.MaxBodyBytes)
	}
	cfg.MaxInFlightBytes = cmp.Or(cfg.MaxInFlightBytes, max(DefaultMaxInFlightBytes, cfg.MaxBodyBytes))
	if cfg.MaxInFlightBytes < cfg.MaxBodyBytes {
		return cfg, fmt.Errorf("metacontroller: Config.MaxInFlightBytes (%d) must be at least MaxBodyBytes (%d)",
			cfg.MaxInFlightBytes, cfg.MaxBodyBytes)
	}
	return cfg, nil
}

// New returns a router with each controller's hook routes ("<prefix>/customize", "/sync" and, where there is a
// finalize hook, "/finalize") and the probes; the caller may add routes of its own (metrics, pprof).
func New(cfg Config) (*httprouter.Router, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	s := &server{cfg: cfg}
	ordinary := bound{cfg.MaxBodyBytes, semaphore.NewWeighted(cfg.MaxInFlightBytes), cfg.MaxInFlightBytes}
	lists := bound{cfg.MaxListBodyBytes, semaphore.NewWeighted(cfg.MaxListBodyBytes), cfg.MaxListBodyBytes}
	syncs := func(prefix string) bound {
		if slices.Contains(cfg.Lists, prefix) {
			return lists
		}
		return ordinary
	}
	router := httprouter.New()
	for prefix, h := range cfg.Composite {
		s.handle(router, prefix+"/customize", customize(h.Customize), ordinary)
		s.handle(router, prefix+"/sync", lenient(h.Sync), syncs(prefix))
		s.handle(router, prefix+"/finalize", lenient(h.Sync), syncs(prefix))
	}
	for prefix, h := range cfg.Decorator {
		s.handle(router, prefix+"/customize", customize(h.Customize), ordinary)
		s.handle(router, prefix+"/sync", lenient(h.Sync), syncs(prefix))
		if f, ok := h.(DecoratorFinalizer); ok {
			s.handle(router, prefix+"/finalize", lenient(f.Finalize), syncs(prefix))
		}
	}
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
	cfg Config
}

// bound is a route's body limit and the in-flight bound it shares with the routes of its kind (ordinary or Lists);
// a call that does not fit is refused at once, so none pile up.
type bound struct {
	maxBody     int64
	inFlight    *semaphore.Weighted
	maxInFlight int64
}

// healthz answers "ok", which net/http sniffs as text/plain; charset=utf-8.
func healthz(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	_, _ = io.WriteString(w, "ok\n")
}

// hookFunc answers a request body at a time.
type hookFunc func(body []byte, now time.Time) (any, Summary, error)

// lenient ignores members Req lacks, as Metacontroller adds fields across versions; names are case-sensitive.
func lenient[Req, Resp any](answer func(Req, time.Time) (Resp, Summary, error)) hookFunc {
	return func(body []byte, now time.Time) (any, Summary, error) {
		var req Req
		if err := decode.Lenient(body, &req, "request"); err != nil {
			return nil, Summary{}, BadRequest("%w", err)
		}
		return answer(req, now)
	}
}

func customize(hook func(CustomizeRequest) (CustomizeResponse, error)) hookFunc {
	return lenient(func(req CustomizeRequest, _ time.Time) (CustomizeResponse, Summary, error) {
		resp, err := hook(req)
		return resp, Summary{}, err
	})
}

func (s *server) handle(router *httprouter.Router, name string, fn hookFunc, b bound) {
	router.POST("/"+name, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		start := time.Now()
		c := s.serve(w, r, fn, b)
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
		attrs = append(attrs, c.attrs...)
		level := slog.LevelInfo
		if c.Status >= 400 {
			level = slog.LevelWarn
		}
		s.cfg.Logger.LogAttrs(r.Context(), level, "hook call", attrs...)
	})
}

func (s *server) serve(w http.ResponseWriter, r *http.Request, fn hookFunc, b bound) (c Call) {
	limit := b.maxBody
	body := &meteredBody{r: http.MaxBytesReader(w, r.Body, limit), limit: limit, declared: r.ContentLength,
		inFlight: b.inFlight}
	defer body.release()
	defer func() {
		if p := recover(); p != nil {
			c.Status = http.StatusInternalServerError
			c.Reason = fmt.Sprint("panic: ", p)
			c.attrs = append(c.attrs, slog.String("reason", c.Reason))
			http.Error(w, "internal error: the hook failed unexpectedly; see the llmbudget logs", c.Status)
		}
	}()
	req, code, reason := readBody(body, r, limit)
	if code == 0 && !body.hold(MinCallWeight) {
		code = http.StatusTooManyRequests
	}
	if code == http.StatusTooManyRequests {
		// Read the rest first, bounded by the body limit: a server that answers and closes while the caller still
		// sends makes the caller see a reset connection, not the 429. What is read now is discarded through
		// io.Copy's small buffer, so it holds nothing; what was held is given back first.
		body.release()
		_, _ = io.Copy(io.Discard, body.r)
		w.Header().Set("Retry-After", retryAfterSeconds)
		reason = fmt.Sprintf("busy: more than %d request bytes in flight; retry after %s s",
			b.maxInFlight, retryAfterSeconds)
	}
	if code != 0 {
		return refuse(w, code, reason, c)
	}
	resp, sum, err := fn(req, s.cfg.Now())
	c = Call{State: sum.State, Reason: sum.Reason, attrs: sum.Attrs}
	if err != nil {
		return refuse(w, statusOf(err), err.Error(), c)
	}
	c.Status = writeJSON(w, resp)
	return c
}

// statusOf answers a request no hook can answer 400, and any other hook error 500: the service's own fault.
func statusOf(err error) int {
	if _, ok := errors.AsType[*RequestError](err); ok {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func refuse(w http.ResponseWriter, status int, reason string, c Call) Call {
	c.Status, c.Reason = status, reason
	c.attrs = append(c.attrs, slog.String("reason", reason))
	http.Error(w, strings.ReplaceAll(reason, "\n", " "), status)
	return c
}

// readBody reads r's JSON body from body, or returns a refusal's status and reason (429 when the in-flight bound
// has no room for the body's bytes).
func readBody(body *meteredBody, r *http.Request, limit int64) ([]byte, int, string) {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return nil, http.StatusUnsupportedMediaType, "Content-Type must be application/json, got " + cmp.Or(ct, "none")
	}
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, limit)
	}
	buf, err := body.readAll()
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

// writeJSON can still answer 500 on failure: the encoder marshals v whole before it writes. A CompositeResponse
// with more than streamedChildren children is written a child at a time instead (see writeComposite).
func writeJSON(w http.ResponseWriter, v any) int {
	w.Header().Set("Content-Type", "application/json")
	if r, ok := v.(CompositeResponse); ok && len(r.Children) > streamedChildren {
		return writeComposite(w, r)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return http.StatusInternalServerError
	}
	return http.StatusOK
}

// streamedChildren is how many children an answer may have before it is written a child at a time: a cluster
// budget's 10,000 quotas are megabytes of JSON, which encoded whole would sit in memory twice over (the encoder's
// buffer grows by doubling) beside the request.
const streamedChildren = 64

// writeComposite writes r as the encoder would, byte for byte, holding one child's JSON at a time. A child that
// fails to encode (none can: they are plain structs and maps) cuts the answer short, which Metacontroller cannot
// parse and retries; the call is logged 500.
func writeComposite(w http.ResponseWriter, r CompositeResponse) int {
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	piece := func(v any) ([]byte, error) {
		buf.Reset()
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
	}
	status, err := piece(r.Status)
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return http.StatusInternalServerError
	}
	_, _ = bw.WriteString(`{"status":`)
	_, _ = bw.Write(status)
	_, _ = bw.WriteString(`,"children":[`)
	for i, c := range r.Children {
		b, err := piece(c)
		if err != nil {
			return http.StatusInternalServerError
		}
		if i > 0 {
			_ = bw.WriteByte(',')
		}
		_, _ = bw.Write(b)
	}
	_ = bw.WriteByte(']')
	tail, err := piece(r.Tail)
	if err != nil {
		return http.StatusInternalServerError
	}
	if fields := tail[1 : len(tail)-1]; len(fields) > 0 { // the Tail's members, after the children as embedded
		_ = bw.WriteByte(',')
		_, _ = bw.Write(fields)
	}
	_, _ = bw.WriteString("}\n")
	_ = bw.Flush()
	return http.StatusOK
}
