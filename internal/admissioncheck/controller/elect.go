package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Election is the leader election between replicas: only the leader runs the controller, so that two replicas
// never write one Workload's entry from different copies.
type Election struct {
	Kube      kubernetes.Interface
	Namespace string // of the Lease
	Name      string // the Lease's
	Identity  string // this replica's, unique among the replicas
	Logger    *slog.Logger
}

// Lease timings: client-go's usual ones. A new leader takes over at most leaseDuration after the last renewal.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// RunElected runs run while this replica leads, until ctx ends; it returns an error when leadership is lost
// while ctx is live, so that the process ends and its restart starts afresh. With e nil, run simply runs.
func RunElected(ctx context.Context, e *Election, run func(context.Context) error) error {
	if e == nil {
		return run(ctx)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Name},
		Client:     e.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.Identity},
	}
	errc := make(chan error, 1)
	lost := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				e.Logger.Info("leading", "lease", e.Namespace+"/"+e.Name, "identity", e.Identity)
				errc <- run(ctx)
			},
			OnStoppedLeading: func() { close(lost) },
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	le.Run(ctx)
	<-lost
	select {
	case err := <-errc:
		if err != nil {
			return err
		}
	default:
	}
	if ctx.Err() == nil {
		return fmt.Errorf("leader election: lost the lease %s/%s", e.Namespace, e.Name)
	}
	return nil
}

// Probes serves /healthz, and /readyz: not ready while this replica runs the controller and its informers have
// not synced. A replica that waits for the lease is ready, so that a rollout of several replicas goes on.
func Probes(c *Controller) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if c.running.Load() && !c.Synced() {
			http.Error(w, "not ready: the informers have not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	return mux
}
