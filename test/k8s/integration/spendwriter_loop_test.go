//go:build integration

package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// growing is a LiteLLM exporter whose counters grow at each scrape: a cent, 10 input and 2 output tokens.
type growing struct {
	mu      sync.Mutex
	scrapes int
}

func (g *growing) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	g.mu.Lock()
	g.scrapes++
	n := g.scrapes
	g.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	for _, c := range []struct {
		name  string
		value float64
	}{{"litellm_spend_metric_total", float64(n) / 100}, {"litellm_input_tokens_metric_total", float64(10 * n)},
		{"litellm_output_tokens_metric_total", float64(2 * n)}} {
		fmt.Fprintf(w, "# TYPE %s counter\n%s{team=\"loop\",model=\"gpt-4o\"} %v\n", c.name, c.name, c.value)
	}
}

// loopLease is the writer's Lease: the Role lets it read and renew this one name only.
const loopLease = "llmbudget-spend-writer"

// Loop timing: short, so that a handover takes seconds. renew < lease, as the command requires.
const (
	loopLeaseDuration = 4 * time.Second
	loopRetryPeriod   = 500 * time.Millisecond
)

// writerProcess is one replica of spend --all --loop, its log in a file.
type writerProcess struct {
	cmd     *exec.Cmd
	exited  chan error // its Wait's result, once it has exited
	log     string
	metrics string // host:port of /metrics
}

func (p writerProcess) logText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(p.log)
	require.NoError(t, err)
	return string(b)
}

func (p writerProcess) leader(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + p.metrics + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "llmbudget_spend_leader ") {
			return strings.TrimPrefix(l, "llmbudget_spend_leader ")
		}
	}
	return "no llmbudget_spend_leader"
}

// startWriter starts a replica named identity with kubeconfig, as the Deployment runs it but for its timing.
func startWriter(t *testing.T, llmbudget, prom, kubeconfig, identity string) writerProcess {
	t.Helper()
	p := writerProcess{log: filepath.Join(t.TempDir(), identity+".log"), metrics: freeAddr(t),
		exited: make(chan error, 1)}
	logf, err := os.Create(p.log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = logf.Close() })
	p.cmd = exec.Command(llmbudget, "spend", "--all", "--loop", "--prometheus", prom, "--kubeconfig", kubeconfig,
		"--interval=1s", "--checkpoints-namespace=llmbudget-system", "--settle=5s",
		"--lease-namespace=llmbudget-system", "--lease-name="+loopLease, "--identity="+identity,
		"--lease-duration="+loopLeaseDuration.String(), "--renew-deadline=3s",
		"--retry-period="+loopRetryPeriod.String(), "--metrics-addr="+p.metrics)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	require.NoError(t, p.cmd.Start())
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		if err := <-p.exited; err != nil {
			t.Logf("%s stopped: %v", identity, err)
		}
		p.exited <- nil // for a later receive in another cleanup
		if t.Failed() {
			t.Logf("%s's log:\n%s", identity, p.logText(t))
		}
	})
	return p
}

// serviceAccountKubeconfig writes a kubeconfig with a token of ServiceAccount ns/name: a process run with it acts
// as a Pod of that ServiceAccount does.
func serviceAccountKubeconfig(t *testing.T, ns, name string) string {
	t.Helper()
	token := strings.TrimSpace(kube.Kubectl(t, "-n", ns, "create", "token", name, "--duration=1h"))
	require.NotEmpty(t, token)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	config := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q, "+
		"certificate-authority: %q}\nusers:\n- name: sa\n  user: {token: %q}\ncontexts:\n- name: c\n  context: "+
		"{cluster: c, user: sa}\ncurrent-context: c\n", kube.Server, kube.CACert, token)
	require.NoError(t, os.WriteFile(path, []byte(config), 0o600))
	return path
}

func leaseHolder(t *testing.T) string {
	t.Helper()
	out, _ := kube.KubectlErr(t, "", "-n", "llmbudget-system", "get", "lease", loopLease,
		"-o", "jsonpath={.spec.holderIdentity}")
	return strings.TrimSpace(out)
}

// TestTheLeaderWritesTheOtherWaitsAndTakesOverWithoutAFigureGoingBack runs two replicas of the writer's loop as
// the deployed ServiceAccount, against a real Prometheus: the one that holds the Lease writes and the other does
// not; once the leader is killed (no Lease handed back, as a lost node), the other takes the Lease within its
// duration and writes on from there, and no figure read meanwhile is below one read before.
func TestTheLeaderWritesTheOtherWaitsAndTakesOverWithoutAFigureGoingBack(t *testing.T) {
	installBudgetCRD(t)
	installSpendSourcePolicies(t)
	installSpendWriterRBAC(t)
	llmbudget := buildLLMBudget(t)
	exp := &growing{}
	target := httptest.NewServer(exp)
	defer target.Close()
	prom := startPrometheus(t, strings.TrimPrefix(target.URL, "http://"))
	if now := time.Now().UTC(); now.Hour() == 23 && now.Minute() >= 55 {
		t.Skip("within 5 minutes of midnight UTC: the Daily period would end during the test")
	}
	cluster.WaitFor(t, 30*time.Second, "Prometheus to store the counter", func() (bool, string) {
		out := promQuery(prom, `litellm_spend_metric_total{team="loop"}`)
		return strings.Contains(out, `"value"`), out
	})

	ns := kube.Namespace(t, "writer-loop")
	kube.ApplyYAML(t, "", `apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata: {name: chatbot, namespace: `+ns+`}
spec:
  limitUSD: "1000"
  period: {type: Daily, timeZone: UTC}
  costSource: {configMapName: llm-spend, key: total,
    prometheus: {source: litellm, selector: {team: loop}, step: 1s}}
`)
	t.Cleanup(func() {
		_, _, _ = kube.Run(context.Background(), "", "-n", "llmbudget-system", "delete", "lease", loopLease,
			"configmap", "llmbudget-spend-checkpoints."+ns, "--ignore-not-found")
	})
	kubeconfig := serviceAccountKubeconfig(t, "llmbudget-system", "llmbudget-spend-writer")

	a := startWriter(t, llmbudget, prom, kubeconfig, "writer-a")
	cluster.WaitFor(t, 30*time.Second, "writer-a to take the Lease", func() (bool, string) {
		h := leaseHolder(t)
		return h == "writer-a", h + "\n" + a.logText(t)
	})
	b := startWriter(t, llmbudget, prom, kubeconfig, "writer-b")

	// Every figure read from now on, in order.
	var mu sync.Mutex
	var figures []float64
	watch, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watch.Err() == nil {
			out, err := kube.KubectlErr(t, "", "-n", ns, "get", "configmap", "llm-spend", "-o", "jsonpath={.data.total}")
			var v struct {
				CostUSD string `json:"costUSD"`
			}
			if err == nil && json.Unmarshal([]byte(out), &v) == nil {
				if f, err := strconv.ParseFloat(v.CostUSD, 64); err == nil {
					mu.Lock()
					figures = append(figures, f)
					mu.Unlock()
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	defer func() { stopWatch(); <-watched }()
	written := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(figures)
	}

	cluster.WaitFor(t, 30*time.Second, "the leader to write the budget's spend", func() (bool, string) {
		return written() > 0, a.logText(t)
	})
	cluster.WaitFor(t, 30*time.Second, "the leader to write the burn rate beside the figures", func() (bool, string) {
		out, err := kube.KubectlErr(t, "", "-n", ns, "get", "configmap", "llm-spend", "-o",
			"jsonpath={.metadata.annotations}")
		var annotations map[string]string
		var rate struct{ AsOf, SampledAt, Window, USDPerHour string }
		if err != nil || json.Unmarshal([]byte(out), &annotations) != nil ||
			json.Unmarshal([]byte(annotations["llmbudget.dev/burn-rate"]), &rate) != nil {
			return false, out
		}
		return rate.AsOf == annotations["llmbudget.dev/spend-as-of"] && rate.Window == "1m0s" &&
			strings.Trim(rate.USDPerHour, "0.") != "", out
	})
	cluster.WaitFor(t, 10*time.Second, "writer-b to see writer-a lead", func() (bool, string) {
		return strings.Contains(b.logText(t), `"leader":"writer-a"`), b.logText(t)
	})
	// A few runs of the leader's, then the follower has still written nothing.
	time.Sleep(3 * time.Second)
	assert.Equal(t, "writer-a", leaseHolder(t))
	assert.Contains(t, a.logText(t), `"msg":"spend written"`)
	assert.NotContains(t, b.logText(t), `"msg":"spend written"`, "the follower writes nothing")
	assert.NotContains(t, b.logText(t), `"msg":"leading: writing spend"`)
	assert.Equal(t, "1", a.leader(t))
	assert.Equal(t, "0", b.leader(t))

	// The leader's node goes: killed, the Lease is not handed back.
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	t.Logf("the leader, killed: %v", <-a.exited)
	a.exited <- nil
	before := written()
	cluster.WaitFor(t, 3*loopLeaseDuration, "writer-b to take the Lease", func() (bool, string) {
		return leaseHolder(t) == "writer-b", b.logText(t)
	})
	handover := time.Since(killed)
	assert.LessOrEqual(t, handover, loopLeaseDuration+2*loopRetryPeriod+time.Second,
		"the follower takes the Lease within its duration (and a retry) of the leader's last renewal")
	cluster.WaitFor(t, 30*time.Second, "writer-b to write", func() (bool, string) {
		return strings.Contains(b.logText(t), `"msg":"spend written"`), b.logText(t)
	})
	assert.Equal(t, "1", b.leader(t))
	cluster.WaitFor(t, 10*time.Second, "a figure read after the handover", func() (bool, string) {
		return written() > before+2, ""
	})

	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(figures); i++ {
		require.GreaterOrEqual(t, figures[i], figures[i-1], "figure %d of %v went back", i, figures)
	}
	assert.Greater(t, figures[len(figures)-1], figures[0], "the spend grew and was written on")
}

// TestALeaderThatCannotRenewItsLeaseStopsWritingAndExits takes the Lease's Role away from a leading replica: it
// cannot renew, so within --renew-deadline it stops writing and exits 1, for its Pod to restart as a follower.
func TestALeaderThatCannotRenewItsLeaseStopsWritingAndExits(t *testing.T) {
	installBudgetCRD(t)
	installSpendWriterRBAC(t)
	llmbudget := buildLLMBudget(t)
	t.Cleanup(func() {
		_, _, _ = kube.Run(context.Background(), "", "-n", "llmbudget-system", "delete", "lease", loopLease,
			"--ignore-not-found")
	})
	kubeconfig := serviceAccountKubeconfig(t, "llmbudget-system", "llmbudget-spend-writer")
	// No budget has a Prometheus source: a run lists the budgets and asks nothing.
	a := startWriter(t, llmbudget, "http://127.0.0.1:1", kubeconfig, "writer-a")
	cluster.WaitFor(t, 30*time.Second, "writer-a to take the Lease", func() (bool, string) {
		h := leaseHolder(t)
		return h == "writer-a", h + "\n" + a.logText(t)
	})

	kube.Kubectl(t, "-n", "llmbudget-system", "delete", "rolebinding", "llmbudget-spend-writer")
	select {
	case err := <-a.exited:
		a.exited <- err
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 1, ee.ExitCode())
	case <-time.After(30 * time.Second):
		t.Fatalf("writer-a still runs 30s after it lost the right to renew its Lease:\n%s", a.logText(t))
	}
	log := a.logText(t)
	assert.Contains(t, log, "lost the Lease llmbudget-system/llmbudget-spend-writer: stopped writing")
}
