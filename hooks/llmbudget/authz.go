package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/authz/gateway"
	"github.com/llmbudget/llmbudget/internal/server"
)

type authzOptions struct {
	config, addr, metricsAddr   string
	kubeconfig, level           string
	certFile, keyFile, clientCA string
	maxHeaderBytes              int
	maxConns, maxConnsPerPeer   int
	maxUntrustedConns           int
	readTimeout, idleTimeout    time.Duration
	lease                       gateway.LeaseConfig
	onListen                    func(authz, metrics string) // called with the addresses, for tests
	stop                        <-chan struct{}
}

var authzCommand = command{
	name: "authz", synopsis: "--config FILE [flags]",
	summary: "answer LLM gateways' authorization calls from the budgets",
	about: `Answers the external-authorization calls of LLM gateways (Envoy Gateway, Istio,
Traefik ForwardAuth, Caddy forward_auth, nginx auth_request) on --addr, for every method
and path: 200 while the caller's budgets admit it, 429 with Retry-After and an OpenAI-shaped
error while one blocks it. Decisions are made in memory from informers on Namespaces,
LLMCostBudgets, ClusterLLMCostBudgets and, for gateways in source mode, Pods (read-only;
the kubeconfig of --kubeconfig or $KUBECONFIG, else the Pod's service account).

--config names the YAML file of the gateways it answers and how each tells its caller
(source, spiffe or header), the unknownCaller policy and maxCacheAge. /healthz, /readyz
(ready while the informers have synced and listed or watched within maxCacheAge) and
/metrics are served on --metrics-addr only, so that no gateway path is mistaken for them.

Each replica keeps the coordination.k8s.io Lease llmbudget-authz.<--pod-name> in
--lease-namespace (default $POD_NAMESPACE and $POD_NAME), its only write: renewed every
--lease-renew-interval (20s) for --lease-duration (1m), with the annotation
llmbudget.dev/authz-refusing naming the budgets it refuses for (rewritten within a second of
a change), so that the budgets' status can count it. Without a namespace it writes none.
Runs until SIGTERM or SIGINT, then deletes its Lease.`,
	run: func(args []string, std stdio) error {
		o, err := parseAuthz(args)
		if err != nil {
			return err
		}
		return runAuthz(o, std.err)
	},
}

func parseAuthz(args []string) (authzOptions, error) {
	var o authzOptions
	fs := newFlagSet("authz")
	fs.StringVar(&o.config, "config", "", "the configuration file (YAML): gateways, unknownCaller, maxCacheAge")
	fs.StringVar(&o.addr, "addr", ":8080", "listen address of the authorization calls")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":9090", "listen address of /healthz, /readyz and /metrics")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else in-cluster)")
	fs.StringVar(&o.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.certFile, "tls-cert-file", "", "serve TLS with this certificate (PEM); reloaded when it changes")
	fs.StringVar(&o.keyFile, "tls-key-file", "", "private key (PEM) for --tls-cert-file")
	fs.StringVar(&o.clientCA, "tls-client-ca-file", "",
		"verify the client certificates gateways present against these CAs (PEM), for gateways' identities")
	fs.IntVar(&o.maxHeaderBytes, "max-header-bytes", 16<<10, "largest request line and headers of one call")
	fs.IntVar(&o.maxConns, "max-connections", 1024,
		"connections served at once; past it the longest idle one is closed, or, with none idle, more wait")
	fs.IntVar(&o.maxConnsPerPeer, "max-connections-per-peer", defaultAuthzConnsPerPeer,
		"connections one address holds at once (unless given, at most a quarter of --max-connections); past it, "+
			"its longest idle one is closed, or the new one")
	fs.IntVar(&o.maxUntrustedConns, "max-untrusted-connections", defaultUntrustedConns,
		"connections all addresses outside every gateway's CIDRs hold at once, each answered 403 and closed "+
			"(unless given, at most a quarter of --max-connections)")
	fs.DurationVar(&o.readTimeout, "read-timeout", 5*time.Second, "time to read one call's headers and body")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 90*time.Second, "time an idle keep-alive connection is kept")
	o.defineLease(fs)
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	return o, o.check(fs)
}

// defineLease defines the flags of the replica's Lease.
func (o *authzOptions) defineLease(fs *flag.FlagSet) {
	fs.StringVar(&o.lease.Namespace, "lease-namespace", os.Getenv("POD_NAMESPACE"),
		"namespace of this replica's Lease, its own (default $POD_NAMESPACE); empty writes no Lease")
	fs.StringVar(&o.lease.Pod, "pod-name", os.Getenv("POD_NAME"),
		"this replica's Pod name, its Lease's holder (default $POD_NAME)")
	fs.DurationVar(&o.lease.Duration, "lease-duration", time.Minute,
		"how long the Lease counts after its last renewal, in whole seconds")
	fs.DurationVar(&o.lease.Renew, "lease-renew-interval", 20*time.Second,
		"time between renewals of the Lease, at most half of --lease-duration")
}

// check refuses what authz cannot serve with, and takes the connection bounds' defaults.
func (o *authzOptions) check(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return badUsage(fs, "unexpected argument %q", fs.Arg(0))
	case o.config == "":
		return badUsage(fs, "--config is required")
	case (o.certFile == "") != (o.keyFile == ""):
		return badUsage(fs, "--tls-cert-file and --tls-key-file go together")
	case o.clientCA != "" && o.certFile == "":
		return badUsage(fs, "--tls-client-ca-file needs --tls-cert-file")
	case o.maxHeaderBytes < 1024 || o.maxConns < 1 || o.readTimeout <= 0 || o.idleTimeout <= 0:
		return badUsage(fs, "--max-header-bytes (at least 1024), --max-connections and the timeouts must be positive")
	}
	var err error
	if o.maxConnsPerPeer, err = connBound(fs, "max-connections-per-peer", o.maxConnsPerPeer, o.maxConns); err != nil {
		return err
	}
	if o.maxUntrustedConns, err = connBound(fs, "max-untrusted-connections", o.maxUntrustedConns,
		o.maxConns); err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.level)); err != nil {
		return badUsage(fs, "--log-level: %v", err)
	}
	if o.lease.Namespace != "" {
		if err := o.lease.CheckLease(); err != nil {
			return badUsage(fs, "--lease-namespace, --pod-name, --lease-duration, --lease-renew-interval: %v", err)
		}
	}
	return nil
}

// runAuthz serves until SIGTERM, SIGINT or o.stop, then drains as serve does (server.Run).
func runAuthz(o authzOptions, stderr io.Writer) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.level)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	cfg, err := readAuthzConfig(o.config)
	if err != nil {
		return err
	}
	if err := cfg.CheckClientCA(o.clientCA != ""); err != nil {
		return fmt.Errorf("--config %s: %w", o.config, err)
	}
	clients, err := authzClients(o.kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := server.SignalContext(o.stop)
	defer stop()
	store := authz.NewStore()
	c := gateway.NewCache(clients, store, gateway.CacheConfig{Pods: cfg.SourceMode, MaxAge: cfg.MaxCacheAge,
		Logger: logger})
	if err := c.Start(ctx); err != nil {
		return err
	}
	m := gateway.NewMetrics(version, gateway.CacheGauges{Cache: c.State, Counts: store.Counts})
	h, err := gateway.NewHandler(gateway.HandlerConfig{Resolver: cfg.Resolver, View: store, Cache: c.State,
		UnknownCaller: cfg.UnknownCaller, Now: time.Now, Metrics: m, Logger: logger})
	if err != nil {
		return err
	}
	var draining atomic.Bool
	probes := gateway.Probes(m.Handler(), c.State, &draining)
	tlsCfg, err := authzTLS(o, logger)
	if err != nil {
		return err
	}
	calls := &http.Server{Addr: o.addr, Handler: h, MaxHeaderBytes: o.maxHeaderBytes,
		ReadHeaderTimeout: o.readTimeout, ReadTimeout: o.readTimeout, WriteTimeout: o.readTimeout,
		IdleTimeout: o.idleTimeout, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	endpoints := []server.Endpoint{
		{Server: calls, TLS: tlsCfg, Conns: &server.ConnLimits{Max: o.maxConns, PerPeer: o.maxConnsPerPeer,
			Trusted: cfg.Resolver.MayBeGateway, Untrusted: o.maxUntrustedConns}},
		{Server: server.New(o.metricsAddr, probes, logger)},
	}
	reported := reportLease(ctx, o.lease, clients, store, c, logger)
	defer func() { stop(); <-reported }() // the Lease is deleted before the process exits, whatever ended the run
	return server.Run(ctx, logger, &draining, endpoints, func(addrs []string) {
		if o.onListen != nil {
			o.onListen(addrs[0], addrs[1])
		}
		logger.Info("serving authorization calls", "addr", addrs[0], "metrics", addrs[1],
			"version", version, "tls", tlsCfg != nil, "gateways_verified_by_certificate", o.clientCA != "",
			"watch_pods", cfg.SourceMode, "unknown_caller", cfg.UnknownCaller, "max_cache_age", cfg.MaxCacheAge.String())
	})
}

// reportLease keeps the replica's Lease until ctx ends and deletes it then; the channel closes once it has.
func reportLease(ctx context.Context, cfg gateway.LeaseConfig, clients gateway.Clients, store *authz.Store,
	c *gateway.Cache, logger *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	if cfg.Namespace == "" {
		logger.Warn("no --lease-namespace and no $POD_NAMESPACE: this replica writes no Lease, " +
			"so budgets' status does not count it")
		close(done)
		return done
	}
	cfg.Refusing, cfg.Cache, cfg.Logger = store.Refusing, c.State, logger
	r := gateway.NewLeaseReporter(clients.Kube.CoordinationV1(), cfg)
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	return done
}

func readAuthzConfig(path string) (gateway.Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return gateway.Config{}, fmt.Errorf("--config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, gateway.MaxConfigBytes+1))
	if err != nil {
		return gateway.Config{}, fmt.Errorf("--config %s: %w", path, err)
	}
	cfg, err := gateway.ParseConfig(data)
	if err != nil {
		return gateway.Config{}, fmt.Errorf("--config %s: %w", path, err)
	}
	return cfg, nil
}

func authzClients(kubeconfig string) (gateway.Clients, error) {
	rc, err := kubeConfig(kubeconfig)
	if err != nil {
		return gateway.Clients{}, err
	}
	rc.UserAgent = "llmbudget-authz/" + version
	return gateway.NewClients(rc)
}

// authzTLS is the TLS of the authorization calls, if any: the certificate reloaded per handshake, and the gateways'
// client certificates verified when a CA is given (an unverified certificate is never an identity).
func authzTLS(o authzOptions, logger *slog.Logger) (*tls.Config, error) {
	cfg, err := server.ReloadingTLS(o.certFile, o.keyFile, logger, "h2", "http/1.1")
	if err != nil || cfg == nil || o.clientCA == "" {
		return cfg, err
	}
	pem, err := os.ReadFile(o.clientCA)
	if err != nil {
		return nil, fmt.Errorf("--tls-client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-client-ca-file %s: no PEM certificate", o.clientCA)
	}
	cfg.ClientCAs, cfg.ClientAuth = pool, tls.VerifyClientCertIfGiven
	return cfg, nil
}
