// Package server is the one lifecycle that llmbudget's servers (serve and authz) share: listen on each endpoint,
// bound its connections (LimitConns), serve TLS with a certificate reloaded when it changes (CertReloader), guard
// handlers with a bearer token (Require), serve pprof (RoutePprof), and drain gracefully on SIGTERM or SIGINT.
//
// Run guarantees that a server that stops is drained: it reports draining first (so that /readyz fails and load
// balancers stop sending), then gives in-flight calls ShutdownTimeout before it returns.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// ShutdownTimeout bounds the drain of in-flight calls, within the Pod's 30 s termination grace period.
const ShutdownTimeout = 20 * time.Second

// Bounds of New's servers; docs/operations.md ("Sizing the service") derives them.
const (
	// MaxHeaderBytes bounds a request's header: Metacontroller sends Content-Type, Accept-Encoding, User-Agent,
	// Content-Length and, with a token, Authorization, well under 1 KiB. Larger headers are answered 431.
	MaxHeaderBytes = 8 << 10
	// ReadHeaderTimeout bounds the wait for a request's header, and IdleTimeout for the next request on a
	// kept-alive connection, so that neither an unfinished header nor an idle connection is held for long.
	ReadHeaderTimeout = 5 * time.Second
	IdleTimeout       = 30 * time.Second
)

// New serves h on addr. Hook calls and scrapes are small and fast: the timeouts only cut off clients that stall, so
// that a slow peer cannot hold a connection forever, and the header bound keeps an unfinished header small.
func New(addr string, h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Endpoint is one server and how its listener is wrapped.
type Endpoint struct {
	Server *http.Server // its Addr is where it listens
	Conns  *ConnLimits  // the connection bounds; nil: none
	TLS    *tls.Config  // nil: plain HTTP
}

// SignalContext is a context cancelled on SIGTERM, SIGINT or when stop (which may be nil) closes.
func SignalContext(stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	if stop != nil {
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// Run listens on every endpoint, calls listening with the addresses it listens on (in the endpoints' order), and
// serves until ctx is done or a server fails. It then sets draining and shuts every server down within
// ShutdownTimeout.
func Run(ctx context.Context, logger *slog.Logger, draining *atomic.Bool, endpoints []Endpoint,
	listening func(addrs []string)) error {
	errc := make(chan error, len(endpoints))
	addrs := make([]string, len(endpoints))
	for i, e := range endpoints {
		defer e.Server.Close()
		ln, err := net.Listen("tcp", e.Server.Addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", e.Server.Addr, err)
		}
		if e.Conns != nil {
			limited := LimitConns(ln, *e.Conns)
			e.Server.ConnState = limited.ConnState
			ln = limited
		}
		if e.TLS != nil {
			ln = tls.NewListener(ln, e.TLS)
		}
		addrs[i] = ln.Addr().String()
		go func() { errc <- fmt.Errorf("serve on %s: %w", ln.Addr(), e.Server.Serve(ln)) }()
	}
	listening(addrs)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	draining.Store(true)
	logger.Info("shutting down", "timeout", ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	var errs []error
	for _, e := range endpoints {
		errs = append(errs, e.Server.Shutdown(sctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// ReloadingTLS is the TLS of a server with certFile and keyFile, the certificate fetched per handshake so that
// renewals apply at once, speaking protos; nil when certFile is empty.
func ReloadingTLS(certFile, keyFile string, logger *slog.Logger, protos ...string) (*tls.Config, error) {
	if certFile == "" {
		return nil, nil
	}
	rl, err := NewCertReloader(certFile, keyFile, logger)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: rl.GetCertificate, NextProtos: protos}, nil
}
