//go:build integration

package integration_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// TestASquattedSpendConfigMapIsUntrustedAndBlocksUnderClosed replays the squatting steps against the real API
// server, with the hook's sync as Metacontroller would call it on the stored objects:
//
//  1. before a budget names it, a user with edit creates the ConfigMap the budget will read, holding zero spend
//     stamped 2099-01-01: the spend-source policy admits it, as it carries no spend-source label;
//  2. a cluster administrator creates the budget (maxAge 1m, failurePolicy Closed);
//  3. the spend writer cannot take the ConfigMap over: it may not label an existing ConfigMap;
//  4. the hook does not read it: the budget is Unknown with reason SpendSourceUntrusted, and blocks;
//  5. the runbook: an administrator deletes the squatted ConfigMap, the writer creates it labelled, and the hook
//     reads it.
func TestASquattedSpendConfigMapIsUntrustedAndBlocksUnderClosed(t *testing.T) {
	installLiftControls(t)
	hook := startHookServer(t)
	ns := kube.Namespace(t, "squat")
	user := "squatter@example.com"
	bind(t, ns, "edit", user)
	cluster.WaitFor(t, time.Minute, "edit to write ConfigMaps", func() (bool, string) {
		got := canI(t, user, ns, "create", "configmaps")
		return got == "yes", got
	})

	squatted := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: chatbot-spend\n" +
		"  annotations: {llmbudget.dev/spend-as-of: '2099-01-01T00:00:00Z'}\ndata: {total-usd: '0'}\n"
	out, err := kube.KubectlErr(t, squatted, "create", "-f", "-", "-n", ns, "--as="+user)
	require.NoError(t, err, "an unlabelled ConfigMap is no spend source: the team may create it: %s", out)

	kube.ApplyYAML(t, ns, budgetYAML(t, "chatbot", func(spec map[string]any) {
		spec["limitUSD"] = "1"
		spec["costSource"] = map[string]any{"configMapName": "chatbot-spend", "key": "total-usd", "maxAge": "1m"}
		spec["enforcement"] = map[string]any{"action": "BlockNewWorkloads", "gate": "Policy",
			"resources": []any{"jobs.batch"}, "failurePolicy": "Closed"}
	}))

	written := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: chatbot-spend\n" +
		"  labels: {llmbudget.dev/spend-source: chatbot}\n" +
		"  annotations: {llmbudget.dev/spend-as-of: '" + time.Now().UTC().Format(time.RFC3339) + "'}\n" +
		"data: {total-usd: '4.35'}\n"
	out, err = kube.KubectlErr(t, written, "apply", "--server-side", "--force-conflicts",
		"--field-manager=llmbudget-spend", "-n", ns, "--as="+spendWriter, "-f", "-")
	require.Error(t, err, "the writer may not make an existing ConfigMap a spend source: %s", out)
	assert.Contains(t, out, "is not one yet, and only a cluster administrator may label it")

	status := syncBudget(t, hook, ns, "chatbot", "chatbot-spend")
	assert.Equal(t, "Unknown", status["state"])
	evaluated := conditionOf(t, status, "BudgetEvaluated")
	assert.Equal(t, "SpendSourceUntrusted", evaluated["reason"])
	assert.Contains(t, evaluated["message"], "ConfigMap "+ns+"/chatbot-spend carries no label")
	assert.Equal(t, true, status["enforcement"].(map[string]any)["blocking"], "under Closed it blocks")

	// The runbook (docs/runbooks.md, "A squatted spend ConfigMap").
	kube.Kubectl(t, "delete", "configmap", "chatbot-spend", "-n", ns)
	out, err = kube.KubectlErr(t, written, "apply", "--server-side", "--field-manager=llmbudget-spend", "-n", ns,
		"--as="+spendWriter, "-f", "-")
	require.NoError(t, err, out)
	status = syncBudget(t, hook, ns, "chatbot", "chatbot-spend")
	assert.Equal(t, "OverBudget", status["state"], "the writer's figures are read: 4.35 of 1")
	assert.Equal(t, "Evaluated", conditionOf(t, status, "BudgetEvaluated")["reason"])
}

// syncBudget calls the hook's budget sync as Metacontroller would, with the stored budget and its ConfigMap, and
// returns the status it answers.
func syncBudget(t *testing.T, hook, ns, name, configMap string) map[string]any {
	t.Helper()
	req := map[string]any{
		"controller": map[string]any{}, "parent": getObject(t, "llmcostbudget", name, ns), "finalizing": false,
		"children": map[string]any{"Event.v1": map[string]any{}, "ResourceQuota.v1": map[string]any{}},
		"related": map[string]any{"ConfigMap.v1": map[string]any{
			ns + "/" + configMap: getObject(t, "configmap", configMap, ns),
		}},
	}
	var resp struct {
		Status map[string]any `json:"status"`
	}
	postJSON(t, hook+"/budget/sync", req, &resp)
	require.NotNil(t, resp.Status)
	return resp.Status
}

// conditionOf is the condition of type kind in a status.
func conditionOf(t *testing.T, status map[string]any, kind string) map[string]any {
	t.Helper()
	conditions, _ := status["conditions"].([]any)
	for _, c := range conditions {
		if m := c.(map[string]any); m["type"] == kind {
			return m
		}
	}
	require.Failf(t, "no condition", "%s in %v", kind, conditions)
	return nil
}
