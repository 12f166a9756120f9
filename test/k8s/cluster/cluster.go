// Package cluster runs a real, minimal Kubernetes control plane for integration tests:
// etcd, kube-apiserver and kube-controller-manager as local processes on loopback ports,
// each with its own temporary directory, and kubectl pointed at them.
//
// Guarantees:
//   - Nothing listens beyond 127.0.0.1 and every process is started by Start and ended by
//     Stop (and, on Linux, killed if the test binary dies first).
//   - Start returns only when the API server's /readyz and the controller manager's
//     /healthz answer ok, so RBAC bootstrap and built-in APIs are in place.
//   - Each Cluster is fresh: its own etcd data, certificates and service account keys.
//
// Assumptions: the three binaries are in Config.BinDir, and normally a kubectl of the same
// release beside them (test/k8s/build.sh puts all four there). There are no nodes, no
// scheduler and no kubelet: pods are stored but never run. The controller manager runs the
// controllers that need no nodes (resource quota, garbage collector, namespace, service
// accounts, workload controllers).
package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Version is the Kubernetes release the harness builds and runs.
const Version = "v1.37.2"

// Config says where the harness finds its programs.
type Config struct {
	// BinDir holds kube-apiserver, kube-controller-manager and etcd.
	BinDir string
	// Kubectl is the kubectl program. When empty: LLMBUDGET_KUBECTL if set, else the
	// kubectl that build.sh put in BinDir (same release as the server), else kubectl on PATH.
	Kubectl string
	// Dir is the parent of the cluster's temporary directory; os.TempDir() when empty.
	Dir string
	// StartTimeout bounds Start; 2 minutes when zero.
	StartTimeout time.Duration
}

// DefaultBinDir is where build.sh puts the binaries unless LLMBUDGET_K8S_BIN says otherwise.
func DefaultBinDir() string {
	if dir := os.Getenv("LLMBUDGET_K8S_BIN"); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "llmbudget", "k8s", Version)
}

// Cluster is a running control plane. Its fields are read-only.
type Cluster struct {
	// Dir is the cluster's temporary directory (certificates, kubeconfig, data, logs).
	Dir string
	// Kubeconfig is a kubeconfig file for a cluster-admin user (group system:masters).
	Kubeconfig string
	// Server is the API server's URL, https://127.0.0.1:<port>.
	Server string
	// CACert is the CA that signed the API server's certificate and the admin certificate.
	CACert string
	// KubectlPath is the kubectl program the helpers run.
	KubectlPath string

	cacheDir string
	procs    []*Process
	stopOnce sync.Once
}

// Process is a binary a test runs (the control plane's, or another component's such as Kueue), its output
// appended to a log file.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	done    chan struct{}
	err     error // set before done is closed
}

// StartProcess runs bin with args in dir ("" for the test's own), its output appended to logPath; it ends with the
// test binary (sysProcAttr).
func StartProcess(bin, dir, logPath string, args ...string) (*Process, error) {
	name := filepath.Base(bin)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create %s log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{name: name, cmd: cmd, logPath: logPath, log: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the process has exited; Err then says how.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the process exited, once Done is closed.
func (p *Process) Err() error { return p.err }

// Start launches etcd, kube-apiserver and kube-controller-manager and waits until they
// serve. On failure everything started so far is stopped; the error names the step and
// carries the tail of the failing program's log.
func Start(ctx context.Context, cfg Config) (_ *Cluster, err error) {
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(cfg.BinDir, name)); err != nil {
			return nil, fmt.Errorf("find %s in %s (build it with test/k8s/build.sh): %w", name, cfg.BinDir, err)
		}
	}
	kubectl, err := findKubectl(cfg)
	if err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp(cfg.Dir, "llmbudget-k8s-")
	if err != nil {
		return nil, fmt.Errorf("create cluster directory: %w", err)
	}
	c := &Cluster{Dir: dir, KubectlPath: kubectl, cacheDir: filepath.Join(dir, "kubectl-cache")}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()

	ports, err := FreePorts(5)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort, kcmPort := ports[0], ports[1], ports[2], ports[3]

	pkiDir := filepath.Join(dir, "pki")
	if err := os.Mkdir(pkiDir, 0o700); err != nil {
		return nil, fmt.Errorf("create pki directory: %w", err)
	}
	keys, err := newPKI(pkiDir)
	if err != nil {
		return nil, err
	}
	c.CACert = keys.caCert
	c.Server = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, c.Server, keys); err != nil {
		return nil, err
	}

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	etcd, err := c.start(cfg.BinDir, "etcd",
		"--name=default",
		"--data-dir="+filepath.Join(dir, "etcd", "data"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync", // test data: speed over durability
		"--log-level=warn",
	)
	if err != nil {
		return nil, err
	}
	plain := &http.Client{Timeout: 2 * time.Second}
	if err := waitHealthy(ctx, etcd, plain, etcdURL+"/health"); err != nil {
		return nil, err
	}

	apiDir := filepath.Join(dir, "kube-apiserver")
	api, err := c.start(cfg.BinDir, "kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(apiPort),
		"--cert-dir="+apiDir,
		"--tls-cert-file="+keys.servingCert,
		"--tls-private-key-file="+keys.servingKey,
		"--client-ca-file="+keys.caCert,
		"--authorization-mode=RBAC",
		"--anonymous-auth=false",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+keys.saPublicKey,
		"--service-account-signing-key-file="+keys.saSigningKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		// No node will ever run here: do not publish this process as the endpoint of the
		// kubernetes Service.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		"--v=1",
	)
	if err != nil {
		return nil, err
	}
	admin, err := adminClient(keys)
	if err != nil {
		return nil, err
	}
	if err := waitHealthy(ctx, api, admin, c.Server+"/readyz"); err != nil {
		return nil, err
	}

	kcmDir := filepath.Join(dir, "kube-controller-manager")
	kcm, err := c.start(cfg.BinDir, "kube-controller-manager",
		"--kubeconfig="+c.Kubeconfig,
		"--authentication-kubeconfig="+c.Kubeconfig,
		"--authorization-kubeconfig="+c.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(kcmPort),
		"--cert-dir="+kcmDir,
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file="+keys.saSigningKey,
		"--root-ca-file="+keys.caCert,
		"--controllers="+strings.Join(controllers, ","),
		"--profiling=false",
		"--v=1",
	)
	if err != nil {
		return nil, err
	}
	// The controller manager's serving certificate is self-signed; only its answer matters.
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe
	}}
	if err := waitHealthy(ctx, kcm, insecure, "https://127.0.0.1:"+strconv.Itoa(kcmPort)+"/healthz"); err != nil {
		return nil, err
	}
	return c, nil
}

func findKubectl(cfg Config) (string, error) {
	kubectl := cfg.Kubectl
	if kubectl == "" {
		kubectl = os.Getenv("LLMBUDGET_KUBECTL")
	}
	if kubectl == "" {
		kubectl = filepath.Join(cfg.BinDir, "kubectl")
		if _, err := os.Stat(kubectl); err != nil {
			kubectl = "kubectl"
		}
	}
	path, err := exec.LookPath(kubectl)
	if err != nil {
		return "", fmt.Errorf("find kubectl: %w", err)
	}
	return path, nil
}

// controllers are the kube-controller-manager controllers that make sense without nodes.
var controllers = []string{
	"resourcequota",
	"garbagecollector",
	"namespace",
	"serviceaccount",
	"serviceaccount-token",
	"deployment",
	"replicaset",
	"statefulset",
	"job",
	"cronjob",
	"validatingadmissionpolicy-status-controller",
	"clusterrole-aggregation", // llmbudget's user ClusterRoles join view, edit and admin
}

// start runs one binary with its output in <Dir>/<name>/<name>.log.
func (c *Cluster) start(binDir, name string, args ...string) (*Process, error) {
	dir := filepath.Join(c.Dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s directory: %w", name, err)
	}
	p, err := StartProcess(filepath.Join(binDir, name), dir, filepath.Join(dir, name+".log"), args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// waitHealthy polls url until it answers 200, the process exits or ctx ends.
func waitHealthy(ctx context.Context, p *Process, client *http.Client, url string) error {
	var last string
	for {
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, lastLines(string(body), 10))
		} else {
			last = err.Error()
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before it was ready (%v); log tail:\n%s", p.name, p.err, p.Tail(40))
		case <-ctx.Done():
			return fmt.Errorf("wait for %s at %s: %w (last answer: %s); log tail:\n%s", p.name, url, ctx.Err(), last, p.Tail(40))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Stop ends the processes in reverse order of start, gracefully first, and removes the
// cluster's directory unless LLMBUDGET_K8S_KEEP is set. It is safe to call more than once.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		for i := len(c.procs) - 1; i >= 0; i-- {
			c.procs[i].Stop(10 * time.Second)
		}
		if os.Getenv("LLMBUDGET_K8S_KEEP") != "" {
			fmt.Fprintf(os.Stderr, "cluster: kept %s (LLMBUDGET_K8S_KEEP)\n", c.Dir)
			return
		}
		os.RemoveAll(c.Dir)
	})
}

// Stop ends the process gracefully (SIGTERM), killing it after grace.
func (p *Process) Stop(grace time.Duration) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	p.log.Close()
}

// Logs writes the last lines of every process's log to w, for a failing test's report.
func (c *Cluster) Logs(w io.Writer, lines int) {
	for _, p := range c.procs {
		fmt.Fprintf(w, "===== %s (%s), last %d lines =====\n%s\n", p.name, p.logPath, lines, p.Tail(lines))
	}
}

// Tail is the last lines of the process's log.
func (p *Process) Tail(lines int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(read log: %v)", err)
	}
	return lastLines(string(data), lines)
}

func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	all := strings.Split(s, "\n")
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return strings.Join(all, "\n")
}

// FreePorts asks the kernel for n distinct free loopback ports. Holding all listeners
// until every port is known keeps the ports distinct; another program could still take
// one before our process binds it, which Start reports as a failed start.
func FreePorts(n int) ([]int, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func adminClient(keys *pki) (*http.Client, error) {
	caPEM, err := os.ReadFile(keys.caCert)
	if err != nil {
		return nil, fmt.Errorf("read CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("parse CA certificate")
	}
	cert, err := tls.LoadX509KeyPair(keys.adminCert, keys.adminKey)
	if err != nil {
		return nil, fmt.Errorf("load admin certificate: %w", err)
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}},
	}}, nil
}

func writeKubeconfig(path, server string, keys *pki) error {
	const tmpl = `apiVersion: v1
kind: Config
clusters:
- name: llmbudget-test
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: llmbudget-test
  context:
    cluster: llmbudget-test
    user: admin
    namespace: default
current-context: llmbudget-test
`
	data := fmt.Sprintf(tmpl, server, keys.caCert, keys.adminCert, keys.adminKey)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}
