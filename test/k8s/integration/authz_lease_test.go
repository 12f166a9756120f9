//go:build integration

package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
	"github.com/llmbudget/llmbudget/test/k8s/deploytest"
)

// The Lease an authz replica keeps, as the deployed ServiceAccount: a real API server, the RBAC of
// deploy/overlays/authz, and authz stopped by SIGTERM as the kubelet stops it.

const (
	leaseTestPod     = "llmbudget-authz-5c9f7-lease"
	leaseTestName    = "llmbudget-authz." + leaseTestPod
	leaseTestNS      = "llmbudget-system"
	leaseTestRefusal = "llmbudget.dev/authz-refusing"
)

func TestARunningAuthzKeepsItsLeaseNamingTheBlockAndRemovesItWhenStopped(t *testing.T) {
	installAuthzCRDs(t)
	installAuthzRBAC(t)
	ns := kube.Namespace(t, "authz-lease")
	s := &authzScene{kube: kube}
	s.budget(t, ns, "team", "Open", map[string]any{"blocking": false})
	kubeconfig := serviceAccountKubeconfig(t, leaseTestNS, "llmbudget-authz")
	admin := kubeClient(t, kube.Kubeconfig)
	leases := admin.CoordinationV1().Leases(leaseTestNS)
	t.Cleanup(func() {
		_ = leases.Delete(context.Background(), leaseTestName, metav1.DeleteOptions{})
	})

	authz := startLeaseAuthz(t, kubeconfig)
	var first *coordinationv1.Lease
	cluster.WaitFor(t, 30*time.Second, "authz to create its Lease, synced", func() (bool, string) {
		l, err := leases.Get(context.Background(), leaseTestName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error() + "\n" + authz.logText(t)
		}
		first = l
		return l.Annotations[leaseTestRefusal] == `{"synced":true,"budgets":[],"truncated":false}`,
			l.Annotations[leaseTestRefusal]
	})
	assert.Equal(t, leaseTestPod, *first.Spec.HolderIdentity)
	assert.Equal(t, int32(4), *first.Spec.LeaseDurationSeconds)
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "llmbudget", "app.kubernetes.io/component": "authz"},
		first.Labels)

	s.budget(t, ns, "team", "Open", map[string]any{"blocking": true, "scope": "Namespace", "gates": []string{"Policy"},
		"resources": []string{"pods"}, "message": "LLMCostBudget " + ns + "/team is OverBudget"})
	want := fmt.Sprintf(`{"synced":true,"budgets":["LLMCostBudget %s/team"],"truncated":false}`, ns)
	var blocked *coordinationv1.Lease
	cluster.WaitFor(t, 30*time.Second, "the Lease to name the budget that blocks", func() (bool, string) {
		l, err := leases.Get(context.Background(), leaseTestName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		blocked = l
		return l.Annotations[leaseTestRefusal] == want, l.Annotations[leaseTestRefusal]
	})
	cluster.WaitFor(t, 10*time.Second, "a renewal", func() (bool, string) {
		l, err := leases.Get(context.Background(), leaseTestName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		assert.Equal(t, want, l.Annotations[leaseTestRefusal], "a renewal leaves the annotation alone")
		return l.Spec.RenewTime.After(blocked.Spec.RenewTime.Time), l.Spec.RenewTime.String()
	})

	t.Run("its ServiceAccount may write Leases of its namespace and nothing else", func(t *testing.T) {
		sa := kubeClient(t, kubeconfig)
		_, err := sa.CoreV1().ConfigMaps(leaseTestNS).Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "authz-was-here"}}, metav1.CreateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "a ConfigMap in its own namespace: %v", err)
		_, err = sa.CoordinationV1().Leases(ns).Create(context.Background(), &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: leaseTestName}}, metav1.CreateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "a Lease in another namespace: %v", err)
		_, err = sa.CoordinationV1().Leases(leaseTestNS).List(context.Background(), metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "listing Leases: %v", err)
		b := map[string]any{"status": map[string]any{"enforcement": map[string]any{"blocking": false}}}
		patch, err := json.Marshal(b)
		require.NoError(t, err)
		_, err = sa.Discovery().RESTClient().Patch("application/merge-patch+json").
			AbsPath("/apis/llmbudget.dev/v1alpha1/namespaces", ns, "llmcostbudgets", "team", "status").
			Body(patch).DoRaw(context.Background())
		assert.True(t, apierrors.IsForbidden(err), "lifting the block through the budget's status: %v", err)
	})

	t.Run("its ServiceAccount may write only its replicas' Leases, and a Pod's token only its own", func(t *testing.T) {
		sa := kubeClient(t, kubeconfig).CoordinationV1().Leases(leaseTestNS)
		lease := func(name string) *coordinationv1.Lease {
			return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}
		}
		// The policy's binding takes a moment to reach the API server's admission.
		cluster.WaitFor(t, 30*time.Second, "the spend writer's Lease to be refused", func() (bool, string) {
			_, err := sa.Create(context.Background(), lease("llmbudget-spend-writer"), metav1.CreateOptions{})
			if err == nil {
				_ = leases.Delete(context.Background(), "llmbudget-spend-writer", metav1.DeleteOptions{})
			}
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "only its replicas' Leases"),
				fmt.Sprint(err)
		})
		_, err := leases.Create(context.Background(), lease("llmbudget-spend-writer"), metav1.CreateOptions{})
		require.NoError(t, err, "as an administrator")
		t.Cleanup(func() { _ = leases.Delete(context.Background(), "llmbudget-spend-writer", metav1.DeleteOptions{}) })
		held := lease("llmbudget-spend-writer")
		got, err := sa.Get(context.Background(), "llmbudget-spend-writer", metav1.GetOptions{})
		require.NoError(t, err)
		held.ResourceVersion = got.ResourceVersion
		_, err = sa.Update(context.Background(), held, metav1.UpdateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "taking the spend writer's election over: %v", err)
		err = sa.Delete(context.Background(), "llmbudget-spend-writer", metav1.DeleteOptions{})
		assert.True(t, apierrors.IsForbidden(err), "deleting the spend writer's Lease: %v", err)

		// A token bound to a Pod, as a replica's is: its own Lease only.
		kube.ApplyYAML(t, leaseTestNS, `apiVersion: v1
kind: Pod
metadata: {name: llmbudget-authz-bound}
spec:
  serviceAccountName: llmbudget-authz
  automountServiceAccountToken: false
  containers: [{name: authz, image: registry.example/llmbudget:1}]
`)
		t.Cleanup(func() {
			_, _, _ = kube.Run(context.Background(), "", "-n", leaseTestNS, "delete", "pod", "llmbudget-authz-bound",
				"--ignore-not-found", "--grace-period=0", "--force")
		})
		pod := kubeClient(t, podBoundKubeconfig(t, "llmbudget-authz-bound")).CoordinationV1().Leases(leaseTestNS)
		_, err = pod.Create(context.Background(), lease("llmbudget-authz.another-replica"), metav1.CreateOptions{})
		assert.True(t, apierrors.IsForbidden(err), "another replica's Lease: %v", err)
		if err == nil {
			_ = leases.Delete(context.Background(), "llmbudget-authz.another-replica", metav1.DeleteOptions{})
		}
		_, err = pod.Create(context.Background(), lease("llmbudget-authz.llmbudget-authz-bound"), metav1.CreateOptions{})
		assert.NoError(t, err, "its own")
		_ = leases.Delete(context.Background(), "llmbudget-authz.llmbudget-authz-bound", metav1.DeleteOptions{})
	})

	require.NoError(t, authz.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-authz.exited:
		assert.NoError(t, err, "authz exits 0 on SIGTERM")
	case <-time.After(30 * time.Second):
		t.Fatal("authz did not exit within 30s of SIGTERM")
	}
	_, err := leases.Get(context.Background(), leaseTestName, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a stopped replica's Lease is gone at once, not after 4s: %v", err)
	assert.Contains(t, authz.logText(t), "authz's Lease deleted")
}

// leaseAuthz is an authz replica named leaseTestPod, its log in a file.
type leaseAuthz struct {
	cmd    *exec.Cmd
	exited chan error
	log    string
}

func (a *leaseAuthz) logText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(a.log)
	require.NoError(t, err)
	return string(b)
}

// startLeaseAuthz runs authz in header mode with kubeconfig, its Lease renewed every second for 4s.
func startLeaseAuthz(t *testing.T, kubeconfig string) *leaseAuthz {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "authz.yaml")
	require.NoError(t, os.WriteFile(config, []byte(`gateways:
- name: test
  addresses: ["127.0.0.1/32"]
  mode: header
  header: X-Llmbudget-Test-Namespace
unknownCaller: Admit
maxCacheAge: 30s
`), 0o600))
	a := &leaseAuthz{log: filepath.Join(dir, "authz.log"), exited: make(chan error, 1)}
	logf, err := os.Create(a.log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = logf.Close() })
	addr := freeAddr(t)
	a.cmd = exec.Command(buildLLMBudget(t), "authz", "--config", config, "--kubeconfig", kubeconfig,
		"--addr", addr, "--metrics-addr", freeAddr(t), "--log-level", "debug",
		"--lease-namespace", leaseTestNS, "--pod-name", leaseTestPod,
		"--lease-duration=4s", "--lease-renew-interval=1s")
	a.cmd.Stdout, a.cmd.Stderr = logf, logf
	require.NoError(t, a.cmd.Start())
	go func() { a.exited <- a.cmd.Wait() }()
	t.Cleanup(func() {
		_ = a.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("authz's log:\n%s", a.logText(t))
		}
	})
	cluster.WaitFor(t, 30*time.Second, "authz to listen", func() (bool, string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
	return a
}

// installAuthzRBAC applies authz's ServiceAccount, RBAC and Lease policy from deploy/overlays/authz, as deployed.
func installAuthzRBAC(t *testing.T) {
	t.Helper()
	objs, err := deploytest.Kustomize(repoRoot, "deploy/overlays/authz")
	require.NoError(t, err)
	var manifest strings.Builder
	n := 0
	for _, o := range objs {
		switch o["kind"] {
		case "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Role", "RoleBinding", "ValidatingAdmissionPolicy",
			"ValidatingAdmissionPolicyBinding":
			if name, _ := o["metadata"].(map[string]any)["name"].(string); strings.HasPrefix(name, "llmbudget-authz") {
				doc, err := yaml.Marshal(o)
				require.NoError(t, err)
				manifest.WriteString("---\n" + string(doc))
				n++
			}
		}
	}
	require.Equal(t, 7, n, "authz's ServiceAccount, ClusterRole, ClusterRoleBinding, Role, RoleBinding, and the "+
		"policy llmbudget-authz-leases and its binding")
	kube.EnsureNamespace(t, leaseTestNS)
	out, err := kube.KubectlErr(t, manifest.String(),
		"apply", "--server-side", "--field-manager=llmbudget-test", "-f", "-")
	require.NoError(t, err, out)
	t.Cleanup(func() {
		_, _, _ = kube.Run(context.Background(), manifest.String(), "delete", "-f", "-", "--ignore-not-found")
	})
}

// podBoundKubeconfig is serviceAccountKubeconfig for authz's ServiceAccount with a token bound to Pod pod of
// leaseTestNS, as the kubelet mounts it.
func podBoundKubeconfig(t *testing.T, pod string) string {
	t.Helper()
	token := strings.TrimSpace(kube.Kubectl(t, "-n", leaseTestNS, "create", "token", "llmbudget-authz",
		"--duration=1h", "--bound-object-kind=Pod", "--bound-object-name="+pod))
	require.NotEmpty(t, token)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q, "+
		"certificate-authority: %q}\nusers:\n- name: sa\n  user: {token: %q}\ncontexts:\n- name: c\n  context: "+
		"{cluster: c, user: sa}\ncurrent-context: c\n", kube.Server, kube.CACert, token)
	require.NoError(t, os.WriteFile(path, []byte(config), 0o600))
	return path
}

func kubeClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	c, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	return c
}
