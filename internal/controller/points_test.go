package controller_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

// lease is an authz replica's Lease renewed at renewed, with the report annotation (none when report is empty).
func lease(renewed, duration, report string) string {
	annotations := ""
	if report != "" {
		q, _ := json.Marshal(report)
		annotations = `,"annotations":{"llmbudget.dev/authz-refusing":` + string(q) + `}`
	}
	return `{"metadata":{"name":"llmbudget-authz.authz-0","namespace":"llmbudget-system"` + annotations + `},` +
		`"spec":{"holderIdentity":"authz-0","leaseDurationSeconds":` + duration + `,"renewTime":` + renewed + `}}`
}

func TestAnAuthzLeaseIsReadAsTheContractSays(t *testing.T) {
	renewed := time.Date(2026, 11, 29, 7, 29, 55, 0, time.UTC)
	cases := []struct {
		name  string
		lease string
		want  evaluate.Replica
	}{
		{"a synced replica refusing for a budget expires at its renewal plus its duration",
			lease(`"2026-11-29T07:29:55.000000Z"`, "30",
				`{"synced":true,"budgets":["LLMCostBudget team-ml/chatbot"],"truncated":false}`),
			evaluate.Replica{Name: "authz-0", Expires: renewed.Add(30 * time.Second), Synced: true,
				Refusing: []string{"LLMCostBudget team-ml/chatbot"}}},
		{"a cut list says so", lease(`"2026-11-29T07:29:55.000000Z"`, "30",
			`{"synced":true,"budgets":[],"truncated":true}`),
			evaluate.Replica{Name: "authz-0", Expires: renewed.Add(30 * time.Second), Synced: true,
				Refusing: []string{}, Truncated: true}},
		{"a Lease without a report refuses for nothing", lease(`"2026-11-29T07:29:55.000000Z"`, "30", ""),
			evaluate.Replica{Name: "authz-0", Expires: renewed.Add(30 * time.Second),
				Problem: "its Lease has no annotation llmbudget.dev/authz-refusing"}},
		{"a report that is not JSON names the annotation", lease(`"2026-11-29T07:29:55.000000Z"`, "30", "yes"),
			evaluate.Replica{Name: "authz-0", Expires: renewed.Add(30 * time.Second),
				Problem: "metadata.annotations[llmbudget.dev/authz-refusing]: malformed JSON at byte 1: " +
					"invalid character 'y' looking for beginning of value"}},
		{"a Lease never renewed is never live", lease("null", "30", `{"synced":true}`),
			evaluate.Replica{Name: "authz-0", Problem: "its Lease has no spec.renewTime"}},
		{"a renewal that is not a time is never live", lease(`"soon"`, "30", `{"synced":true}`),
			evaluate.Replica{Name: "authz-0", Problem: "its Lease's spec.renewTime is not a time"}},
		{"a Lease without a positive duration is never live", lease(`"2026-11-29T07:29:55.000000Z"`, "0",
			`{"synced":true}`),
			evaluate.Replica{Name: "authz-0", Problem: "its Lease has no positive spec.leaseDurationSeconds"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := controller.ReadAuthzLease([]byte(tc.lease))
			require.True(t, ok)
			assert.Equal(t, tc.want, got)
		})
	}
	_, ok := controller.ReadAuthzLease([]byte(`{"metadata":{}}`))
	assert.False(t, ok, "an object without a name is no Lease")
}

func TestAReportListingMoreThanItsBoundIsAProblem(t *testing.T) {
	budgets := make([]string, controller.MaxAuthzRefusing+1)
	for i := range budgets {
		budgets[i] = "LLMCostBudget a/b"
	}
	report, err := json.Marshal(controller.AuthzReport{Synced: true, Budgets: budgets})
	require.NoError(t, err)
	got, ok := controller.ReadAuthzLease([]byte(lease(`"2026-11-29T07:29:55.000000Z"`, "30", string(report))))
	require.True(t, ok)
	assert.Contains(t, got.Problem, "lists 2001 budgets, more than 2000 (MaxAuthzRefusing)")
	assert.Empty(t, got.Refusing)
}

// FuzzReadAuthzLease: whatever a Lease holds, reading it never panics; a replica it yields has a name, and one
// without a problem has a time it expires and a bounded list.
func FuzzReadAuthzLease(f *testing.F) {
	f.Add([]byte(lease(`"2026-11-29T07:29:55.000000Z"`, "30", `{"synced":true,"budgets":["LLMCostBudget a/b"]}`)))
	f.Add([]byte(lease(`"2026-11-29T07:29:55Z"`, "-1", `{"synced":"yes"}`)))
	f.Add([]byte(`{"metadata":{"name":"x","annotations":{"llmbudget.dev/authz-refusing":"{\"budgets\":null}"}},` +
		`"spec":{"leaseDurationSeconds":2147483647,"renewTime":"9999-12-31T23:59:59.999999Z"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, ok := controller.ReadAuthzLease(raw)
		if !ok {
			return
		}
		if r.Name == "" {
			t.Fatalf("a replica without a name from %q", raw)
		}
		if r.Problem == "" && (r.Expires.IsZero() || len(r.Refusing) > controller.MaxAuthzRefusing) {
			t.Fatalf("a replica without a problem has expiry %v and %d budgets", r.Expires, len(r.Refusing))
		}
	})
}

func TestTheBudgetRelatesWhatShowsItsPointsInForce(t *testing.T) {
	blocking := json.RawMessage(`{"metadata":{"name":"b","namespace":"ns"},"spec":{"limitUSD":"10",` +
		`"costSource":{"configMapName":"cm","key":"k"},"enforcement":{"action":"BlockNewWorkloads",` +
		`"resources":["jobs.batch"]}}}`)
	resp, err := controller.Budget{AuthzNamespace: controller.DefaultAuthzNamespace}.Customize(
		metacontroller.CustomizeRequest{Parent: blocking})
	require.NoError(t, err)
	var resources []string
	for _, r := range resp.RelatedResources {
		resources = append(resources, r.Resource+" "+r.Namespace)
	}
	assert.Equal(t, []string{"configmaps ns", "validatingadmissionpolicies ", "validatingadmissionpolicybindings ",
		"leases llmbudget-system", "namespaces "}, resources)
	assert.Equal(t, []string{"llmbudget-budgets", "llmbudget-budgets-warn"}, resp.RelatedResources[1].Names)
	assert.Equal(t, []string{"ns"}, resp.RelatedResources[4].Names)

	none, err := controller.Budget{}.Customize(metacontroller.CustomizeRequest{Parent: blocking})
	require.NoError(t, err)
	for _, r := range none.RelatedResources {
		assert.NotEqual(t, "leases", r.Resource, "without an authz namespace no Lease is related, nor watched")
	}

	reporting, err := controller.Budget{}.Customize(metacontroller.CustomizeRequest{Parent: json.RawMessage(
		`{"metadata":{"name":"b","namespace":"ns"},"spec":{"limitUSD":"10","costSource":{"configMapName":"cm",` +
			`"key":"k"}}}`)})
	require.NoError(t, err)
	assert.Len(t, reporting.RelatedResources, 1, "a budget that only reports relates its spend alone")

	elsewhere, err := controller.ClusterBudget{AuthzNamespace: "gateway"}.Customize(metacontroller.CustomizeRequest{
		Parent: json.RawMessage(`{"metadata":{"name":"d"},"spec":{"limitUSD":"10","namespaceSelector":{},` +
			`"costSource":{"spendSource":"s"},"enforcement":{"action":"BlockNewWorkloads","resources":["jobs"]}}}`)})
	require.NoError(t, err)
	leases := elsewhere.RelatedResources[len(elsewhere.RelatedResources)-1]
	assert.Equal(t, []string{"leases", "gateway"}, []string{leases.Resource, leases.Namespace},
		"only the Leases of the namespace the service is told count")
}
