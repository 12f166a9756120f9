package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testPKI writes a CA and a serving certificate for 127.0.0.1 into dir.
func testPKI(t *testing.T, dir string) (caPool *x509.CertPool, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "llmbudget test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "llmbudget"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"llmbudget.llmbudget-system.svc"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	caPool = x509.NewCertPool()
	caPool.AddCert(ca)
	return caPool, certFile, keyFile
}

// listening is where a test server listens, as its log says: metrics is
// "beside the hooks" when /metrics is served there.
type listening struct{ hooks, metrics string }

// startServer runs the serve command's server until the test ends, with
// /metrics on a port of its own unless o.metricsAddr is "-".
func startServer(t *testing.T, o serveOptions) listening {
	t.Helper()
	addrc := make(chan listening, 1)
	stop := make(chan struct{})
	done := make(chan error, 1)
	o.addr, o.level = "127.0.0.1:0", "error"
	if o.maxBody == 0 {
		o.maxBody = 1 << 20
	}
	if o.maxInFlight == 0 {
		o.maxInFlight = 16 << 20
	}
	switch o.metricsAddr {
	case "-":
		o.metricsAddr = ""
	case "":
		o.metricsAddr = "127.0.0.1:0"
	}
	o.onListen = func(hooks, metrics string) { addrc <- listening{hooks, metrics} }
	o.stop = stop
	go func() { done <- runServer(o, io.Discard) }()
	t.Cleanup(func() {
		close(stop)
		require.NoError(t, <-done)
	})
	select {
	case l := <-addrc:
		return l
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("server did not start")
	}
	return listening{}
}

const syncBody = `{"parent":{"metadata":{"name":"b","namespace":"ns"},` +
	`"spec":{"limitUSD":"10","costSource":{"configMapName":"cm","key":"k"}}},` +
	`"related":{"ConfigMap.v1":{"ns/cm":{"metadata":{"labels":{"llmbudget.dev/spend-source":"cm"}},"data":{"k":"2"}}}}}`

func call(t *testing.T, c *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(syncBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestServeRequiresTheBearerTokenOverTLS(t *testing.T) {
	dir := t.TempDir()
	pool, cert, key := testPKI(t, dir)
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	addrs := startServer(t, serveOptions{certFile: cert, keyFile: key, tokenFile: tokenFile})
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := "https://" + addrs.hooks

	cases := map[string]struct {
		token  string
		status int
		body   string
	}{
		"no token is refused": {
			"",
			401,
			"unauthorized: missing bearer token (configure the controller's webhook.authorization)\n",
		},
		"a wrong token is refused":  {"guess", 401, "unauthorized: wrong bearer token\n"},
		"the right token is served": {"s3cret", 200, `"state":"UnderBudget"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			status, body := call(t, c, base+"/budget/sync", tc.token)
			assert.Equal(t, tc.status, status)
			assert.Contains(t, body, tc.body)
		})
	}

	t.Run("a rotated token is picked up without a restart", func(t *testing.T) {
		later := time.Now().Add(2 * time.Second)
		require.NoError(t, os.WriteFile(tokenFile, []byte("rotated-token"), 0o600))
		require.NoError(t, os.Chtimes(tokenFile, later, later))
		status, _ := call(t, c, base+"/budget/sync", "s3cret")
		assert.Equal(t, 401, status)
		status, _ = call(t, c, base+"/budget/sync", "rotated-token")
		assert.Equal(t, 200, status)
	})

	t.Run("probes and metrics need no token", func(t *testing.T) {
		for _, u := range []string{base + "/healthz", base + "/readyz", "https://" + addrs.metrics + "/metrics"} {
			resp, err := c.Get(u)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, 200, resp.StatusCode, u)
		}
	})

	t.Run("a client that does not trust the CA fails the handshake", func(t *testing.T) {
		_, err := (&http.Client{}).Get(base + "/healthz")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "certificate signed by unknown authority")
	})
}

func TestMetricsCountHookCalls(t *testing.T) {
	addrs := startServer(t, serveOptions{})
	base := "http://" + addrs.hooks
	for i := 0; i < 3; i++ {
		status, _ := call(t, http.DefaultClient, base+"/budget/sync", "")
		require.Equal(t, 200, status)
	}
	resp, err := http.Post(base+"/budget/sync", "text/plain", strings.NewReader("x"))
	require.NoError(t, err)
	resp.Body.Close()

	text := scrapeMetrics(t, "http://"+addrs.metrics)
	assert.Contains(t, text, `llmbudget_hook_requests_total{code="200",hook="budget/sync"} 3`)
	assert.Contains(t, text, `llmbudget_hook_requests_total{code="415",hook="budget/sync"} 1`)
	assert.Contains(t, text, `llmbudget_hook_duration_seconds_count{hook="budget/sync"} 4`)
	assert.Contains(t, text, `llmbudget_evaluations_total{reason="Evaluated",state="UnderBudget"} 3`)
	assert.Contains(t, text, `llmbudget_build_info{goversion=`)
}

func scrapeMetrics(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// A NetworkPolicy admits ports, not paths: with --metrics-addr the hook port
// serves no /metrics and the metrics port no hooks.
func TestMetricsAndHooksListenApart(t *testing.T) {
	addrs := startServer(t, serveOptions{})
	resp, err := http.Get("http://" + addrs.hooks + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	status, _ := call(t, http.DefaultClient, "http://"+addrs.metrics+"/budget/sync", "")
	assert.Equal(t, http.StatusNotFound, status)

	beside := startServer(t, serveOptions{metricsAddr: "-"})
	assert.Equal(t, "beside the hooks", beside.metrics)
	assert.Contains(t, scrapeMetrics(t, "http://"+beside.hooks), "llmbudget_build_info")
}

func TestServeRefusesHalfATLSConfiguration(t *testing.T) {
	_, err := parseServe([]string{"--tls-cert-file", "x"})
	assert.EqualError(t, err, "--tls-cert-file and --tls-key-file go together")
	assert.IsType(t, &usageError{}, err, "a usage error: status 2")
}

func TestRunDispatchesCommands(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 0, run([]string{"version"}, nil, &out, &errb))
	assert.Equal(t, "llmbudget "+version+"\n", out.String())
	assert.Equal(t, 2, run([]string{"frobnicate"}, nil, &out, &errb), "an unknown command is a usage error")
	assert.Contains(t, errb.String(), `unknown command "frobnicate"`)
}

func TestAFixedClockServerAnswersAFixtureWithItsGolden(t *testing.T) {
	addr := startServer(t, serveOptions{now: "2026-11-29T07:30:00Z"}).hooks
	for _, name := range []string{"capture-over-budget-with-children", "capture-first-sync-under-budget"} {
		body, err := os.ReadFile("../../test/fixtures/budget/sync/" + name + ".request.json")
		require.NoError(t, err)
		resp, err := http.Post("http://"+addr+"/budget/sync", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		var pretty bytes.Buffer
		require.NoError(t, json.Indent(&pretty, bytes.TrimSpace(got), "", "  "))
		pretty.WriteByte('\n')
		want, err := os.ReadFile("../../test/fixtures/budget/sync/" + name + ".response.json")
		require.NoError(t, err)
		assert.Equal(t, string(want), pretty.String(), name)
	}
}

func TestPprofIsServedOnlyWhenAskedFor(t *testing.T) {
	get := func(url string) int {
		resp, err := http.Get(url)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	off := startServer(t, serveOptions{})
	assert.Equal(t, http.StatusNotFound, get("http://"+off.hooks+"/debug/pprof/"))

	on := startServer(t, serveOptions{pprof: true})
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/goroutine?debug=1"} {
		assert.Equal(t, http.StatusOK, get("http://"+on.hooks+path), path)
	}
	assert.Equal(t, http.StatusNotFound, get("http://"+on.hooks+"/debug/pprof/cmdline"), "only the profiles are served")
}

func TestMetricsAnswerOnlyGET(t *testing.T) {
	addrs := startServer(t, serveOptions{})
	resp, err := http.Post("http://"+addrs.metrics+"/metrics", "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}
