//go:build integration

package integration_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/test/k8s/cluster"
)

// status.enforcementPoints against the real objects that enforce a block: the sync hook of a running llmbudget
// serve is given what Metacontroller would relate (read from the API server as it stores them), and its answer
// must say which point is in force.

// pointsRequest is a budget's sync request as Metacontroller builds it from the API server's objects: the
// parent, its spend ConfigMap, the admission policies and bindings of its kind by name, its Namespace, no authz
// Lease, and quotas as children (none unless given).
func pointsRequest(t *testing.T, ns, name string, quotas map[string]any) map[string]any {
	return pointsRequestWithLeases(t, ns, name, quotas, map[string]any{})
}

// pointsRequestWithLeases is pointsRequest with the authz Leases given.
func pointsRequestWithLeases(t *testing.T, ns, name string, quotas, leases map[string]any) map[string]any {
	t.Helper()
	named := func(kind string) map[string]any {
		var list struct {
			Items []map[string]any `json:"items"`
		}
		require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "get", kind, "-o", "json")), &list))
		out := map[string]any{}
		for _, o := range list.Items {
			n := o["metadata"].(map[string]any)["name"].(string)
			if slices.Contains([]string{"llmbudget-budgets", "llmbudget-budgets-warn"}, n) {
				out[n] = o
			}
		}
		return out
	}
	if quotas == nil {
		quotas = map[string]any{}
	}
	var namespace map[string]any
	require.NoError(t, json.Unmarshal([]byte(kube.Kubectl(t, "get", "namespace", ns, "-o", "json")), &namespace))
	return map[string]any{
		"controller": map[string]any{}, "parent": getObject(t, "llmcostbudget", name, ns), "finalizing": false,
		"children": map[string]any{"Event.v1": map[string]any{}, "ResourceQuota.v1": quotas},
		"related": map[string]any{
			"ConfigMap.v1": map[string]any{
				ns + "/" + spendName(name): getObject(t, "configmap", spendName(name), ns),
			},
			"ValidatingAdmissionPolicy.admissionregistration.k8s.io/v1":        named("validatingadmissionpolicies"),
			"ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io/v1": named("validatingadmissionpolicybindings"),
			"Namespace.v1":                 map[string]any{ns: namespace},
			"Lease.coordination.k8s.io/v1": leases,
		},
	}
}

// pointsResponse is what these tests read of a sync's answer.
type pointsResponse struct {
	Status struct {
		EnforcementPoints []struct {
			Point, Status, Reason, Message string
		} `json:"enforcementPoints"`
		Conditions []struct {
			Type, Status, Reason, Message string
		} `json:"conditions"`
	} `json:"status"`
	Children []map[string]any `json:"children"`
	raw      map[string]any
}

func syncPoints(t *testing.T, hook string, req map[string]any) pointsResponse {
	t.Helper()
	var raw map[string]any
	postJSON(t, hook+"/budget/sync", req, &raw)
	var resp pointsResponse
	require.NoError(t, json.Unmarshal([]byte(toJSON(t, raw)), &resp))
	resp.raw = raw
	return resp
}

// entry is the point's status, reason and message.
func (r pointsResponse) entry(t *testing.T, point string) (status, reason, message string) {
	t.Helper()
	for _, p := range r.Status.EnforcementPoints {
		if p.Point == point {
			return p.Status, p.Reason, p.Message
		}
	}
	require.Failf(t, "no entry", "no %s entry in %+v", point, r.Status.EnforcementPoints)
	return "", "", ""
}

func (r pointsResponse) enforced(t *testing.T) (status, reason string) {
	t.Helper()
	for _, c := range r.Status.Conditions {
		if c.Type == "Enforced" {
			return c.Status, c.Reason
		}
	}
	require.Fail(t, "no Enforced condition")
	return "", ""
}

func TestThePolicyEntryReportsARemovedBinding(t *testing.T) {
	installPolicyGate(t)
	hook := startHookServer(t)
	ns := kube.Namespace(t, "points-policy")
	kube.ApplyYAML(t, ns, budgetManifest(ns, 0)+"\n---\n"+spendConfigMap(ns, 0, "612"))

	// The first sync blocks; Metacontroller writes its status and the gate decorator labels the budget.
	first := syncPoints(t, hook, pointsRequest(t, ns, "team-00", nil))
	status, reason, _ := first.entry(t, "Policy")
	assert.Equal(t, []string{"False", "BudgetNotLabelled"}, []string{status, reason}, "before the gate label")
	writeStatus(t, ns, "team-00", first.raw["status"].(map[string]any))
	kube.Kubectl(t, "label", "namespace", ns, "llmbudget.dev/blocked=true") // as the Namespace decorator does

	labelled := syncPoints(t, hook, pointsRequest(t, ns, "team-00", nil))
	status, reason, message := labelled.entry(t, "Policy")
	assert.Equal(t, []string{"True", "InForce"}, []string{status, reason}, message)
	status, _ = labelled.enforced(t)
	assert.Equal(t, "True", status)
	waitRefused(t, "team-00", "", "create", "job", "train", "--image="+pauseImage, "-n", ns, "--dry-run=server")

	// Someone deletes the binding: the policy no longer applies to any request, and the entry says so.
	kube.Kubectl(t, "delete", "validatingadmissionpolicybinding", "llmbudget-budgets")
	removed := syncPoints(t, hook, pointsRequest(t, ns, "team-00", nil))
	status, reason, message = removed.entry(t, "Policy")
	assert.Equal(t, []string{"False", "BindingMissing"}, []string{status, reason})
	assert.Contains(t, message, "ValidatingAdmissionPolicyBinding llmbudget-budgets does not exist")
	status, reason = removed.enforced(t)
	assert.Equal(t, []string{"False", "BindingMissing"}, []string{status, reason})
	cluster.WaitFor(t, 30*time.Second, "a Job to be admitted without the binding", func() (bool, string) {
		out, err := kube.KubectlErr(t, "", "create", "job", "train", "--image="+pauseImage, "-n", ns,
			"--dry-run=server")
		return err == nil, out
	})
	t.Logf("binding removed: %s", message)
}

func TestAQuotaWithoutStatusIsReported(t *testing.T) {
	installBudgetCRD(t)
	hook := startHookServer(t)
	ns := kube.Namespace(t, "points-quota")
	budget := strings.Replace(budgetManifest(ns, 0), "gate: Policy", "gate: Quota", 1)
	kube.ApplyYAML(t, ns, budget+"\n---\n"+spendConfigMap(ns, 0, "612"))

	first := syncPoints(t, hook, pointsRequest(t, ns, "team-00", nil))
	status, reason, _ := first.entry(t, "Quota")
	assert.Equal(t, []string{"False", "QuotaMissing"}, []string{status, reason}, "before Metacontroller creates it")
	quotas := childrenOfKind(first.Children, "ResourceQuota")
	require.Len(t, quotas, 1)

	// Metacontroller creates the quota; as created, it has no status: the controller manager has not counted yet.
	out, err := kube.KubectlErr(t, toJSON(t, quotas[0]), "create", "-f", "-", "-o", "json")
	require.NoError(t, err, out)
	var quota map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &quota))
	st, _ := quota["status"].(map[string]any)
	require.Empty(t, st["hard"], "a quota as created has no status.hard")
	key := ns + "/llmbudget-team-00"
	unfilled := syncPoints(t, hook, pointsRequest(t, ns, "team-00", map[string]any{key: quota}))
	status, reason, message := unfilled.entry(t, "Quota")
	assert.Equal(t, []string{"False", "QuotaNotEnforced"}, []string{status, reason})
	assert.Contains(t, message, "ResourceQuota llmbudget-team-00 has no status.hard in namespace "+ns)
	status, reason = unfilled.enforced(t)
	assert.Equal(t, []string{"False", "QuotaNotEnforced"}, []string{status, reason})

	// Once the quota controller has filled status.hard, the quota is in force.
	cluster.WaitFor(t, 60*time.Second, "the quota controller to fill in status.hard", func() (bool, string) {
		out := kube.Kubectl(t, "get", "resourcequota", "llmbudget-team-00", "-n", ns, "-o", "jsonpath={.status.hard}")
		return strings.TrimSpace(out) != "", out
	})
	filled := syncPoints(t, hook, pointsRequest(t, ns, "team-00",
		map[string]any{key: getObject(t, "resourcequota", "llmbudget-team-00", ns)}))
	status, reason, message = filled.entry(t, "Quota")
	assert.Equal(t, []string{"True", "InForce"}, []string{status, reason}, message)
	t.Logf("quota without status: %+v", unfilled.Status.EnforcementPoints)
}

// An authz replica's Lease, renewed by hand as a replica renews it, counts while it is live; once it is not renewed
// it ages out at renewTime + leaseDurationSeconds, and the sync asks to be called again at that instant.
func TestAnAuthzReplicaThatStopsRenewingAgesOut(t *testing.T) {
	installBudgetCRD(t)
	hook := startHookServer(t)
	ns := kube.Namespace(t, "points-authz")
	kube.ApplyYAML(t, ns, budgetManifest(ns, 0)+"\n---\n"+spendConfigMap(ns, 0, "612"))
	if _, err := kube.KubectlErr(t, "", "get", "namespace", "llmbudget-system"); err != nil {
		kube.Kubectl(t, "create", "namespace", "llmbudget-system")
	}
	const duration = 4
	renewed := time.Now().UTC()
	lease := fmt.Sprintf(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: llmbudget-authz.authz-0
  namespace: llmbudget-system
  labels: {app.kubernetes.io/name: llmbudget, app.kubernetes.io/component: authz}
  annotations:
    llmbudget.dev/authz-refusing: '{"synced":true,"budgets":["LLMCostBudget %s/team-00"],"truncated":false}'
spec:
  holderIdentity: authz-0
  leaseDurationSeconds: %d
  renewTime: %q`, ns, duration, renewed.Format("2006-01-02T15:04:05.000000Z07:00"))
	kube.ApplyYAML(t, "llmbudget-system", lease)
	t.Cleanup(func() {
		_, _ = kube.KubectlErr(t, "", "delete", "lease", "llmbudget-authz.authz-0", "-n", "llmbudget-system")
	})
	leases := func() map[string]any {
		return map[string]any{"llmbudget-system/llmbudget-authz.authz-0": getObject(t, "lease",
			"llmbudget-authz.authz-0", "llmbudget-system")}
	}

	live := syncPoints(t, hook, pointsRequestWithLeases(t, ns, "team-00", nil, leases()))
	status, reason, message := live.entry(t, "Authz")
	assert.Equal(t, []string{"True", "InForce"}, []string{status, reason}, message)
	resync, _ := live.raw["resyncAfterSeconds"].(float64)
	assert.LessOrEqual(t, resync, float64(duration), "a resync when the Lease would expire")

	// The replica stops renewing: past renewTime + leaseDurationSeconds it no longer counts.
	time.Sleep(time.Until(renewed.Add(duration*time.Second + time.Second)))
	gone := syncPoints(t, hook, pointsRequestWithLeases(t, ns, "team-00", nil, leases()))
	status, reason, message = gone.entry(t, "Authz")
	assert.Equal(t, []string{"False", "NoLiveReplica"}, []string{status, reason})
	assert.Contains(t, message, "none of the 1 llmbudget authz replicas with a Lease renewed it in time")
	t.Logf("authz stopped: %s", message)
}
