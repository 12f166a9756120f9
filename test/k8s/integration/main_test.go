//go:build integration

// Package integration_test checks llmbudget's manifests against a real Kubernetes control
// plane (etcd, kube-apiserver and kube-controller-manager v1.37.2, started once for the
// package by TestMain) through kubectl, so failures read as a user would see them.
package integration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

var (
	// kube is the control plane shared by every test of the package.
	kube *cluster.Cluster
	// repoRoot is the llmbudget repository root.
	repoRoot string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := cluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = root

	start := time.Now()
	kube, err = cluster.Start(context.Background(), cluster.Config{BinDir: cluster.DefaultBinDir()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start control plane: %v\n", err)
		return 1
	}
	defer kube.Stop()
	fmt.Printf("control plane %s up in %s at %s (kubectl %s)\n",
		cluster.Version, time.Since(start).Round(time.Millisecond), kube.Server, kube.KubectlPath)

	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "some tests failed; control plane logs follow")
		kube.Logs(os.Stderr, 80)
	}
	return code
}

// budgetCRD is the path of the LLMCostBudget CustomResourceDefinition.
func budgetCRD() string {
	return filepath.Join(repoRoot, "deploy", "crd", "llmcostbudgets.llmbudget.dev.yaml")
}

// installBudgetCRD installs (or re-applies) the LLMCostBudget CRD and waits until it is
// served. Every test that needs it calls it, so tests do not depend on each other's order.
func installBudgetCRD(t *testing.T) {
	t.Helper()
	kube.InstallCRDs(t, budgetCRD())
}
