package deploytest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	seriesOnce sync.Once
	seriesSet  map[string]bool
	seriesErr  error
)

// serviceSeries is the set of series names the real llmbudget server exposes on /metrics
// after answering a few hook calls (labelled families appear only once observed): it builds
// the server from the main module, runs `llmbudget serve` on a loopback port, replays golden
// hook requests and reads the exposition. Histograms contribute their _bucket, _sum and
// _count series. Built and scraped once per test binary.
func serviceSeries(t testing.TB) map[string]bool {
	t.Helper()
	seriesOnce.Do(func() { seriesSet, seriesErr = scrapeServer(repoRoot(t)) })
	require.NoError(t, seriesErr)
	return seriesSet
}

func scrapeServer(root string) (map[string]bool, error) {
	dir, err := os.MkdirTemp("", "llmbudget-server-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "llmbudget")
	// A cold build of the server (CGO off, so none of the test binaries' packages are reused) takes minutes on two
	// busy cores; the build has its own bound, the server the 5 minutes after it.
	buildCtx, cancelBuild := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancelBuild()
	build := exec.CommandContext(buildCtx, "go", "build", "-o", bin, "./hooks/llmbudget")
	build.Dir = root
	build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the llmbudget server: %w\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	serve := exec.CommandContext(ctx, bin, "serve", "--addr=127.0.0.1:0", "--metrics-addr=127.0.0.1:0", "--log-level=info")
	stderr, err := serve.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := serve.Start(); err != nil {
		return nil, fmt.Errorf("start llmbudget serve: %w", err)
	}
	defer func() {
		_ = serve.Process.Kill()
		_ = serve.Wait()
	}()
	addr, metricsAddr, err := listenAddrs(stderr)
	if err != nil {
		return nil, err
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	base := "http://" + addr
	for _, call := range []struct{ path, fixture string }{
		{"/budget/customize", "test/fixtures/budget/customize"},
		{"/budget/sync", "test/fixtures/budget/sync"},
		{"/workload/customize", "test/fixtures/workload/customize"},
		{"/workload/sync", "test/fixtures/workload/sync"},
	} {
		if err := replay(ctx, base+call.path, filepath.Join(root, call.fixture)); err != nil {
			return nil, err
		}
	}
	return scrape(ctx, "http://"+metricsAddr+"/metrics")
}

// listenAddrs reads the server's JSON log until the "serving hooks" line names the
// addresses of the hooks and of /metrics.
func listenAddrs(r io.Reader) (hooks, metrics string, err error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var line struct {
			Msg     string `json:"msg"`
			Addr    string `json:"addr"`
			Metrics string `json:"metrics"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving hooks" && line.Addr != "" {
			return line.Addr, line.Metrics, nil
		}
	}
	return "", "", fmt.Errorf("llmbudget serve exited before logging its addresses: %v", sc.Err())
}

// replay posts the first request fixture of dir and requires a 200.
func replay(ctx context.Context, url, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.request.json"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no request fixtures in %s", dir)
	}
	body, err := os.ReadFile(files[0])
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST %s with %s: %s: %s", url, filepath.Base(files[0]), resp.Status, msg)
	}
	return nil
}

// scrape reads the exposition format's # TYPE lines: each family's series names.
func scrape(ctx context.Context, url string) (map[string]bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	series := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 4 || fields[0] != "#" || fields[1] != "TYPE" {
			continue
		}
		name, kind := fields[2], fields[3]
		switch kind {
		case "histogram":
			series[name+"_bucket"], series[name+"_sum"], series[name+"_count"] = true, true, true
		case "summary":
			series[name], series[name+"_sum"], series[name+"_count"] = true, true, true
		default:
			series[name] = true
		}
	}
	if len(series) == 0 {
		return nil, fmt.Errorf("GET %s: no metric families", url)
	}
	return series, sc.Err()
}
