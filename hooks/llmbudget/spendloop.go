package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/llmbudget/llmbudget/internal/server"
	"github.com/llmbudget/llmbudget/internal/spendwriter"
)

// spendLoop is spend --all --loop: the replica that holds the Lease runs the writer every --interval; the others
// wait for it. It returns (the process exits) on SIGTERM, handing the Lease back, or once it lost the Lease: a
// leader that cannot renew stops writing at once, and its Pod restarts as a follower.
func spendLoop(f spendFlags, w spendwriter.Writer, kube kubernetes.Interface, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	identity, err := f.replica()
	if err != nil {
		return err
	}
	m := spendwriter.NewMetrics(version)
	m.SetLeader(false)
	if f.metricsAddr != "" {
		stopMetrics, err := serveWriterMetrics(ctx, f.metricsAddr, m, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	loop := spendwriter.Loop{Writer: w, Namespace: f.namespace, Interval: f.interval, Deadline: f.deadline,
		Metrics: m}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: f.leaseName, Namespace: f.leaseNamespace},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	lost := false
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: f.leaseName, LeaseDuration: f.leaseDuration, RenewDeadline: f.renewDeadline,
		RetryPeriod: f.retryFor, ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				log.Info("leading: writing spend", "lease", f.leaseNamespace+"/"+f.leaseName, "identity", identity)
				m.SetLeader(true)
				_ = loop.Run(ctx) // until the term ends
			},
			OnStoppedLeading: func() {
				m.SetLeader(false)
				lost = ctx.Err() == nil
			},
			OnNewLeader: func(leader string) {
				if leader != identity {
					log.Info("following: another replica writes", "leader", leader, "identity", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	log.Info("waiting for the Lease", "lease", f.leaseNamespace+"/"+f.leaseName, "identity", identity)
	le.Run(ctx)
	if lost {
		return errors.New("lost the Lease " + f.leaseNamespace + "/" + f.leaseName +
			": stopped writing; restart to follow")
	}
	log.Info("stopped")
	return nil
}

// replica is this replica's name in the Lease: --identity, else $POD_NAME, else the host name.
func (f spendFlags) replica() (string, error) {
	if f.identity != "" {
		return f.identity, nil
	}
	if pod := os.Getenv("POD_NAME"); pod != "" {
		return pod, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("no --identity, no $POD_NAME, and no host name: %w", err)
	}
	return host, nil
}

// serveWriterMetrics serves /metrics and /healthz on addr until the returned func is called.
func serveWriterMetrics(ctx context.Context, addr string, m *spendwriter.Metrics,
	log *slog.Logger) (func(), error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	srv := server.New(addr, mux, log)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "reason", err.Error())
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
