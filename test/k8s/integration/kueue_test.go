//go:build integration

package integration_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// The Kueue example against a real Kueue v0.17.0 (built by build-kueue.sh from the Go module proxy) running
// beside the real API server: a Job queued while its namespace carries llmbudget.dev/blocked is accepted and
// waits, suspended, however often Kueue looks at it; it starts within seconds of the label going.

// kueueVersion is the Kueue release build-kueue.sh builds.
const kueueVersion = "v0.17.0"

// kueueBlockedMessage is how Kueue's scheduler says why it does not admit a workload of a namespace that the
// ClusterQueue's namespaceSelector leaves out (pkg/scheduler/scheduler.go).
const kueueBlockedMessage = "Workload namespace doesn't match ClusterQueue selector"

// kueueDir is where build-kueue.sh put the kueue binary, Kueue's CRDs (crds/) and the conversion webhook
// patches of Kueue's own kustomization (conversion/).
func kueueDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("LLMBUDGET_KUEUE_BIN")
	if dir == "" {
		home, err := os.UserHomeDir()
		require.NoError(t, err)
		dir = filepath.Join(home, ".cache", "llmbudget", "kueue", kueueVersion)
	}
	for _, f := range []string{"kueue", "crds", "conversion"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("no Kueue at %s: run test/k8s/build-kueue.sh (%v)", dir, err)
		}
	}
	return dir
}

// startKueue installs Kueue's CRDs and runs the Kueue controller against the test's control plane until the
// test ends; it returns once Kueue is ready. What is different from a Deployment in kueue-system, and why:
//
//   - No webhook configurations are registered, so the API server stores objects exactly as they are sent (the
//     example Job is created suspended, as it must be without Kueue's mutating webhook).
//   - Internal certificate management stays on: with it off, Kueue v0.17.0 insists on a metrics certificate at
//     the fixed path /etc/kueue/metrics/certs and exits. Its rotator needs the Secret
//     kueue-webhook-server-cert to exist and the certificates "mounted" in the webhook's certDir; the test
//     generates them (kueueCerts) and puts the same files in both places, as a kubelet would mount the Secret.
//   - The conversion webhooks that Kueue's kustomization adds to five CRDs point at
//     https://127.0.0.1:<webhook port>/convert instead of the kueue-webhook-service (there are no Services to
//     route to here), so conversion between v1beta1 and v1beta2 works as in a cluster. The rotator refuses to
//     become ready unless those CRDs carry a conversion webhook to inject its CA into.
//   - Leader election, the metrics server and the visibility API server (an aggregated API server on a fixed
//     port) are off; health probes listen on a free loopback port, and /readyz says when Kueue is ready.
func startKueue(t *testing.T) *kueueProcess {
	t.Helper()
	src := kueueDir(t)
	work := t.TempDir()
	ports, err := cluster.FreePorts(2)
	require.NoError(t, err)
	webhookPort, healthPort := ports[0], ports[1]

	certDir := filepath.Join(work, "certs")
	caPEM := kueueCerts(t, certDir)
	crds := kueueCRDs(t, src, filepath.Join(work, "crds"), caPEM, webhookPort)
	kube.InstallCRDs(t, crds)
	// Removed after Kueue has stopped (cleanups run last-registered first), when no object of Kueue is left.
	t.Cleanup(func() { _, _ = kube.KubectlErr(t, "", "delete", "-f", crds, "--wait=false", "--ignore-not-found") })

	kube.EnsureNamespace(t, "kueue-system")
	t.Cleanup(func() {
		_, _ = kube.KubectlErr(t, "", "delete", "namespace", "kueue-system", "--wait=false", "--ignore-not-found")
	})
	kube.Kubectl(t, "create", "secret", "generic", "kueue-webhook-server-cert", "-n", "kueue-system",
		"--from-file="+certDir)

	config := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
integrations:
  frameworks: ["batch/job"]
featureGates:
  VisibilityOnDemand: false
`, webhookPort, certDir, healthPort)
	configFile := filepath.Join(work, "config.yaml")
	require.NoError(t, os.WriteFile(configFile, []byte(config), 0o600))

	k := &kueueProcess{
		bin:     filepath.Join(src, "kueue"),
		args:    []string{"--config=" + configFile, "--kubeconfig=" + kube.Kubeconfig},
		logPath: filepath.Join(work, "kueue.log"),
		readyz:  fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort),
	}
	t.Cleanup(func() {
		if t.Failed() && k.proc != nil {
			t.Logf("kueue log (last 60 lines):\n%s", k.proc.Tail(60))
		}
		k.stop()
	})
	k.start(t)
	log, err := os.ReadFile(k.logPath)
	require.NoError(t, err)
	require.Contains(t, string(log), `"gitVersion":"`+kueueVersion+`"`, "%s is Kueue %s", k.bin, kueueVersion)
	return k
}

// kueueProcess is the Kueue controller the test runs; its log collects every run's output.
type kueueProcess struct {
	bin, logPath, readyz string
	args                 []string
	proc                 *cluster.Process // of the latest run
}

// start runs Kueue and waits until /readyz says it is ready (its certificates in place and its webhook server
// listening), failing the test with the log if it exits first.
func (k *kueueProcess) start(t *testing.T) {
	t.Helper()
	proc, err := cluster.StartProcess(k.bin, "", k.logPath, k.args...)
	require.NoError(t, err)
	k.proc = proc
	cluster.WaitFor(t, 2*time.Minute, "Kueue to be ready", func() (bool, string) {
		select {
		case <-proc.Done():
			t.Fatalf("kueue exited before it was ready: %v\n%s", proc.Err(), proc.Tail(40))
		default:
		}
		resp, err := http.Get(k.readyz)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

// stop ends Kueue as Kubernetes would (SIGTERM, then SIGKILL after 15 seconds); a stopped one stays stopped.
func (k *kueueProcess) stop() {
	if k.proc != nil {
		k.proc.Stop(15 * time.Second)
	}
}

// restart stops Kueue and starts it again, as a rollout or a crash would.
func (k *kueueProcess) restart(t *testing.T) {
	t.Helper()
	k.stop()
	k.start(t)
}

// kueueCRDs writes Kueue's CRDs from src/crds into dir, those named by a patch in src/conversion with that
// patch's conversion webhook, served at 127.0.0.1:port and trusted through caPEM. It returns dir.
func kueueCRDs(t *testing.T, src, dir string, caPEM []byte, port int) string {
	t.Helper()
	url := fmt.Sprintf("https://127.0.0.1:%d/convert", port)
	patches, err := filepath.Glob(filepath.Join(src, "conversion", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, patches, "Kueue's kustomization gives some CRDs a conversion webhook")
	conversions := map[string]*apiextensionsv1.CustomResourceConversion{}
	for _, p := range patches {
		var patch apiextensionsv1.CustomResourceDefinition
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, yaml.Unmarshal(data, &patch), p)
		conversion := patch.Spec.Conversion
		require.NotNil(t, conversion, p)
		require.NotNil(t, conversion.Webhook, p)
		conversion.Webhook.ClientConfig = &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: caPEM}
		conversions[patch.Name] = conversion
	}

	files, err := filepath.Glob(filepath.Join(src, "crds", "*.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		// Only spec.conversion changes: the rest of the CRD goes through untouched, not through Go types.
		var crd map[string]any
		require.NoError(t, yaml.Unmarshal(data, &crd), f)
		var meta struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal(data, &meta), f)
		if conversion, ok := conversions[meta.Metadata.Name]; ok {
			spec, ok := crd["spec"].(map[string]any)
			require.True(t, ok, "%s has a spec", f)
			spec["conversion"] = conversion
			delete(conversions, meta.Metadata.Name)
		}
		out, err := yaml.Marshal(crd)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(f)), out, 0o600))
	}
	require.Empty(t, conversions, "every CRD a conversion patch names is among Kueue's CRDs")
	return dir
}

// kueueCerts writes into dir the files of the Secret kueue-webhook-server-cert as Kueue's certificate
// rotator (open-policy-agent/cert-controller) accepts them without making new ones: ca.crt and ca.key, a CA
// named kueue-ca with an RSA key in PKCS #1 (the only form the rotator reads back), and tls.crt and tls.key,
// signed by it for the webhook Service's name (which the rotator verifies) and for 127.0.0.1 (where the API
// server calls the conversion webhook here). Both stay valid for a year, beyond the rotator's 90-day
// lookahead. It returns the CA certificate, PEM.
func kueueCerts(t *testing.T, dir string) []byte {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	now := time.Now().Add(-time.Hour)
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kueue-ca", Organization: []string{"kueue"}},
		DNSNames:              []string{"kueue-ca"},
		NotBefore:             now,
		NotAfter:              now.AddDate(1, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serving := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kueue-webhook-service.kueue-system.svc"},
		DNSNames:     []string{"kueue-webhook-service.kueue-system.svc"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now,
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, serving, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)

	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	for name, block := range map[string]*pem.Block{
		"ca.crt":  {Type: "CERTIFICATE", Bytes: caDER},
		"ca.key":  {Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(caKey)},
		"tls.crt": {Type: "CERTIFICATE", Bytes: servingDER},
		"tls.key": {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(block), 0o600))
	}
	return caPEM
}

// kueueWorkload is the part of a Kueue Workload the test reads.
type kueueWorkload struct {
	metav1.ObjectMeta `json:"metadata"`
	Status            struct {
		Admission *struct {
			ClusterQueue string `json:"clusterQueue"`
		} `json:"admission"`
		Conditions []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

// workloadOf returns the Workload Kueue made for Job job in namespace, or nil while there is none.
func workloadOf(t *testing.T, namespace, job string) *kueueWorkload {
	t.Helper()
	var list struct {
		Items []kueueWorkload `json:"items"`
	}
	out := kube.Kubectl(t, "get", "workloads.kueue.x-k8s.io", "-n", namespace, "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	for i, w := range list.Items {
		for _, owner := range w.OwnerReferences {
			if owner.Kind == "Job" && owner.Name == job {
				return &list.Items[i]
			}
		}
	}
	return nil
}

// jobSuspended reports whether Job name in namespace has spec.suspend true.
func jobSuspended(t *testing.T, namespace, name string) bool {
	t.Helper()
	var job batchv1.Job
	require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "get", "job", name, "-n", namespace, "-o", "json")), &job))
	return job.Spec.Suspend != nil && *job.Spec.Suspend
}

// pendingEvents counts the times Kueue's scheduler recorded that it did not admit workload wl of namespace (its
// Warning Events with reason Pending, which the event recorder folds into one Event with a count).
func pendingEvents(t *testing.T, namespace, wl string) int32 {
	t.Helper()
	var events corev1.EventList
	out := kube.Kubectl(t, "get", "events", "-n", namespace, "-o", "json",
		"--field-selector=involvedObject.kind=Workload,involvedObject.name="+wl+",reason=Pending")
	require.NoError(t, json.Unmarshal([]byte(out), &events))
	var n int32
	for _, e := range events.Items {
		n += max(e.Count, 1)
	}
	return n
}

// inNamespace returns manifest (one object) moved to namespace.
func inNamespace(t *testing.T, manifest []byte, namespace string) string {
	t.Helper()
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal(manifest, &obj))
	meta, ok := obj["metadata"].(map[string]any)
	require.True(t, ok, "the manifest has metadata")
	meta["namespace"] = namespace
	out, err := yaml.Marshal(obj)
	require.NoError(t, err)
	return string(out)
}

func TestAQueuedJobWaitsInRealKueueWhileItsNamespaceIsBlockedAndStartsWithinSecondsOfTheLabelGoing(t *testing.T) {
	installBudgetCRD(t)
	dir := filepath.Join(repoRoot, "examples", "kueue")
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return data
	}

	// team-ml is blocked before anything is queued, as the namespace posture decorator labels it while a budget
	// blocks it. Deleted last, once Kueue has stopped and nothing of Kueue is left in it.
	kube.EnsureNamespace(t, "team-ml")
	t.Cleanup(func() {
		_, _ = kube.KubectlErr(t, "", "delete", "namespace", "team-ml", "--wait=true", "--timeout=90s")
	})
	kube.Kubectl(t, "label", "namespace", "team-ml", "--overwrite", "llmbudget.dev/blocked=true")

	kueue := startKueue(t)
	queue := []string{"resourceflavor.yaml", "clusterqueue.yaml", "localqueue.yaml"}
	// Kueue puts finalizers on its objects and removes them itself: delete them while it still runs.
	t.Cleanup(func() {
		args := []string{"delete", "--ignore-not-found", "--wait=true", "--timeout=60s", "-f", filepath.Join(dir, "job.yaml")}
		for i := len(queue) - 1; i >= 0; i-- {
			args = append(args, "-f", filepath.Join(dir, queue[i]))
		}
		if out, err := kube.KubectlErr(t, "", args...); err != nil {
			t.Logf("delete the Kueue example: %v\n%s", err, out)
		}
	})
	for _, f := range queue {
		kube.ApplyYAML(t, "", string(read(f)))
	}
	// Read in v1beta1, the ClusterQueue goes through Kueue's conversion webhook: the setup is Kueue's own.
	require.Equal(t, "kueue.x-k8s.io/v1beta1", kube.Kubectl(t, "get", "clusterqueues.v1beta1.kueue.x-k8s.io",
		"llm-batch", "-o", "jsonpath={.apiVersion}"))
	out, err := kube.KubectlErr(t, string(read("budget.yaml")), "create", "-f", "-", "--dry-run=server")
	require.NoError(t, err, "the budget that leaves Jobs to the queue is admitted: %s", out)

	// The Job, created as a user submits it, is accepted while the namespace is blocked.
	out, err = kube.KubectlErr(t, string(read("job.yaml")), "create", "-f", "-")
	require.NoError(t, err, "the queued Job is accepted while team-ml is blocked: %s", out)

	// Kueue has looked at it and said no because of the namespace: not merely not yet.
	var wl *kueueWorkload
	cluster.WaitFor(t, time.Minute, "Kueue to find the Workload of the blocked Job inadmissible", func() (bool, string) {
		wl = workloadOf(t, "team-ml", "finetune")
		if wl == nil {
			return false, "no Workload yet"
		}
		if wl.Status.Admission != nil {
			t.Fatalf("Kueue admitted the Workload of the blocked Job: %+v", wl.Status.Conditions)
		}
		c := meta.FindStatusCondition(wl.Status.Conditions, "QuotaReserved")
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "Pending" && c.Message == kueueBlockedMessage,
			fmt.Sprintf("conditions %+v", wl.Status.Conditions)
	})
	assert.Nil(t, wl.Status.Admission, "the Workload of the blocked Job is not admitted")
	assert.True(t, jobSuspended(t, "team-ml", "finetune"), "the blocked Job stays suspended")

	// A control: the same Job and LocalQueue in a namespace without the label is admitted through the same
	// ClusterQueue, so there is room in it and Kueue is scheduling.
	open := kube.Namespace(t, "kueue-open")
	t.Cleanup(func() {
		_, _ = kube.KubectlErr(t, "", "delete", "job,localqueue", "--all", "-n", open, "--wait=true", "--timeout=60s")
	})
	kube.ApplyYAML(t, "", inNamespace(t, read("localqueue.yaml"), open))
	out, err = kube.KubectlErr(t, inNamespace(t, read("job.yaml"), open), "create", "-f", "-")
	require.NoError(t, err, out)
	cluster.WaitFor(t, time.Minute, "Kueue to start the Job of the unblocked namespace", func() (bool, string) {
		return !jobSuspended(t, open, "finetune"), "suspended"
	})

	assert.True(t, jobSuspended(t, "team-ml", "finetune"), "the blocked Job is still suspended")

	// Kueue keeps a workload refused for its namespace aside until the namespace or the queue changes, so it is
	// not looked at again while nothing changes. A restarted Kueue (a rollout, a crash) looks at every pending
	// workload afresh: it refuses the blocked one again.
	before := pendingEvents(t, "team-ml", wl.Name)
	require.GreaterOrEqual(t, before, int32(1), "Kueue recorded why the blocked Workload waits")
	kueue.restart(t)
	// Until its cache holds the ClusterQueue, a restarted Kueue may first say "ClusterQueue llm-batch doesn't
	// exist": it has looked again once it refuses the Workload for its namespace.
	cluster.WaitFor(t, time.Minute, "the restarted Kueue to refuse the blocked Workload again", func() (bool, string) {
		n := pendingEvents(t, "team-ml", wl.Name)
		now := workloadOf(t, "team-ml", "finetune")
		if now == nil {
			return false, "no Workload"
		}
		c := meta.FindStatusCondition(now.Status.Conditions, "QuotaReserved")
		refused := c != nil && c.Message == kueueBlockedMessage
		return n > before && refused, fmt.Sprintf("%d Pending events (%d before the restart), QuotaReserved %+v",
			n, before, c)
	})
	wl = workloadOf(t, "team-ml", "finetune")
	require.NotNil(t, wl)
	assert.Nil(t, wl.Status.Admission, "the Workload is still not admitted after the restarted Kueue looked at it")
	if c := meta.FindStatusCondition(wl.Status.Conditions, "QuotaReserved"); assert.NotNil(t, c) {
		assert.Equal(t, kueueBlockedMessage, c.Message)
	}
	assert.True(t, jobSuspended(t, "team-ml", "finetune"), "the blocked Job is still suspended")

	// The block lifts (the label goes, e.g. at the period reset): Kueue admits and unsuspends the Job.
	kube.Kubectl(t, "label", "namespace", "team-ml", "llmbudget.dev/blocked-")
	lifted := time.Now()
	cluster.WaitFor(t, 10*time.Second, "Kueue to unsuspend the Job once the label is gone", func() (bool, string) {
		return !jobSuspended(t, "team-ml", "finetune"), "suspended"
	})
	t.Logf("the Job was unsuspended %s after the label went (polled every 250ms)",
		time.Since(lifted).Round(time.Millisecond))
	wl = workloadOf(t, "team-ml", "finetune")
	require.NotNil(t, wl)
	if assert.NotNil(t, wl.Status.Admission, "the Workload is admitted") {
		assert.Equal(t, "llm-batch", wl.Status.Admission.ClusterQueue)
	}
	if c := meta.FindStatusCondition(wl.Status.Conditions, "Admitted"); assert.NotNil(t, c) {
		assert.Equal(t, metav1.ConditionTrue, c.Status)
	}
}

// The ClusterQueue's namespaceSelector, as the API server selects namespaces, picks exactly the unblocked ones.
func TestTheKueueClusterQueueSelectsExactlyTheUnblockedNamespaces(t *testing.T) {
	var cq struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
		} `json:"spec"`
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "examples", "kueue", "clusterqueue.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &cq))
	require.Equal(t, "kueue.x-k8s.io/v1beta2 ClusterQueue", cq.APIVersion+" "+cq.Kind)
	selector, err := metav1.LabelSelectorAsSelector(&cq.Spec.NamespaceSelector)
	require.NoError(t, err)
	require.Equal(t, "!llmbudget.dev/blocked", selector.String())

	for name, blocked := range map[string]bool{"kueue-blocked": true, "kueue-unblocked": false} {
		kube.EnsureNamespace(t, name)
		args := []string{"label", "namespace", name, "--overwrite", "kueue-test=yes"}
		if blocked {
			args = append(args, "llmbudget.dev/blocked=true")
		}
		kube.Kubectl(t, args...)
		t.Cleanup(func() { _, _ = kube.KubectlErr(t, "", "delete", "namespace", name, "--wait=false") })
	}
	selected := strings.Fields(kube.Kubectl(t, "get", "namespace", "-l", selector.String()+",kueue-test=yes",
		"-o", "jsonpath={.items[*].metadata.name}"))
	sort.Strings(selected)
	assert.Equal(t, []string{"kueue-unblocked"}, selected, "the queue admits from the unblocked namespace only")
}
