//go:build integration

package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// Twenty budgets are created at once, over their limit, and the sync hook of a running llmbudget serve is replayed
// as Metacontroller calls it under load: every budget is synced again and again, concurrently, a third of the
// syncs with a parent whose status is older than the last one written (its cache not caught up), and the desired
// children are applied by name: an Event desired and not there is created, one there and no longer desired is
// deleted, and the status is written whole. Then the spend falls under the limit and the block is lifted. Each
// Event must be created exactly once and never deleted while its occurrence is announced.
func TestEachEventIsCreatedOnceWhileSyncsSeeStaleParents(t *testing.T) {
	const budgets, rounds = 20, 6
	installBudgetCRD(t)
	hook := startHookServer(t)
	ns := kube.Namespace(t, "events-once")

	var docs []string
	for i := range budgets {
		docs = append(docs, spendConfigMap(ns, i, "612"), budgetManifest(ns, i))
	}
	kube.ApplyYAML(t, ns, strings.Join(docs, "\n---\n"))

	replayers := make([]*replayer, budgets)
	for i := range replayers {
		replayers[i] = &replayer{ns: ns, name: fmt.Sprintf("team-%02d", i), hook: hook,
			created: map[string]int{}, deleted: map[string]int{}, uids: map[string]string{},
			rand: rand.New(rand.NewPCG(uint64(i), 30))}
	}
	replayAll(t, replayers, rounds)
	for i := range budgets {
		kube.ApplyYAML(t, ns, spendConfigMap(ns, i, "10"))
	}
	replayAll(t, replayers, rounds)

	want := []string{"BlockingNewWorkloads", "BudgetWarning", "OverBudget", "Unblocked"}
	stale := 0
	for _, r := range replayers {
		stale += r.staleSyncs
		assert.ElementsMatch(t, want, r.reasons(t), "%s: the Events it announced", r.name)
		for name, n := range r.created {
			assert.Equal(t, 1, n, "%s: Event %s created %d times", r.name, name, n)
		}
		assert.Empty(t, r.deleted, "%s: Events deleted while announced", r.name)
		for name, uid := range r.uids {
			got := strings.TrimSpace(kube.Kubectl(t, "get", "event", name, "-n", ns, "-o", "jsonpath={.metadata.uid}"))
			assert.Equal(t, uid, got, "%s: Event %s is the one first created", r.name, name)
		}
	}
	require.Positive(t, stale, "no sync was given a stale parent")
	t.Logf("%d budgets, %d syncs each, %d with a stale parent: every Event created once",
		budgets, 2*rounds, stale)
}

// replayAll syncs every budget rounds times, all budgets concurrently, a second apart.
func replayAll(t *testing.T, rs []*replayer, rounds int) {
	t.Helper()
	for range rounds {
		var wg sync.WaitGroup
		for _, r := range rs {
			wg.Go(func() { r.sync(t) })
		}
		wg.Wait()
		time.Sleep(time.Second)
	}
}

// replayer is Metacontroller for one budget: it remembers each parent it was given, to give an old one again.
type replayer struct {
	ns, name, hook string
	seen           []map[string]any
	created        map[string]int
	deleted        map[string]int
	uids           map[string]string // the uid of each Event when it was created
	staleSyncs     int
	rand           *rand.Rand
}

func (r *replayer) sync(t *testing.T) {
	parent := getObject(t, "llmcostbudget", r.name, r.ns)
	if len(r.seen) > 0 && r.rand.IntN(3) == 0 {
		parent = r.seen[len(r.seen)-1] // the cache has not seen the last status write yet
		r.staleSyncs++
	}
	r.seen = append(r.seen, parent)
	observed := r.events(t)
	req := map[string]any{
		"controller": map[string]any{}, "parent": parent, "finalizing": false,
		"children": map[string]any{"Event.v1": observed, "ResourceQuota.v1": map[string]any{}},
		"related": map[string]any{"ConfigMap.v1": map[string]any{
			r.ns + "/" + spendName(r.name): getObject(t, "configmap", spendName(r.name), r.ns),
		}},
	}
	var resp struct {
		Status   map[string]any   `json:"status"`
		Children []map[string]any `json:"children"`
	}
	postJSON(t, r.hook+"/budget/sync", req, &resp)

	desired := map[string]bool{}
	for _, c := range resp.Children {
		if c["kind"] != "Event" {
			continue // quotas are not counted here
		}
		name := c["metadata"].(map[string]any)["name"].(string)
		desired[name] = true
		if _, ok := observed[r.ns+"/"+name]; ok {
			continue
		}
		out, err := kube.KubectlErr(t, toJSON(t, c), "create", "-f", "-", "-o", "jsonpath={.metadata.uid}")
		require.NoError(t, err, "create Event %s: %s", name, out)
		r.created[name]++
		r.uids[name] = strings.TrimSpace(out)
	}
	for key := range observed {
		if name := strings.TrimPrefix(key, r.ns+"/"); !desired[name] {
			kube.Kubectl(t, "delete", "event", name, "-n", r.ns)
			r.deleted[name]++
		}
	}
	// Metacontroller overwrites the status whole, on the object as it is now.
	current := getObject(t, "llmcostbudget", r.name, r.ns)
	current["status"] = resp.Status
	out, err := kube.KubectlErr(t, toJSON(t, current), "replace", "--subresource=status", "-f", "-")
	require.NoError(t, err, "write the status of %s: %s", r.name, out)
}

// events are the budget's Events as Metacontroller observes its children, keyed namespace/name.
func (r *replayer) events(t *testing.T) map[string]any {
	t.Helper()
	var list struct {
		Items []map[string]any `json:"items"`
	}
	out := kube.Kubectl(t, "get", "events", "-n", r.ns, "-l", "llmbudget.dev/budget="+r.name, "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	m := map[string]any{}
	for _, e := range list.Items {
		m[r.ns+"/"+e["metadata"].(map[string]any)["name"].(string)] = e
	}
	return m
}

// reasons are the reasons of the Events created for the budget.
func (r *replayer) reasons(t *testing.T) []string {
	t.Helper()
	var out []string
	for name := range r.created {
		reason := kube.Kubectl(t, "get", "event", name, "-n", r.ns, "-o", "jsonpath={.reason}")
		out = append(out, strings.TrimSpace(reason))
	}
	return out
}

func spendName(budget string) string { return budget + "-spend" }

func budgetManifest(ns string, i int) string {
	return fmt.Sprintf(`apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata: {name: team-%02d, namespace: %s}
spec:
  limitUSD: "500"
  period: {type: Monthly, timeZone: UTC}
  costSource: {configMapName: team-%02d-spend, key: total-usd}
  enforcement: {action: BlockNewWorkloads, gate: Policy, resources: [jobs.batch]}`, i, ns, i)
}

// spendConfigMap is a budget's spend, stamped as the spend writer stamps it.
func spendConfigMap(ns string, i int, usd string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: team-%02d-spend
  namespace: %s
  labels: {llmbudget.dev/spend-source: team-%02d}
  annotations: {llmbudget.dev/spend-as-of: "%s"}
data: {total-usd: "%s"}`, i, ns, i, time.Now().UTC().Format(time.RFC3339), usd)
}

func getObject(t *testing.T, kind, name, ns string) map[string]any {
	t.Helper()
	var obj map[string]any
	require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "get", kind, name, "-n", ns, "-o", "json")), &obj))
	return obj
}

func postJSON(t *testing.T, url string, body, into any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(into))
}

// startHookServer runs llmbudget serve on a free local port, on the real clock, until the test ends.
func startHookServer(t *testing.T) string {
	t.Helper()
	bin := buildLLMBudget(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", addr, "--metrics-addr", "", "--log-level", "warn")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("llmbudget serve:\n%s", logs.String())
		}
	})
	url := "http://" + addr
	cluster.WaitFor(t, 30*time.Second, "llmbudget serve to listen on "+addr, func() (bool, string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false, err.Error()
		}
		return c.Close() == nil, ""
	})
	return url
}
