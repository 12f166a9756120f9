package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// deployedContainer is what the memory test reads of the Deployment: the
// serve flags, the memory limit and where GOMEMLIMIT comes from.
type deployedContainer struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	Env  []struct {
		Name      string `json:"name"`
		ValueFrom struct {
			ResourceFieldRef struct {
				ContainerName string `json:"containerName"`
				Resource      string `json:"resource"`
			} `json:"resourceFieldRef"`
		} `json:"valueFrom"`
	} `json:"env"`
	Resources struct {
		Limits map[string]string `json:"limits"`
	} `json:"resources"`
}

func readDeployedContainer(t *testing.T) deployedContainer {
	t.Helper()
	b, err := os.ReadFile("../../deploy/base/service/deployment.yaml")
	require.NoError(t, err)
	var d struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []deployedContainer `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(b, &d))
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	return d.Spec.Template.Spec.Containers[0]
}

// maximumSizeSync is a valid budget sync of exactly size bytes: its spend
// ConfigMap carries a padding key beside the spend.
func maximumSizeSync(size int64) []byte {
	const head = `{"parent":{"metadata":{"name":"b","namespace":"ns"},` +
		`"spec":{"limitUSD":"10","costSource":{"configMapName":"cm","key":"k"}}},` +
		`"related":{"ConfigMap.v1":{"ns/cm":{"data":{"k":"2","padding":"`
	const tail = `"}}}}}`
	return []byte(head + strings.Repeat("x", int(size)-len(head)-len(tail)) + tail)
}

// peakMemory samples what the Go runtime holds from the OS (what
// GOMEMLIMIT bounds and what the kernel counts against the container's
// limit) until stop is closed, and returns the largest sample.
func peakMemory(stop <-chan struct{}) <-chan memoryPeaks {
	peak := make(chan memoryPeaks, 1)
	go func() {
		samples := []metrics.Sample{
			{Name: "/memory/classes/total:bytes"},
			{Name: "/memory/classes/heap/released:bytes"},
			{Name: "/gc/heap/live:bytes"},
		}
		var most memoryPeaks
		for {
			metrics.Read(samples)
			most.held = max(most.held, samples[0].Value.Uint64()-samples[1].Value.Uint64())
			most.live = max(most.live, samples[2].Value.Uint64())
			select {
			case <-stop:
				peak <- most
				return
			case <-time.After(200 * time.Microsecond): // a sampling interval, not a deadline
			}
		}
	}()
	return peak
}

// memoryPeaks are the most memory the process held from the OS, and the
// largest heap a collection found live. The first depends on when the
// collector runs (GOGC lets the heap grow to twice the live heap before
// GOMEMLIMIT takes over), the second is what the in-flight bound controls.
type memoryPeaks struct{ held, live uint64 }

// The Deployment's 128Mi must hold however many callers send maximum-size
// requests at once: the in-flight bound answers the surplus 429, and every
// caller gets an answer.
func TestConcurrentMaximumSizeRequestsStayWithinTheDeploymentsMemory(t *testing.T) {
	c := readDeployedContainer(t)
	require.Equal(t, "serve", c.Args[0])
	require.Len(t, c.Env, 1)
	require.Equal(t, "GOMEMLIMIT", c.Env[0].Name)
	require.Equal(t, "limits.memory", c.Env[0].ValueFrom.ResourceFieldRef.Resource, "GOMEMLIMIT is the container's limit")
	require.Equal(t, c.Name, c.Env[0].ValueFrom.ResourceFieldRef.ContainerName)
	q := resource.MustParse(c.Resources.Limits["memory"])
	limit := q.Value()
	o, err := parseServe(c.Args[1:])
	require.NoError(t, err)
	t.Logf("memory limit %d, --max-body-bytes %d, --max-in-flight-bytes %d", limit, o.maxBody, o.maxInFlight)

	debug.FreeOSMemory()
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	addrs := startServer(t, serveOptions{maxBody: o.maxBody, maxInFlight: o.maxInFlight})
	body := maximumSizeSync(o.maxBody)
	require.Len(t, body, int(o.maxBody))

	const callers = 64
	stop := make(chan struct{})
	peak := peakMemory(stop)
	codes := make(chan int, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			resp, err := http.Post("http://"+addrs.hooks+"/budget/sync", "application/json", bytes.NewReader(body))
			if !assert.NoError(t, err) {
				codes <- 0
				return
			}
			defer resp.Body.Close()
			_, err = io.Copy(io.Discard, resp.Body)
			assert.NoError(t, err)
			if resp.StatusCode == http.StatusTooManyRequests {
				assert.Equal(t, "1", resp.Header.Get("Retry-After"))
			}
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(stop)
	close(codes)
	most := <-peak

	counts := map[int]int{}
	for code := range codes {
		counts[code]++
	}
	t.Logf("answers by status: %v; peak memory held %.1f MiB, peak live heap %.1f MiB", counts,
		float64(most.held)/(1<<20), float64(most.live)/(1<<20))
	assert.Equal(t, callers, counts[http.StatusOK]+counts[http.StatusTooManyRequests],
		"every call answered 200 or 429: %v", counts)
	assert.Positive(t, counts[http.StatusOK], "the bound lets calls through")
	assert.LessOrEqual(t, most.held, uint64(limit)*9/10,
		fmt.Sprintf("held %d bytes, within a tenth of the %d-byte limit", most.held, limit))
	assert.LessOrEqual(t, most.live, uint64(limit)/2,
		fmt.Sprintf("live heap %d bytes, over half the %d-byte limit", most.live, limit))
	if n := counts[http.StatusTooManyRequests]; n > 0 {
		assert.Contains(t, scrapeMetrics(t, "http://"+addrs.metrics),
			fmt.Sprintf(`llmbudget_hook_rejected_total{hook="budget/sync"} %d`, n))
	}
}
