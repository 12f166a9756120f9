// Package benchkit is what the benchmarks of test/k8s/cmd share: a control plane with llmbudget's CRDs and
// admission policies installed as deploy/ ships them, clients of it, work spread over parallel workers, and the
// spend writer run once as its Deployment runs it.
package benchkit

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// Budgets is the LLMCostBudget resource.
var Budgets = schema.GroupVersionResource{Group: "llmbudget.dev", Version: "v1alpha1", Resource: "llmcostbudgets"}

// Kube is the clients of a cluster, unthrottled: a benchmark paces itself.
type Kube struct {
	Typed   kubernetes.Interface
	Dynamic dynamic.Interface
}

// Start starts the real control plane of test/k8s with llmbudget's CRDs and admission policies, and returns it with
// its clients; Stop it when done.
func Start(ctx context.Context) (*cluster.Cluster, Kube, error) {
	c, err := cluster.Start(ctx, cluster.Config{BinDir: cluster.DefaultBinDir()})
	if err != nil {
		return nil, Kube{}, err
	}
	k, err := install(ctx, c)
	if err != nil {
		c.Stop()
		return nil, Kube{}, err
	}
	return c, k, nil
}

// install applies the CRDs and llmbudget's admission policies from deploy/, failurePolicy as shipped, and waits
// until the API server serves the budgets.
func install(ctx context.Context, c *cluster.Cluster) (Kube, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return Kube{}, err
	}
	steps := [][]string{
		{"apply", "--server-side", "-k", filepath.Join(root, "deploy", "crd")},
		{"wait", "--for=condition=Established", "--timeout=60s", "crd/llmcostbudgets.llmbudget.dev"},
		{"apply", "--server-side", "-f", filepath.Join(root, "deploy", "base", "admission")},
	}
	for _, args := range steps {
		if _, stderr, err := c.Run(ctx, "", args...); err != nil {
			return Kube{}, fmt.Errorf("%w: %s", err, stderr)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		out, _, err := c.Run(ctx, "", "api-resources", "--api-group=llmbudget.dev", "-o", "name")
		if err == nil && strings.Contains(out, "llmcostbudgets") {
			break
		}
		if time.Now().After(deadline) {
			return Kube{}, errors.New("the API server does not serve llmcostbudgets after a minute")
		}
		time.Sleep(time.Second)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return Kube{}, err
	}
	cfg.QPS, cfg.Burst = 5000, 5000
	var k Kube
	if k.Typed, err = kubernetes.NewForConfig(cfg); err != nil {
		return Kube{}, err
	}
	if k.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return Kube{}, err
	}
	return k, nil
}

// Parallel runs do(0..n-1) on parallel workers and returns the first error.
func Parallel(n, parallel int, do func(int) error) error {
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	next := atomic.Int64{}
	for range parallel {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := do(i); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return nil
}
