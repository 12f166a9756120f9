//go:build integration

package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// llmbudget authz behind a real Caddy (forward_auth), in front of a fake OpenAI-compatible upstream, deciding from a
// real API server. Without a kubelet, the test creates the callers' Pods and writes their status.podIP itself, one
// loopback address each, and each client binds to its Pod's address: Caddy forwards that address (source mode).
// The test runs its own control plane, because its last case stops the API server.

// authzCaddyVersion is the Caddy test/k8s/build-caddy.sh builds.
const authzCaddyVersion = "v2.11.9"

// authzMaxCacheAge is the test's maxCacheAge: short, so that the stopped API server shows within seconds.
const authzMaxCacheAge = 2 * time.Second

// authzScene is the running chain: clients -> Caddy -> (authz) -> upstream.
type authzScene struct {
	kube       *cluster.Cluster
	caddy      string // Caddy's address
	upstream   *upstream
	ml, others string // the namespaces: team ml (to block) and a neighbour
}

func TestAuthzRefusesEachRequestThroughCaddyAsTheBudgetsSay(t *testing.T) {
	caddyBin := caddyBinary(t)
	llmbudget := buildLLMBudget(t)
	kc, err := cluster.Start(context.Background(), cluster.Config{BinDir: cluster.DefaultBinDir()})
	require.NoError(t, err, "start the authz test's own control plane")
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			kc.Stop()
		}
	})
	s := &authzScene{kube: kc, ml: "authz-ml", others: "authz-support"}
	s.setUp(t, llmbudget, caddyBin)

	chatbot, other, desk := "127.0.0.2", "127.0.0.3", "127.0.0.4"

	t.Run("an unblocked namespace's call reaches the upstream", func(t *testing.T) {
		before := s.upstream.count()
		resp := s.call(t, chatbot, nil)
		assert.Equal(t, http.StatusOK, resp.status, resp.body)
		assert.Contains(t, resp.body, `"object":"chat.completion"`)
		assert.Equal(t, before+1, s.upstream.count())
	})

	sentence := "LLMCostBudget " + s.ml + "/chatbot is OverBudget (spend 612.00 of 500.00 USD this Monthly " +
		"period, ends 2026-12-01T00:00:00Z)"
	t.Run("the posture refuses the next call within a second, and the upstream sees nothing", func(t *testing.T) {
		before := s.upstream.count()
		s.setPosture(t, s.ml, sentence)
		resp, took := s.within(t, time.Second, chatbot, http.StatusTooManyRequests)
		t.Logf("refused %s after the posture was set", took)
		assert.JSONEq(t, fmt.Sprintf(`{"error":{"message":%q,"type":"insufficient_quota","code":"budget_exceeded"}}`,
			sentence), resp.body)
		assert.Equal(t, "60", resp.header.Get("Retry-After"), "the posture alone does not say when the period ends")
		assert.Equal(t, before, s.upstream.count())
		assert.Equal(t, http.StatusOK, s.call(t, desk, nil).status, "the neighbour namespace is served")
	})

	t.Run("lifting the posture admits again within a second", func(t *testing.T) {
		s.setPosture(t, s.ml, "")
		_, took := s.within(t, time.Second, chatbot, http.StatusOK)
		t.Logf("admitted %s after the posture was lifted", took)
	})

	t.Run("a Labelled budget refuses only its workload, with the admission policy's sentence", func(t *testing.T) {
		s.budget(t, s.ml, "chatbot", "Open", map[string]any{"blocking": true, "scope": "Labelled",
			"gates": []string{"Policy"}, "resources": []string{"pods"}, "message": sentence})
		resp, _ := s.within(t, time.Second, chatbot, http.StatusTooManyRequests)
		var body struct {
			Error struct{ Message string } `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(resp.body), &body))
		assert.Equal(t, sentence, body.Error.Message)
		assert.Equal(t, http.StatusOK, s.call(t, other, nil).status, "the unlabelled workload is served")

		// The API server's own refusal of a new Pod of that workload starts with the same sentence.
		_, err := kc.KubectlErr(t, podManifest(s.ml, "chatbot-2", "chatbot"), "create", "-f", "-")
		require.Error(t, err)
		assert.Contains(t, err.Error(), body.Error.Message+": new pods labelled llmbudget.dev/budget=chatbot are "+
			"refused in "+s.ml)
	})

	warning := "LLMCostBudget " + s.others + "/desk is OverBudget (spend 210.00 of 200.00 USD this Monthly period, " +
		"ends 2026-12-01T00:00:00Z)"
	t.Run("a Warn-mode budget admits, and the upstream gets the warning", func(t *testing.T) {
		s.budget(t, s.others, "desk", "Closed", map[string]any{"blocking": true, "scope": "Namespace", "mode": "Warn",
			"gates": []string{"Policy"}, "resources": []string{"pods"}, "message": warning})
		cluster.WaitFor(t, 5*time.Second, "the upstream to see the warning", func() (bool, string) {
			resp := s.call(t, desk, nil)
			got := s.upstream.last().Get("X-Llmbudget-Warning")
			return resp.status == http.StatusOK && got == warning, fmt.Sprintf("%d %q", resp.status, got)
		})
		assert.Equal(t, "LLMCostBudget "+s.others+"/desk", s.upstream.last().Get("X-Llmbudget-Budget"))
	})

	t.Run("what a client says of itself changes nothing", func(t *testing.T) {
		spoofs := map[string]string{
			"X-Forwarded-For":         desk,
			"X-Real-IP":               desk,
			"X-Forwarded-Client-Cert": "URI=spiffe://cluster.local/ns/" + s.others + "/sa/default",
		}
		assert.Equal(t, http.StatusTooManyRequests, s.call(t, chatbot, spoofs).status,
			"the blocked workload claiming the neighbour's address is still refused")
		spoofs["X-Forwarded-For"] = other
		assert.Equal(t, http.StatusTooManyRequests, s.call(t, chatbot, spoofs).status)
		claim := map[string]string{"X-Forwarded-For": chatbot}
		assert.Equal(t, http.StatusOK, s.call(t, other, claim).status,
			"an unlabelled workload claiming the labelled one's address is still itself")
	})

	t.Run("with the API server stopped, decisions keep to the failure policy", func(t *testing.T) {
		kc.Stop()
		stopped = true
		time.Sleep(authzMaxCacheAge + 2*time.Second) // past the bound, with the heartbeat's period to spare
		closed := s.call(t, desk, nil)
		assert.Equal(t, http.StatusServiceUnavailable, closed.status, "desk's failurePolicy is Closed: %s", closed.body)
		assert.Contains(t, closed.body, "LLMCostBudget "+s.others+"/desk cannot be checked now")
		assert.Equal(t, http.StatusTooManyRequests, s.call(t, chatbot, nil).status,
			"an Open budget that blocks keeps refusing from its cache")
		before := s.upstream.count()
		assert.Equal(t, http.StatusOK, s.call(t, other, nil).status, "no Closed budget covers this workload")
		assert.Equal(t, before+1, s.upstream.count())
		assert.NotEmpty(t, s.upstream.last().Get("X-Llmbudget-Cache-Stale"), "an answer from an old cache says so")
	})
}

func (s *authzScene) setUp(t *testing.T, llmbudget, caddyBin string) {
	t.Helper()
	kc := s.kube
	for _, crd := range []string{"llmcostbudgets.llmbudget.dev.yaml", "clusterllmcostbudgets.llmbudget.dev.yaml"} {
		kc.InstallCRDs(t, filepath.Join(repoRoot, "deploy", "crd", crd))
	}
	var docs []string
	for _, f := range []string{"validatingadmissionpolicy.yaml", "validatingadmissionpolicybinding.yaml"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "base", "admission", f))
		require.NoError(t, err)
		docs = append(docs, string(data))
	}
	kc.ApplyYAML(t, "", strings.Join(docs, "\n---\n"))
	for _, ns := range []string{s.ml, s.others} {
		kc.EnsureNamespace(t, ns)
		cluster.WaitFor(t, time.Minute, "the default ServiceAccount of "+ns, func() (bool, string) {
			_, err := kc.KubectlErr(t, "", "get", "serviceaccount", "default", "-n", ns)
			return err == nil, fmt.Sprint(err)
		})
	}
	s.pod(t, s.ml, "chatbot-0", "chatbot", "127.0.0.2")
	s.pod(t, s.ml, "batch-0", "", "127.0.0.3")
	s.pod(t, s.others, "desk-0", "", "127.0.0.4")

	s.upstream = &upstream{}
	up := serve(t, s.upstream)
	authz, metrics := freeAddr(t), freeAddr(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "authz.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`gateways:
- name: caddy
  addresses: ["127.0.0.1/32"]
  mode: source
unknownCaller: Admit
maxCacheAge: %s
`, authzMaxCacheAge)), 0o600))
	startLogged(t, dir, "authz", llmbudget, "authz", "--config", config, "--kubeconfig", kc.Kubeconfig,
		"--addr", authz, "--metrics-addr", metrics, "--log-level", "debug")
	cluster.WaitFor(t, time.Minute, "authz to be ready (its informers synced)", func() (bool, string) {
		resp, err := http.Get("http://" + metrics + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, string(body)
	})

	// examples/gateways/Caddyfile as it is, but for its addresses and the options a test needs.
	s.caddy = freeAddr(t)
	example, err := os.ReadFile(filepath.Join(repoRoot, "examples", "gateways", "Caddyfile"))
	require.NoError(t, err)
	site := string(example)
	for _, r := range [][2]string{{"llmbudget-authz.llmbudget-system:8080", authz}, {"vllm.llm-serving:8000", up},
		{"\n:8080 {", "\nhttp://" + s.caddy + " {"}} {
		require.Contains(t, site, r[0])
		site = strings.Replace(site, r[0], r[1], 1)
	}
	caddyfile := filepath.Join(dir, "Caddyfile")
	require.NoError(t, os.WriteFile(caddyfile, []byte("{\n\tadmin off\n\tauto_https off\n\tpersist_config off\n}\n"+site),
		0o600))
	startLogged(t, dir, "caddy", caddyBin, "run", "--config", caddyfile, "--adapter", "caddyfile")
	cluster.WaitFor(t, 30*time.Second, "Caddy to serve", func() (bool, string) {
		c, err := net.Dial("tcp", s.caddy)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
}

// pod creates a Pod, labelled for budget when given, and writes its address as a kubelet would.
func (s *authzScene) pod(t *testing.T, ns, name, budget, ip string) {
	t.Helper()
	s.kube.ApplyYAML(t, ns, podManifest(ns, name, budget))
	patch := fmt.Sprintf(`{"status":{"phase":"Running","podIP":%q,"podIPs":[{"ip":%q}]}}`, ip, ip)
	s.kube.Kubectl(t, "patch", "pod", name, "-n", ns, "--subresource=status", "--type=merge", "-p", patch)
}

func podManifest(ns, name, budget string) string {
	labels := ""
	if budget != "" {
		labels = "\n  labels:\n    llmbudget.dev/budget: " + budget
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s%s
spec:
  automountServiceAccountToken: false
  containers:
  - name: app
    image: registry.example/app:1
`, name, ns, labels)
}

// setPosture labels and annotates the namespace as the namespace decorator does; an empty sentence lifts it.
func (s *authzScene) setPosture(t *testing.T, ns, sentence string) {
	t.Helper()
	value := func(v string) any {
		if sentence == "" {
			return nil
		}
		return v
	}
	patch := map[string]any{"metadata": map[string]any{
		"labels":      map[string]any{"llmbudget.dev/blocked": value("true")},
		"annotations": map[string]any{"llmbudget.dev/blocked-by": value(sentence)},
	}}
	data, err := json.Marshal(patch)
	require.NoError(t, err)
	s.kube.Kubectl(t, "patch", "namespace", ns, "--type=merge", "-p", string(data))
}

// budget creates an LLMCostBudget and writes its status.enforcement as the sync hook would.
func (s *authzScene) budget(t *testing.T, ns, name, failurePolicy string, enforcement map[string]any) {
	t.Helper()
	s.kube.ApplyYAML(t, ns, fmt.Sprintf(`apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata:
  name: %s
  namespace: %s
spec:
  limitUSD: "500"
  period: {type: Monthly, timeZone: UTC}
  costSource: {configMapName: spend, key: total-usd}
  enforcement:
    action: BlockNewWorkloads
    resources: [pods]
    gate: Policy
    failurePolicy: %s
`, name, ns, failurePolicy))
	status := map[string]any{"status": map[string]any{"state": "OverBudget", "remainingUSD": "0.00",
		"period":      map[string]any{"start": "2026-11-01T00:00:00Z", "end": "2026-12-01T00:00:00Z"},
		"enforcement": enforcement}}
	data, err := json.Marshal(status)
	require.NoError(t, err)
	s.kube.Kubectl(t, "patch", "llmcostbudgets.llmbudget.dev", name, "-n", ns, "--subresource=status",
		"--type=merge", "-p", string(data))
	labelBlocking(t, s.kube, "llmcostbudgets.llmbudget.dev", name, ns, status["status"].(map[string]any))
}

type answer struct {
	status int
	header http.Header
	body   string
}

// call posts a chat completion through Caddy from the address from, with extra headers.
func (s *authzScene) call(t *testing.T, from string, extra map[string]string) answer {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: dialer.DialContext,
		DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodPost, "http://"+s.caddy+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// within calls from the address until the answer has the status, for at most limit; it fails past it.
func (s *authzScene) within(t *testing.T, limit time.Duration, from string, status int) (answer, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		a := s.call(t, from, nil)
		took := time.Since(start)
		if a.status == status {
			return a, took
		}
		if took > limit {
			t.Fatalf("still %d after %s, want %d: %s", a.status, took, status, a.body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// upstream is a fake OpenAI-compatible server that counts the requests it gets and keeps the last one's headers.
type upstream struct {
	mu    sync.Mutex
	n     int
	heads http.Header
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.n++
	u.heads = r.Header.Clone()
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-test","choices":[{"index":0,`+
		`"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
}

func (u *upstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n
}

func (u *upstream) last() http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.heads
}

// serve serves h on a free loopback port until the test ends and returns its address.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// startLogged runs a program until the test ends, its output in dir/<name>.log, printed if the test failed.
func startLogged(t *testing.T, dir, name, bin string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			lines := strings.Split(string(log), "\n")
			t.Logf("%s log:\n%s", name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
}

// caddyBinary is the Caddy test/k8s/build-caddy.sh built.
func caddyBinary(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("LLMBUDGET_CADDY_BIN")
	if dir == "" {
		home, err := os.UserHomeDir()
		require.NoError(t, err)
		dir = filepath.Join(home, ".cache", "llmbudget", "caddy", authzCaddyVersion)
	}
	bin := filepath.Join(dir, "caddy")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no Caddy at %s: run test/k8s/build-caddy.sh (%v)", bin, err)
	}
	return bin
}
