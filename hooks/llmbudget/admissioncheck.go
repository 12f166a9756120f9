package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/llmbudget/llmbudget/internal/admissioncheck"
	"github.com/llmbudget/llmbudget/internal/admissioncheck/controller"
	"github.com/llmbudget/llmbudget/internal/server"
)

type admissionCheckOptions struct {
	kubeconfig, level, probeAddr string
	hold                         string
	workers                      int
	resync                       time.Duration
	leaderElect                  bool
	leaseNamespace, leaseName    string
	stop                         <-chan struct{}
}

var admissionCheckCommand = command{
	name: "admissioncheck", synopsis: "[flags]",
	summary: "hold Kueue Workloads while a budget that covers them blocks",
	about: `The Kueue admission check controller for AdmissionChecks with spec.controllerName
llmbudget.dev/budget. While a budget that covers a Workload refuses it (the refusal rule
the admission policies and authz use), the Workload's check is Pending, with a message that
names the budget, its spend and when its period ends; it turns Ready when the block lifts
(the period's reset, a raised limit, a suspended budget), and Kueue admits the Workload.
With --hold Retry, a Workload that holds a quota reservation is sent to Retry instead, with
requeueAfterSeconds at the period's end: Kueue (v0.17.0) keeps its reservation and looks
again then, even if the block lifts earlier. A Workload Kueue has admitted is left alone.

It reads Workloads and AdmissionChecks (kueue.x-k8s.io/v1beta2) and both budget kinds with
informers (and, while a Labelled budget blocks, the label llmbudget.dev/budget of the Job that
owns a Workload Kueue did not copy it to), and writes only its own entries of Workloads' status.admissionChecks and its
AdmissionChecks' Active condition, by server-side apply with field manager
llmbudget-admissioncheck (the kubeconfig of --kubeconfig or $KUBECONFIG, else the Pod's
service account). Replicas elect a leader through a Lease in --leader-election-namespace.
/healthz and /readyz are served on --probe-addr. Runs until SIGTERM or SIGINT.`,
	run: func(args []string, std stdio) error {
		o, err := parseAdmissionCheck(args)
		if err != nil {
			return err
		}
		return runAdmissionCheck(o, std.err)
	},
}

func parseAdmissionCheck(args []string) (admissionCheckOptions, error) {
	var o admissionCheckOptions
	fs := newFlagSet("admissioncheck")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else in-cluster)")
	fs.StringVar(&o.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.probeAddr, "probe-addr", ":8081", "listen address of /healthz and /readyz")
	fs.StringVar(&o.hold, "hold", string(admissioncheck.HoldPending),
		"how a held Workload waits: Pending (admitted as soon as the block lifts) or Retry "+
			"(requeueAfterSeconds at the period's end; Kueue looks again only then)")
	fs.IntVar(&o.workers, "workers", 2, "Workloads synced at once, 1 to 64")
	fs.DurationVar(&o.resync, "resync", 10*time.Minute, "informers' resync period (0: never)")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader among replicas through a Lease")
	fs.StringVar(&o.leaseNamespace, "leader-election-namespace", "",
		"namespace of the Lease (default $POD_NAMESPACE)")
	fs.StringVar(&o.leaseName, "leader-election-name", "llmbudget-admissioncheck", "name of the Lease")
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if o.leaseNamespace == "" {
		o.leaseNamespace = os.Getenv("POD_NAMESPACE")
	}
	switch {
	case fs.NArg() > 0:
		return o, badUsage(fs, "unexpected argument %q", fs.Arg(0))
	case o.hold != string(admissioncheck.HoldPending) && o.hold != string(admissioncheck.HoldRetry):
		return o, badUsage(fs, "--hold must be Pending or Retry, not %q", o.hold)
	case o.workers < 1 || o.workers > 64:
		return o, badUsage(fs, "--workers must be between 1 and 64")
	case o.resync < 0:
		return o, badUsage(fs, "--resync must not be negative")
	case o.leaderElect && o.leaseNamespace == "":
		return o, badUsage(fs, "--leader-elect needs --leader-election-namespace or $POD_NAMESPACE")
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.level)); err != nil {
		return o, badUsage(fs, "--log-level: %v", err)
	}
	return o, nil
}

func runAdmissionCheck(o admissionCheckOptions, stderr io.Writer) error {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(o.level)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	rc, err := kubeConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	rc.UserAgent = "llmbudget-admissioncheck/" + version
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	var election *controller.Election
	if o.leaderElect {
		kube, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return fmt.Errorf("kubernetes client: %w", err)
		}
		id, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("leader election identity: %w", err)
		}
		election = &controller.Election{Kube: kube, Namespace: o.leaseNamespace, Name: o.leaseName,
			Identity: id, Logger: logger}
	}
	ctx, stop := server.SignalContext(o.stop)
	defer stop()
	c := controller.New(dyn, controller.Config{Hold: admissioncheck.Hold(o.hold), Workers: o.workers,
		Resync: o.resync, Logger: logger})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- controller.RunElected(ctx, election, c.Run)
		cancel()
	}()
	var draining atomic.Bool
	err = server.Run(ctx, logger, &draining, []server.Endpoint{{Server: server.New(o.probeAddr,
		controller.Probes(c), logger)}}, func(addrs []string) {
		logger.Info("answering admission checks", "controllerName", admissioncheck.ControllerName,
			"probes", addrs[0], "version", version, "hold", o.hold, "leader_elect", o.leaderElect)
	})
	cancel()
	if runErr := <-errc; runErr != nil {
		return runErr
	}
	return err
}
