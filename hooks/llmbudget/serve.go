package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
	"github.com/llmbudget/llmbudget/internal/server"
)

// defaultMaxConnections caps the connections each listener holds open at once; Metacontroller keeps one per
// worker. Past it, the longest idle one is closed for a new one; with none idle, new connections wait in the
// kernel's backlog, costing the process nothing. docs/operations.md ("Sizing the service") derives it.
const defaultMaxConnections = 512

type serveOptions struct {
	addr, level       string
	metricsAddr       string // empty: /metrics on addr, beside the hooks
	maxBody           int64
	maxInFlight       int64
	maxListBody       int64
	maxConns          int
	maxConnsPerPeer   int
	certFile, keyFile string
	tokenFile         string
	pprof             bool
	now               string                      // a fixed clock, for demos and fixture replay
	onListen          func(hooks, metrics string) // called with the logged addresses, for tests
	stop              <-chan struct{}
}

var serveCommand = command{
	name: "serve", synopsis: "[flags]", summary: "serve the Metacontroller hooks",
	about: "Serves the CompositeController and DecoratorController hooks, /healthz, /readyz and\n" +
		"/metrics until SIGTERM or SIGINT, then drains in-flight calls.",
	run: func(args []string, std stdio) error {
		o, err := parseServe(args)
		if err != nil {
			return err
		}
		return runServer(o, std.err)
	},
}

func parseServe(args []string) (serveOptions, error) {
	var o serveOptions
	fs := newFlagSet("serve")
	fs.StringVar(&o.addr, "addr", ":8080", "listen address")
	fs.StringVar(&o.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":9090",
		"serve /metrics on this address, apart from the hooks; empty serves it on --addr")
	fs.Int64Var(&o.maxBody, "max-body-bytes", metacontroller.DefaultMaxBodyBytes,
		"largest hook request accepted (at least 1)")
	fs.Int64Var(&o.maxInFlight, "max-in-flight-bytes", metacontroller.DefaultMaxInFlightBytes,
		fmt.Sprintf("request bytes worked on at once (each call counts its body, at least %d); "+
			"calls past it are answered 429 with Retry-After; at least --max-body-bytes and %d",
			metacontroller.MinCallWeight, metacontroller.MinCallWeight))
	fs.Int64Var(&o.maxListBody, "max-list-body-bytes", metacontroller.DefaultMaxListBodyBytes,
		"largest ClusterLLMCostBudget or Namespace sync accepted, whose lists grow with the cluster; these calls "+
			"have an in-flight bound of this size of their own (at least --max-body-bytes)")
	fs.IntVar(&o.maxConns, "max-connections", defaultMaxConnections,
		fmt.Sprintf("connections held open at once on each listener; past it, the longest idle one is closed for "+
			"a new one, or, with none idle, new ones wait to be accepted "+
			"(headers are bounded to %d bytes and %s, idle connections closed after %s)",
			server.MaxHeaderBytes, server.ReadHeaderTimeout, server.IdleTimeout))
	fs.IntVar(&o.maxConnsPerPeer, "max-connections-per-peer", defaultServeConnsPerPeer,
		"connections one address holds open at once on each listener (unless given, at most a quarter of "+
			"--max-connections); past it, its longest idle one is closed, or the new one; Metacontroller holds one "+
			"per worker")
	fs.StringVar(&o.certFile, "tls-cert-file", "", "serve TLS with this certificate (PEM); reloaded when it changes")
	fs.StringVar(&o.keyFile, "tls-key-file", "", "private key (PEM) for --tls-cert-file")
	fs.StringVar(&o.tokenFile, "token-file", "",
		"require this bearer token (a mounted Secret key) on hook endpoints; re-read when it changes")
	fs.BoolVar(&o.pprof, "pprof", false, "serve /debug/pprof/ (behind the token when one is set)")
	fs.StringVar(&o.now, "now", "",
		"answer as if it were always this RFC 3339 instant (demos and fixture replay; never in production)")
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, badUsage(fs, "unexpected argument %q", fs.Arg(0))
	}
	if err := checkServeFlags(o); err != nil {
		return o, &usageError{fs: fs, err: err}
	}
	var err error
	if o.maxConnsPerPeer, err = connBound(fs, "max-connections-per-peer", o.maxConnsPerPeer, o.maxConns); err != nil {
		return o, err
	}
	// runServer parses these again (tests start it without flags); here a bad one is a usage error.
	if _, err := parseClock(o.now, "2026-11-29T07:30:00Z"); err != nil {
		return o, &usageError{fs: fs, err: err}
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.level)); err != nil {
		return o, badUsage(fs, "--log-level: %v", err)
	}
	return o, nil
}

// checkServeFlags refuses the addresses, bounds and files that cannot work, naming the flag: a port past 65535, no
// connection, a certificate without its key, a body bound of 0 or less, an in-flight bound below one call (which
// would answer every call 429).
func checkServeFlags(o serveOptions) error {
	for _, a := range []struct{ flag, addr string }{{"--addr", o.addr}, {"--metrics-addr", o.metricsAddr}} {
		if a.addr == "" && a.flag == "--metrics-addr" {
			continue
		}
		_, port, err := net.SplitHostPort(a.addr)
		if err == nil {
			_, err = net.LookupPort("tcp", port)
		}
		if err != nil {
			return fmt.Errorf("%s %q: want host:port or :port, with a port from 0 to 65535", a.flag, a.addr)
		}
	}
	least := max(o.maxBody, metacontroller.MinCallWeight)
	switch {
	case o.maxConns < 1:
		return fmt.Errorf("--max-connections must be at least 1, got %d", o.maxConns)
	case (o.certFile == "") != (o.keyFile == ""):
		return errors.New("--tls-cert-file and --tls-key-file go together")
	case o.maxBody < 1:
		return fmt.Errorf("--max-body-bytes %d: must be at least 1 (the default is %d)", o.maxBody,
			metacontroller.DefaultMaxBodyBytes)
	case o.maxListBody < o.maxBody:
		return fmt.Errorf("--max-list-body-bytes %d: must be at least --max-body-bytes (%d)", o.maxListBody, o.maxBody)
	case o.maxInFlight < least:
		return fmt.Errorf("--max-in-flight-bytes %d: must be at least %d, --max-body-bytes and the %d bytes each "+
			"call counts, or every call of that size is answered 429", o.maxInFlight, least, metacontroller.MinCallWeight)
	}
	return nil
}

// runServer serves until SIGTERM, SIGINT or o.stop, then drains: /readyz fails, in-flight calls get
// server.ShutdownTimeout.
func runServer(o serveOptions, stderr io.Writer) error {
	now, err := parseClock(o.now, "2026-11-29T07:30:00Z")
	if err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.level)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	if o.now != "" {
		logger.Warn("the clock is fixed: every evaluation happens at --now", "now", o.now)
	}
	var draining atomic.Bool
	servers, err := newServers(o, now, logger, &draining)
	if err != nil {
		return err
	}
	tlsCfg, err := server.ReloadingTLS(o.certFile, o.keyFile, logger, "http/1.1") // Metacontroller speaks HTTP/1.1
	if err != nil {
		return err
	}
	maxConns := cmp.Or(o.maxConns, defaultMaxConnections)
	perPeer := cmp.Or(o.maxConnsPerPeer, min(defaultServeConnsPerPeer, max(maxConns/4, 1))) // as parseServe sets it
	endpoints := make([]server.Endpoint, len(servers))
	for i, srv := range servers {
		endpoints[i] = server.Endpoint{Server: srv, Conns: &server.ConnLimits{Max: maxConns, PerPeer: perPeer},
			TLS: tlsCfg}
	}
	ctx, stop := server.SignalContext(o.stop)
	defer stop()
	return server.Run(ctx, logger, &draining, endpoints, func(addrs []string) {
		addrs = append(addrs, "beside the hooks")[:2] // of the hooks and of /metrics, as logged
		if o.onListen != nil {
			o.onListen(addrs[0], addrs[1])
		}
		logger.Info("serving hooks", "addr", addrs[0], "metrics", addrs[1], "version", version,
			"tls", o.certFile != "", "auth", o.tokenFile != "", "max_body_bytes", o.maxBody,
			"max_in_flight_bytes", o.maxInFlight, "max_list_body_bytes", o.maxListBody,
			"max_connections", maxConns, "max_connections_per_peer", perPeer)
	})
}

// newServers returns the hooks' server, where the optional bearer token guards all but the probes, and serves
// /metrics on a server of its own when --metrics-addr is set (so that a NetworkPolicy can admit scrapers to that
// port alone), else beside the hooks, also without the token.
func newServers(o serveOptions, now func() time.Time, logger *slog.Logger,
	draining *atomic.Bool) ([]*http.Server, error) {
	m := controller.NewMetrics(version)
	router, err := controller.NewRouter(metacontroller.Config{
		Now:              now,
		Logger:           logger,
		MaxBodyBytes:     o.maxBody,
		MaxInFlightBytes: o.maxInFlight,
		MaxListBodyBytes: o.maxListBody,
		Ready:            func() bool { return !draining.Load() },
		Observe:          m.ObserveHook,
	})
	if err != nil {
		return nil, err
	}
	if o.pprof {
		server.RoutePprof(router)
	}
	servers := []*http.Server{server.New(o.addr, router, logger)}
	open := []string{"/healthz", "/readyz"}
	if o.metricsAddr == "" {
		router.Handler(http.MethodGet, "/metrics", m.Handler())
		open = append(open, "/metrics")
	} else {
		mr := httprouter.New()
		mr.Handler(http.MethodGet, "/metrics", m.Handler())
		servers = append(servers, server.New(o.metricsAddr, mr, logger))
	}
	if o.tokenFile != "" {
		tok, err := server.NewFileToken(o.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		servers[0].Handler = server.Require(router, tok, logger, open...)
	}
	return servers, nil
}
