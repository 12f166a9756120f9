package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
	"github.com/llmbudget/llmbudget/test/k8s/cmd/internal/benchkit"
	"github.com/llmbudget/llmbudget/test/k8s/deploytest"
)

// freeAddr is a free loopback address.
func freeAddr() (string, error) {
	ports, err := cluster.FreePorts(1)
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(ports[0]), nil
}

// start runs bin with args, its log in dir/name.log.
func start(dir, name, bin string, args ...string) (*cluster.Process, error) {
	p, err := cluster.StartProcess(bin, dir, filepath.Join(dir, name+".log"), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// waitFor polls cond every 250 ms until it holds, for at most timeout.
func waitFor(timeout time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s: %s", what, timeout, detail)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func get(u string) (string, error) {
	resp, err := http.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return string(body), err
}

// startPrometheus runs Prometheus scraping target every interval and returns its URL.
func startPrometheus(bin, dir, target string, interval time.Duration) (string, *cluster.Process, error) {
	config := fmt.Sprintf("global: {scrape_interval: %s, scrape_timeout: 10s}\nscrape_configs:\n"+
		"- job_name: litellm\n  honor_labels: true\n  static_configs: [{targets: [%q]}]\n", interval, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o600); err != nil {
		return "", nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	p, err := start(dir, "prometheus", bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "prometheus-data"), "--web.listen-address="+addr)
	if err != nil {
		return "", nil, fmt.Errorf("%w (bash test/k8s/build-prometheus.sh builds it)", err)
	}
	u := "http://" + addr
	return u, p, waitFor(time.Minute, "Prometheus to be ready", func() (bool, string) {
		_, err := get(u + "/-/ready")
		return err == nil, fmt.Sprint(err)
	})
}

// promQuery is the body of Prometheus' answer to the instant query q.
func promQuery(prom, q string) string {
	body, err := get(prom + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return err.Error()
	}
	return body
}

// metric is the sum of the samples of name (any labels) that addr's /metrics serves.
func metric(addr, name string) (float64, error) {
	body, err := get(addr + "/metrics")
	if err != nil {
		return 0, err
	}
	sum, found := 0.0, false
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, name+" ") && !strings.HasPrefix(l, name+"{") {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", l, err)
		}
		sum, found = sum+v, true
	}
	if !found {
		return 0, fmt.Errorf("%s/metrics has no %s", addr, name)
	}
	return sum, nil
}

// installWriterRBAC applies the writer's ServiceAccount, roles and bindings as deploy/overlays/spend-writer renders
// them, and returns a kubeconfig with a token of the ServiceAccount: a replica run with it acts as its Pod does.
func installWriterRBAC(ctx context.Context, c *cluster.Cluster, k benchkit.Kube, dir string) (string, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", err
	}
	objs, err := deploytest.Kustomize(root, "deploy/overlays/spend-writer")
	if err != nil {
		return "", err
	}
	var manifest strings.Builder
	for _, o := range objs {
		switch o["kind"] {
		case "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Role", "RoleBinding":
			if name, _ := o["metadata"].(map[string]any)["name"].(string); name == "llmbudget-spend-writer" {
				doc, err := yaml.Marshal(o)
				if err != nil {
					return "", err
				}
				manifest.WriteString("---\n" + string(doc))
			}
		}
	}
	if _, stderr, err := c.Run(ctx, manifest.String(), "apply", "--server-side", "-f", "-"); err != nil {
		return "", fmt.Errorf("apply the writer's RBAC: %w: %s", err, stderr)
	}
	ttl := int64(6 * 60 * 60)
	tok, err := k.Typed.CoreV1().ServiceAccounts(benchkit.WriterNamespace).CreateToken(ctx, "llmbudget-spend-writer",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("a token of the writer's ServiceAccount: %w", err)
	}
	path := filepath.Join(dir, "writer.kubeconfig")
	config := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q, "+
		"certificate-authority: %q}\nusers:\n- name: sa\n  user: {token: %q}\ncontexts:\n- name: c\n  context: "+
		"{cluster: c, user: sa}\ncurrent-context: c\n", c.Server, c.CACert, tok.Status.Token)
	return path, os.WriteFile(path, []byte(config), 0o600)
}

// createBurn creates b's namespace, its client's Pod (its address written as a kubelet would) and its budget.
func createBurn(ctx context.Context, k benchkit.Kube, b *burn, limitUSD int64) error {
	if _, err := k.Typed.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: b.ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := waitFor(time.Minute, "the default ServiceAccount of "+b.ns, func() (bool, string) {
		_, err := k.Typed.CoreV1().ServiceAccounts(b.ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	}); err != nil {
		return err
	}
	no := false
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: b.ns},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: &no,
			Containers: []corev1.Container{{Name: "agent", Image: "registry.example/agent:1"}}}}
	if _, err := k.Typed.CoreV1().Pods(b.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"status":{"phase":"Running","podIP":%q,"podIPs":[{"ip":%q}]}}`, b.ip, b.ip)
	if _, err := k.Typed.CoreV1().Pods(b.ns).Patch(ctx, "agent", types.MergePatchType, []byte(patch),
		metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	enforcement := map[string]any{"action": "BlockNewWorkloads", "gate": "Policy", "resources": []any{"jobs.batch"}}
	if b.blockOn != "" {
		enforcement["blockOn"] = b.blockOn
	}
	budget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "llmbudget.dev/v1alpha1", "kind": "LLMCostBudget",
		"metadata": map[string]any{"name": "agents", "namespace": b.ns},
		"spec": map[string]any{
			"limitUSD": strconv.FormatInt(limitUSD, 10),
			"period":   map[string]any{"type": "Monthly", "timeZone": "UTC"},
			"costSource": map[string]any{
				"configMapName": "llm-spend", "key": "total",
				"prometheus": map[string]any{"source": "litellm", "selector": map[string]any{"team": b.ns}},
			},
			"enforcement": enforcement,
		},
	}}
	// Strict: a blockOn the API server does not know is an error, not a field dropped.
	_, err := k.Dynamic.Resource(benchkit.Budgets).Namespace(b.ns).Create(ctx, budget,
		metav1.CreateOptions{FieldValidation: "Strict"})
	return err
}

// startAuthz runs llmbudget authz (source mode, Caddy's loopback address its gateway) and waits until it is ready.
func startAuthz(bin, dir, kubeconfig string) (string, *cluster.Process, error) {
	addr, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	metrics, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	config := filepath.Join(dir, "authz.yaml")
	if err := os.WriteFile(config, []byte("gateways:\n- name: caddy\n  addresses: [\"127.0.0.1/32\"]\n"+
		"  mode: source\nunknownCaller: Refuse\n"), 0o600); err != nil {
		return "", nil, err
	}
	p, err := start(dir, "authz", bin, "authz", "--config", config, "--kubeconfig", kubeconfig, "--addr", addr,
		"--metrics-addr", metrics)
	if err != nil {
		return "", nil, err
	}
	return addr, p, waitFor(time.Minute, "authz to be ready", func() (bool, string) {
		body, err := get("http://" + metrics + "/readyz")
		return err == nil, body + fmt.Sprint(err)
	})
}

// startCaddy runs Caddy with examples/gateways/Caddyfile as it is but for its addresses.
func startCaddy(bin, dir, authz, upstream string) (string, *cluster.Process, error) {
	root, err := cluster.RepoRoot()
	if err != nil {
		return "", nil, err
	}
	example, err := os.ReadFile(filepath.Join(root, "examples", "gateways", "Caddyfile"))
	if err != nil {
		return "", nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	site := string(example)
	for _, r := range [][2]string{{"llmbudget-authz.llmbudget-system:8080", authz},
		{"vllm.llm-serving:8000", upstream}, {"\n:8080 {", "\nhttp://" + addr + " {"}} {
		if !strings.Contains(site, r[0]) {
			return "", nil, fmt.Errorf("examples/gateways/Caddyfile no longer holds %q", r[0])
		}
		site = strings.Replace(site, r[0], r[1], 1)
	}
	caddyfile := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte("{\n\tadmin off\n\tauto_https off\n\tpersist_config off\n}\n"+site),
		0o600); err != nil {
		return "", nil, err
	}
	p, err := start(dir, "caddy", bin, "run", "--config", caddyfile, "--adapter", "caddyfile")
	if err != nil {
		return "", nil, fmt.Errorf("%w (bash test/k8s/build-caddy.sh builds it)", err)
	}
	return addr, p, waitFor(30*time.Second, "Caddy to serve", func() (bool, string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false, err.Error()
		}
		return c.Close() == nil, ""
	})
}

// machine is the machine's processors and memory, as docs/benchmarks.md states them.
func machine() string {
	model, mem := "unknown CPU", "unknown memory"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				mem = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s), %s", nproc(), model, mem)
}
