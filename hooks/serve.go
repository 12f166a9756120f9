package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/llmbudget/llmbudget/internal/auth"
	"github.com/llmbudget/llmbudget/internal/httpapi"
	"github.com/llmbudget/llmbudget/internal/metrics"
	"github.com/llmbudget/llmbudget/internal/tlsreload"
)

// Server timeouts: hook calls are small and fast; these only cut off clients
// that stall, so that a slow peer cannot hold a connection forever.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 120 * time.Second
	shutdownTimeout   = 20 * time.Second
)

// serveOptions are the serve command's flags.
type serveOptions struct {
	addr, level       string
	maxBody           int64
	certFile, keyFile string
	tokenFile         string
	pprof             bool
	now               string         // a fixed clock, for demos and fixture replay
	onListen          func(net.Addr) // tests learn the port here
	stop              <-chan struct{}
}

var serveCommand = command{
	name: "serve", synopsis: "[flags]", summary: "serve the Metacontroller hooks",
	about: "Serves the CompositeController and DecoratorController hooks, /healthz, /readyz and\n" +
		"/metrics until SIGTERM or SIGINT, then drains in-flight calls.",
	run: func(args []string, std stdio) error { return serve(args, std.err) },
}

func parseServe(args []string) (serveOptions, error) {
	var o serveOptions
	fs := newFlagSet("serve")
	fs.StringVar(&o.addr, "addr", ":8080", "listen address")
	fs.StringVar(&o.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.Int64Var(&o.maxBody, "max-body-bytes", httpapi.DefaultMaxBodyBytes, "largest hook request accepted")
	fs.StringVar(&o.certFile, "tls-cert-file", "", "serve TLS with this certificate (PEM); reloaded when it changes")
	fs.StringVar(&o.keyFile, "tls-key-file", "", "private key (PEM) for --tls-cert-file")
	fs.StringVar(&o.tokenFile, "token-file", "", "require this bearer token (a mounted Secret key) on hook endpoints; re-read when it changes")
	fs.BoolVar(&o.pprof, "pprof", false, "serve /debug/pprof/ (behind the token when one is set)")
	fs.StringVar(&o.now, "now", "", "answer as if it were always this RFC 3339 instant (demos and fixture replay; never in production)")
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, badUsage(fs, "unexpected argument %q", fs.Arg(0))
	}
	if (o.certFile == "") != (o.keyFile == "") {
		return o, errors.New("--tls-cert-file and --tls-key-file go together")
	}
	if _, err := o.clock(); err != nil {
		return o, err
	}
	return o, nil
}

func serve(args []string, stderr io.Writer) error {
	o, err := parseServe(args)
	if err != nil {
		return err
	}
	return runServer(o, stderr)
}

// runServer serves until SIGTERM, SIGINT or o.stop, then drains: /readyz
// turns unready and in-flight calls finish within shutdownTimeout.
func runServer(o serveOptions, stderr io.Writer) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.level)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	var draining atomic.Bool
	h, err := buildHandler(o, logger, &draining)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln, err := listen(o, srv, logger)
	if err != nil {
		return err
	}
	if o.onListen != nil {
		o.onListen(ln.Addr())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("serving hooks", "addr", ln.Addr().String(), "version", version, "tls", o.certFile != "", "auth", o.tokenFile != "")
	select {
	case err := <-errc:
		return fmt.Errorf("serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	case <-o.stop:
	}
	draining.Store(true)
	logger.Info("shutting down", "timeout", shutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

func listen(o serveOptions, srv *http.Server, logger *slog.Logger) (net.Listener, error) {
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", o.addr, err)
	}
	if o.certFile == "" {
		return ln, nil
	}
	rl, err := tlsreload.New(o.certFile, o.keyFile, logger)
	if err != nil {
		ln.Close()
		return nil, err
	}
	srv.TLSConfig = rl.Config()
	return tlsListener(ln, srv), nil
}

// clock is time.Now, or the fixed instant of --now.
func (o serveOptions) clock() (func() time.Time, error) {
	if o.now == "" {
		return time.Now, nil
	}
	t, err := time.Parse(time.RFC3339, o.now)
	if err != nil {
		return nil, fmt.Errorf("--now %q: must be RFC 3339, like 2026-11-29T07:30:00Z", o.now)
	}
	return func() time.Time { return t }, nil
}

// buildHandler puts the hooks, /metrics and optional pprof behind the
// optional bearer token; probes and metrics stay open.
func buildHandler(o serveOptions, logger *slog.Logger, draining *atomic.Bool) (http.Handler, error) {
	m := metrics.New(version)
	now, err := o.clock()
	if err != nil {
		return nil, err
	}
	if o.now != "" {
		logger.Warn("the clock is fixed: every evaluation happens at --now", "now", o.now)
	}
	hooks, err := httpapi.New(httpapi.Config{
		Now:          now,
		Logger:       logger,
		MaxBodyBytes: o.maxBody,
		Ready:        func() bool { return !draining.Load() },
		Observe: func(c httpapi.HookCall) {
			m.ObserveHook(c.Hook, c.Status, c.Duration, c.State, c.Reason)
		},
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", hooks)
	mux.Handle("GET /metrics", m.Handler())
	if o.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if o.tokenFile == "" {
		return mux, nil
	}
	tok, err := auth.NewFileToken(o.tokenFile)
	if err != nil {
		return nil, fmt.Errorf("--token-file: %w", err)
	}
	return auth.Require(mux, tok, "/healthz", "/readyz", "/metrics"), nil
}
