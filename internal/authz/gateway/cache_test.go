package gateway_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/authz"
	"github.com/llmbudget/llmbudget/internal/authz/gateway"
)

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	return u
}

func TestDecodeBudgetReadsWhatADecisionNeeds(t *testing.T) {
	u := object(t, `
apiVersion: llmbudget.dev/v1alpha1
kind: LLMCostBudget
metadata: {name: chatbot, namespace: team-ml, managedFields: [{manager: x}]}
spec:
  limitUSD: "500"
  enforcement: {action: BlockNewWorkloads, failurePolicy: Closed, scope: Labelled}
status:
  state: OverBudget
  remainingUSD: "0.00"
  period: {start: "2026-11-01T00:00:00Z", end: "2026-12-01T00:00:00+01:00"}
  enforcement:
    blocking: true
    scope: Labelled
    gates: [Policy]
    message: LLMCostBudget team-ml/chatbot is OverBudget (spend 612.00 of 500.00 USD this Monthly period)
`)
	b, err := gateway.DecodeBudget(api.Kind, u)
	require.NoError(t, err)
	assert.Equal(t, authz.Budget{Kind: api.Kind, Namespace: "team-ml", Name: "chatbot",
		FailurePolicy: api.FailClosed, State: api.OverBudget, RemainingUSD: "0.00",
		PeriodEnd: time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC),
		Enforcement: api.EnforcementStatus{Blocking: true, Scope: api.ScopeLabelled, Gates: []api.Gate{api.GatePolicy},
			Message: "LLMCostBudget team-ml/chatbot is OverBudget (spend 612.00 of 500.00 USD this Monthly period)"},
	}, withUTCEnd(b))
}

func withUTCEnd(b authz.Budget) authz.Budget {
	b.PeriodEnd = b.PeriodEnd.UTC()
	return b
}

func TestDecodeBudgetDefaultsAndSelectsAsTheHooksDo(t *testing.T) {
	fresh, err := gateway.DecodeBudget(api.Kind, object(t, `{metadata: {name: new, namespace: a}, spec: {}}`))
	require.NoError(t, err)
	assert.Equal(t, api.FailOpen, fresh.FailurePolicy, "failurePolicy defaults to Open")
	assert.False(t, fresh.Enforcement.Blocking, "a budget without status blocks nothing")

	cluster, err := gateway.DecodeBudget(api.ClusterKind, object(t,
		`{metadata: {name: research}, spec: {namespaceSelector: {matchLabels: {department: ml}}}}`))
	require.NoError(t, err)
	require.NotNil(t, cluster.Selector)
	assert.True(t, cluster.Selector.Matches(labels.Set{"department": "ml"}))
	assert.False(t, cluster.Selector.Matches(labels.Set{"department": "support"}))

	invalid, err := gateway.DecodeBudget(api.ClusterKind, object(t,
		`{metadata: {name: bad}, spec: {namespaceSelector: {matchExpressions: [{key: a, operator: Nope}]}}}`))
	require.NoError(t, err)
	assert.Nil(t, invalid.Selector, "an invalid selector selects nothing")

	_, err = gateway.DecodeBudget(api.Kind, object(t, `{metadata: {name: x}, status: {enforcement: "yes"}}`))
	assert.ErrorContains(t, err, "decode LLMCostBudget x")
}

func TestPodAddressesAreOnlyThoseThePodAloneHolds(t *testing.T) {
	running := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "chatbot-0", Namespace: "team-ml",
			Labels: map[string]string{api.LabelBudget: "chatbot", "app": "chatbot"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.2",
			PodIPs: []corev1.PodIP{{IP: "10.1.0.2"}, {IP: "fd00::2"}}},
	}
	pod, ips := gateway.PodAddresses(running)
	assert.Equal(t, authz.Pod{Namespace: "team-ml", Name: "chatbot-0", Budget: "chatbot"}, pod)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.1.0.2"), netip.MustParseAddr("fd00::2")}, ips)

	hostNet := running.DeepCopy()
	hostNet.Spec.HostNetwork = true
	_, ips = gateway.PodAddresses(hostNet)
	assert.Empty(t, ips, "a Pod on the node's network shares the node's address")

	done := running.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	_, ips = gateway.PodAddresses(done)
	assert.Empty(t, ips, "a finished Pod's address may be another's")
}

func TestTrimPodKeepsWhatSourceModeReads(t *testing.T) {
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", ResourceVersion: "7",
			Labels:        map[string]string{api.LabelBudget: "b", "app": "x"},
			Annotations:   map[string]string{"big": "annotation"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
	trimmed, err := gateway.TrimPod(full)
	require.NoError(t, err)
	assert.Equal(t, &gateway.TrimmedPod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n",
		ResourceVersion: "7"}, Budget: "b", IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1")}}, trimmed)
	copied := trimmed.(*gateway.TrimmedPod).DeepCopyObject()
	assert.Equal(t, trimmed, copied)
	copied.(*gateway.TrimmedPod).IPs[0] = netip.MustParseAddr("10.0.0.2")
	assert.Equal(t, netip.MustParseAddr("10.0.0.1"), trimmed.(*gateway.TrimmedPod).IPs[0], "a deep copy")
	other, err := gateway.TrimPod("not a pod")
	require.NoError(t, err)
	assert.Equal(t, "not a pod", other)
}
