//go:build integration

package integration_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// llmbudget authz cut off from its informers' lists and watches while the API server still answers /version: a
// proxy in front of the API server, on loopback, that passes everything or /version alone. authz is called
// directly as a gateway in header mode, so that no Pod or Caddy takes part.

// staleMaxCacheAge is maxCacheAge in these tests: the heartbeat runs every second.
const staleMaxCacheAge = 3 * time.Second

const staleHeader = "X-Llmbudget-Test-Namespace"

func TestAuthzAnswersEveryCall503UntilItsInformersHaveSynced(t *testing.T) {
	installAuthzCRDs(t)
	closedNS := kube.Namespace(t, "unsynced-closed")
	(&authzScene{kube: kube}).budget(t, closedNS, "team", "Closed", map[string]any{"blocking": false})
	px := startVersionOnlyProxy(t)
	px.passVersionOnly()
	a := startAuthzThrough(t, px)

	for _, ns := range []string{closedNS, "no-budget-at-all"} {
		got := a.call(t, ns)
		assert.Equal(t, http.StatusServiceUnavailable, got.status, "%s: %s", ns, got.body)
		assert.Equal(t, "unsynced", got.header.Get("X-Llmbudget-Cache-Stale"), ns)
		assert.Contains(t, got.body, `"code":"budget_unavailable"`, ns)
	}
	status, body := a.ready(t)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, body, "the informers have not synced")

	px.passAll()
	cluster.WaitFor(t, time.Minute, "authz to sync through the proxy", func() (bool, string) {
		status, body := a.ready(t)
		return status == http.StatusOK, body
	})
	got := a.call(t, closedNS)
	assert.Equal(t, http.StatusOK, got.status, got.body)
	assert.Empty(t, got.header.Get("X-Llmbudget-Cache-Stale"))
}

func TestAuthzCacheCutOffFromListsAndWatchesIsStaleWhileVersionAnswers(t *testing.T) {
	installAuthzCRDs(t)
	s := &authzScene{kube: kube}
	closedNS, openNS := kube.Namespace(t, "stale-closed"), kube.Namespace(t, "stale-open")
	s.budget(t, closedNS, "team", "Closed", map[string]any{"blocking": false})
	s.budget(t, openNS, "team", "Open", map[string]any{"blocking": false})
	px := startVersionOnlyProxy(t)
	a := startAuthzThrough(t, px)
	cluster.WaitFor(t, time.Minute, "authz to be ready", func() (bool, string) {
		status, body := a.ready(t)
		return status == http.StatusOK, body
	})
	for _, ns := range []string{closedNS, openNS} {
		require.Equal(t, http.StatusOK, a.call(t, ns).status, ns)
	}

	px.passVersionOnly()
	cut := time.Now()
	block := func(ns string) map[string]any {
		return map[string]any{"blocking": true, "scope": "Namespace", "gates": []string{"Policy"},
			"resources": []string{"pods"}, "message": "LLMCostBudget " + ns + "/team is OverBudget"}
	}
	s.budget(t, closedNS, "team", "Closed", block(closedNS))
	s.budget(t, openNS, "team", "Open", block(openNS))

	// Past maxCacheAge, with a heartbeat and the informers' retries to spare.
	cluster.WaitFor(t, staleMaxCacheAge+5*time.Second, "the Closed budget's callers to get 503", func() (bool, string) {
		got := a.call(t, closedNS)
		return got.status == http.StatusServiceUnavailable, fmt.Sprintf("%d %s", got.status, got.body)
	})
	t.Logf("503 %s after the proxy cut the watches", time.Since(cut).Round(100*time.Millisecond))
	closed := a.call(t, closedNS)
	assert.Contains(t, closed.body, "LLMCostBudget "+closedNS+"/team cannot be checked now")
	assert.NotEmpty(t, closed.header.Get("X-Llmbudget-Cache-Stale"))
	open := a.call(t, openNS)
	assert.Equal(t, http.StatusOK, open.status, "an Open budget is decided from the cache, which never saw the block")
	assert.NotEmpty(t, open.header.Get("X-Llmbudget-Cache-Stale"), "and says the cache is stale")
	status, body := a.ready(t)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, body, "the cache is stale")
	assert.Positive(t, px.versions(), "authz asked /version through the proxy all along")

	px.passAll()
	cluster.WaitFor(t, time.Minute, "authz to see both blocks once it lists again", func() (bool, string) {
		c, o := a.call(t, closedNS), a.call(t, openNS)
		return c.status == http.StatusTooManyRequests && o.status == http.StatusTooManyRequests,
			fmt.Sprintf("%d %d", c.status, o.status)
	})
}

func installAuthzCRDs(t *testing.T) {
	t.Helper()
	for _, crd := range []string{"llmcostbudgets.llmbudget.dev.yaml", "clusterllmcostbudgets.llmbudget.dev.yaml"} {
		kube.InstallCRDs(t, filepath.Join(repoRoot, "deploy", "crd", crd))
	}
}

// versionOnlyProxy passes every request to the API server, or only GET /version: others are answered 403 as
// when authz's RBAC is gone, and the requests it was passing (the informers' watches) are cut.
type versionOnlyProxy struct {
	addr     string
	mu       sync.Mutex
	only     bool
	inflight map[*http.Request]context.CancelFunc
	asked    int
}

func startVersionOnlyProxy(t *testing.T) *versionOnlyProxy {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kube.Kubeconfig)
	require.NoError(t, err)
	rt, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	target, err := url.Parse(cfg.Host)
	require.NoError(t, err)
	px := &versionOnlyProxy{inflight: map[*http.Request]context.CancelFunc{}}
	rp := &httputil.ReverseProxy{Transport: rt, FlushInterval: -1,
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	px.addr = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		px.mu.Lock()
		version := r.Method == http.MethodGet && r.URL.Path == "/version"
		if version {
			px.asked++
		}
		if px.only && !version {
			px.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure",`+
				`"message":"forbidden by the test's proxy","reason":"Forbidden","code":403}`)
			return
		}
		px.inflight[r] = cancel
		px.mu.Unlock()
		defer func() {
			px.mu.Lock()
			delete(px.inflight, r)
			px.mu.Unlock()
		}()
		rp.ServeHTTP(w, r.WithContext(ctx))
	}))
	return px
}

func (p *versionOnlyProxy) passVersionOnly() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.only = true
	for _, cancel := range p.inflight {
		cancel()
	}
}

func (p *versionOnlyProxy) passAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.only = false
}

func (p *versionOnlyProxy) versions() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked
}

// staleAuthz is llmbudget authz watching the cluster through a proxy.
type staleAuthz struct{ addr, metrics string }

func startAuthzThrough(t *testing.T, px *versionOnlyProxy) *staleAuthz {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: proxy, cluster: {server: "http://%s"}}]
users: [{name: anyone, user: {}}]
contexts: [{name: proxy, context: {cluster: proxy, user: anyone}}]
current-context: proxy
`, px.addr)), 0o600))
	config := filepath.Join(dir, "authz.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`gateways:
- name: test
  addresses: ["127.0.0.1/32"]
  mode: header
  header: %s
unknownCaller: Admit
maxCacheAge: %s
`, staleHeader, staleMaxCacheAge)), 0o600))
	a := &staleAuthz{addr: freeAddr(t), metrics: freeAddr(t)}
	startLogged(t, dir, "authz", buildLLMBudget(t), "authz", "--config", config, "--kubeconfig", kubeconfig,
		"--addr", a.addr, "--metrics-addr", a.metrics, "--log-level", "debug")
	cluster.WaitFor(t, 30*time.Second, "authz to listen", func() (bool, string) {
		c, err := net.Dial("tcp", a.addr)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
	return a
}

// call asks authz as the gateway would for a caller of namespace ns.
func (a *staleAuthz) call(t *testing.T, ns string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+a.addr+"/v1/chat/completions", nil)
	require.NoError(t, err)
	req.Header.Set(staleHeader, ns)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: strings.TrimSpace(string(body))}
}

func (a *staleAuthz) ready(t *testing.T) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + a.metrics + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
