package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// clusterObjects are a Namespace and a ResourceQuota as Metacontroller v4.17.2 sent them for a ClusterLLMCostBudget
// over 10,000 namespaces, under the test/k8s control plane.
//
//go:embed testdata/cluster-objects.json
var clusterObjects []byte

// A scaled sync is a real capture grown to a cluster's size: its one Namespace, spend ConfigMap, ResourceQuota or
// ClusterLLMCostBudget copied under new names, as Metacontroller would send them.
type scaled struct {
	name    string
	route   string
	calls   int // sent at once
	request func(fixtures string) ([]byte, error)
}

var scaledSyncs = []scaled{
	{"ClusterLLMCostBudget over 8,000 namespaces, 1,000 spending (Both, blocking)", "/clusterbudget/sync", 1,
		func(dir string) ([]byte, error) { return clusterSync(dir, 8_000, 1_000, true) }},
	{"ClusterLLMCostBudget over 10,000 namespaces, 1,000 spending (Policy, blocking)", "/clusterbudget/sync", 1,
		func(dir string) ([]byte, error) { return clusterSync(dir, 10_000, 1_000, false) }},
	{"Namespace beside 100 blocking ClusterLLMCostBudgets of 1,000 namespaces", "/namespace/sync", 1,
		func(dir string) ([]byte, error) { return namespaceSync(dir, 100, 1_000, "ml-team-%05d") }},
	{"4 at once: a crafted ClusterLLMCostBudget over 58,000 minimal namespaces", "/clusterbudget/sync", 4,
		func(string) ([]byte, error) { return craftedClusterSync(58_000), nil }},
}

// measureScaled starts the server, sends the case's calls at once and reports the slowest call, the response
// bytes of the first and the status codes.
func measureScaled(bin string, limit int64, fixtures string, c scaled) (result scaledResult, err error) {
	body, err := c.request(fixtures)
	if err != nil {
		return result, err
	}
	srv, err := start(bin, limit)
	if err != nil {
		return result, err
	}
	defer srv.Kill()
	result.requestBytes = len(body)
	var mu sync.Mutex
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 60 * time.Second}
	for range c.calls {
		wg.Go(func() {
			start := time.Now()
			code, n, err := post(client, "http://"+srv.Addr+c.route, body)
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				result.codes = append(result.codes, err.Error())
				return
			}
			result.codes = append(result.codes, fmt.Sprint(code))
			result.slowest = max(result.slowest, took)
			result.responseBytes = max(result.responseBytes, n)
		})
	}
	wg.Wait()
	result.peak = srv.Peak()
	return result, nil
}

type scaledResult struct {
	requestBytes, responseBytes int
	slowest                     time.Duration
	codes                       []string
	peak                        int64
}

func post(client *http.Client, url string, body []byte) (int, int, error) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, int(n), err
}

// readCapture reads a fixture request as generic JSON.
func readCapture(dir, path string) (map[string]any, error) {
	b, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		return nil, err
	}
	var v map[string]any
	return v, json.Unmarshal(b, &v)
}

// renamed is a deep copy of obj under a new name and namespace ("" keeps the namespace).
func renamed(obj any, name, namespace string) map[string]any {
	b, _ := json.Marshal(obj)
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	meta := c["metadata"].(map[string]any)
	meta["name"] = name
	if namespace != "" {
		meta["namespace"] = namespace
	}
	meta["uid"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", len(name)*1_000_000_000+len(namespace))
	return c
}

func group(req map[string]any, section, key string) map[string]any {
	return req[section].(map[string]any)[key].(map[string]any)
}

// clusterSync grows the capture of a blocking cluster budget (gate Both) to namespaces selected namespaces, spenders
// of them holding a spend ConfigMap; with quotas, gate Both, each namespace has its ResourceQuota, else gate
// Policy. Its Namespaces and ResourceQuotas are copies of those Metacontroller v4.17.2 sent for a ClusterLLMCostBudget
// over 10,000 namespaces, clusterObjects: a blocked Namespace (its posture label and annotation
// included) and a ResourceQuota (its status and managedFields included).
func clusterSync(dir string, namespaces, spenders int, quotas bool) ([]byte, error) {
	req, err := readCapture(dir, "clusterbudget/sync/capture-configmap-missing-closed-blocks.request.json")
	if err != nil {
		return nil, err
	}
	spend, err := readCapture(dir, "clusterbudget/sync/capture-first-sync-under-budget.request.json")
	if err != nil {
		return nil, err
	}
	var seen map[string]any
	if err := json.Unmarshal(clusterObjects, &seen); err != nil {
		return nil, err
	}
	cmTemplate := group(spend, "related", "ConfigMap.v1")["ml-research/llm-spend"]
	nss, cms, rqs := map[string]any{}, map[string]any{}, map[string]any{}
	for i := range namespaces {
		name := fmt.Sprintf("ml-team-%05d", i)
		ns := renamed(seen["namespace"], name, "")
		labels := ns["metadata"].(map[string]any)["labels"].(map[string]any)
		labels["kubernetes.io/metadata.name"], labels["department"] = name, "ml"
		nss[name] = ns
		if i < spenders {
			cms[name+"/llm-spend"] = renamed(cmTemplate, "llm-spend", name)
		}
		if quotas {
			rqs[name+"/llmbudget-cluster-ml-department"] = renamed(seen["resourceQuota"],
				"llmbudget-cluster-ml-department", name)
		}
	}
	req["related"] = map[string]any{"Namespace.v1": nss, "ConfigMap.v1": cms}
	req["children"] = map[string]any{"Event.v1": map[string]any{}, "ResourceQuota.v1": rqs}
	if !quotas {
		parent := req["parent"].(map[string]any)
		parent["spec"].(map[string]any)["enforcement"].(map[string]any)["gate"] = "Policy"
	}
	return json.Marshal(req)
}

// namespaceSync grows the capture of a namespace a cluster budget blocks to budgets blocking cluster budgets, each
// closing namespaces namespaces named by format but the first, which is this one.
func namespaceSync(dir string, budgets, namespaces int, format string) ([]byte, error) {
	req, err := readCapture(dir, "namespace/sync/capture-cluster-budget-blocks.request.json")
	if err != nil {
		return nil, err
	}
	related := group(req, "related", "ClusterLLMCostBudget.llmbudget.dev/v1alpha1")
	template := related["ml-department"]
	closed := make([]any, namespaces)
	for i := range closed {
		closed[i] = fmt.Sprintf(format, i)
	}
	closed[0] = "ml-research"
	grown := map[string]any{}
	for i := range budgets {
		name := fmt.Sprintf("department-%03d", i)
		b := renamed(template, name, "")
		b["status"].(map[string]any)["enforcement"].(map[string]any)["namespaces"] = closed
		grown[name] = b
	}
	req["related"].(map[string]any)["ClusterLLMCostBudget.llmbudget.dev/v1alpha1"] = grown
	return json.Marshal(req)
}

// craftedClusterSync is the smallest cluster sync with n selected namespaces: a request no Metacontroller sends,
// made to grow the answer (a ResourceQuota per namespace) as far as it can.
func craftedClusterSync(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"parent":{"metadata":{"name":"b","uid":"u","generation":1},"spec":{"limitUSD":"1",` +
		`"namespaceSelector":{},"costSource":{"format":"DailyLedger","spendSource":"s"},"enforcement":{` +
		`"action":"BlockNewWorkloads","gate":"Both","failurePolicy":"Closed","resources":["jobs.batch"]}}},` +
		`"related":{"Namespace.v1":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"namespace-%05d":{"metadata":{"name":"namespace-%05d"}}`, i, i)
	}
	b.WriteString(`}}}`)
	return []byte(b.String())
}
