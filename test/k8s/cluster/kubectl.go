package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// KubectlTimeout bounds one kubectl call.
const KubectlTimeout = 2 * time.Minute

// Env is the environment for a program that should talk to this cluster: the test's
// environment with KUBECONFIG pointing at the cluster's admin kubeconfig.
func (c *Cluster) Env() []string {
	return append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
}

// Run runs kubectl with args against this cluster, stdin as its input (may be empty),
// and returns its standard output and standard error separately.
func (c *Cluster) Run(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, KubectlTimeout)
	defer cancel()
	full := append([]string{"--kubeconfig=" + c.Kubeconfig, "--cache-dir=" + c.cacheDir}, args...)
	cmd := exec.CommandContext(ctx, c.KubectlPath, full...)
	cmd.Env = c.Env()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), err
}

// Kubectl runs kubectl and returns its standard output; the test fails at once if kubectl
// does.
func (c *Cluster) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, _, err := c.Run(context.Background(), "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// KubectlErr runs kubectl for a call that may fail, returning what a user would see on
// the terminal (standard output then standard error) and the error, if any.
func (c *Cluster) KubectlErr(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	out, errOut, err := c.Run(context.Background(), stdin, args...)
	return out + errOut, err
}

// ApplyYAML server-side applies manifest (one or more YAML documents) in namespace (no
// namespace flag when empty) and fails the test if the API server refuses it. Extra
// arguments go to kubectl apply, for example "--dry-run=server".
func (c *Cluster) ApplyYAML(t testing.TB, namespace, manifest string, extra ...string) string {
	t.Helper()
	out, err := c.ApplyYAMLErr(t, namespace, manifest, extra...)
	if err != nil {
		t.Fatalf("apply:\n%s\n%v", manifest, err)
	}
	return out
}

// ApplyYAMLErr is ApplyYAML for manifests that may be refused: it returns kubectl's
// output and error instead of failing the test.
func (c *Cluster) ApplyYAMLErr(t testing.TB, namespace, manifest string, extra ...string) (string, error) {
	t.Helper()
	args := []string{"apply", "--server-side", "--field-manager=llmbudget-test", "-f", "-"}
	if namespace != "" {
		args = append(args, "--namespace="+namespace)
	}
	return c.KubectlErr(t, manifest, append(args, extra...)...)
}

// Namespace creates a namespace named prefix-<random> and deletes it when the test ends.
func (c *Cluster) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	name := prefix + "-" + hex.EncodeToString(suffix)
	c.Kubectl(t, "create", "namespace", name)
	t.Cleanup(func() {
		// Do not wait: the namespace controller finishes the deletion in the background.
		_, _, _ = c.Run(context.Background(), "", "delete", "namespace", name, "--wait=false", "--ignore-not-found")
	})
	return name
}

// EnsureNamespace creates namespace name unless it exists. It is not deleted afterwards:
// use it for names that manifests fix.
func (c *Cluster) EnsureNamespace(t testing.TB, name string) {
	t.Helper()
	manifest := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", name)
	c.ApplyYAML(t, "", manifest)
}

// InstallCRDs applies the CustomResourceDefinitions in path (a file or a directory) and
// waits until every one of them is Established and served.
func (c *Cluster) InstallCRDs(t testing.TB, path string) {
	t.Helper()
	c.Kubectl(t, "apply", "--server-side", "--field-manager=llmbudget-test", "-f", path)
	names := strings.Fields(c.Kubectl(t, "get", "-f", path, "-o", "jsonpath={.items[*].metadata.name}"))
	if len(names) == 0 {
		// A single object prints without items.
		names = strings.Fields(c.Kubectl(t, "get", "-f", path, "-o", "jsonpath={.metadata.name}"))
	}
	for _, name := range names {
		c.Kubectl(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/"+name)
		plural := strings.SplitN(name, ".", 2)[0]
		group := strings.SplitN(name, ".", 2)[1]
		// Established comes before discovery lists the resource; kubectl needs the latter.
		WaitFor(t, time.Minute, "discovery to serve "+name, func() (bool, string) {
			out, err := c.KubectlErr(t, "", "api-resources", "--api-group="+group, "-o", "name")
			return err == nil && (containsLine(out, name) || containsLine(out, plural)), out
		})
	}
}

func containsLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// WaitFor polls cond every 250ms until it reports true, failing the test with what and
// cond's last explanation when timeout passes first.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() (ok bool, detail string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last: %s", timeout, what, detail)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
