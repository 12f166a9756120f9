// Command kube-up starts the integration tests' control plane (etcd, kube-apiserver,
// kube-controller-manager) by hand, prints how to reach it, and stops it on Ctrl-C or
// SIGTERM: for poking at manifests with kubectl while writing a test.
//
//	go run ./cmd/kube-up            # from test/k8s, after ./build.sh
//	export KUBECONFIG=<printed path>
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := cluster.Start(ctx, cluster.Config{BinDir: cluster.DefaultBinDir()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-up:", err)
		os.Exit(1)
	}
	defer c.Stop()
	fmt.Printf("control plane %s at %s\nexport KUBECONFIG=%s\n(logs under %s; Ctrl-C stops it)\n",
		cluster.Version, c.Server, c.Kubeconfig, c.Dir)
	<-ctx.Done()
}
