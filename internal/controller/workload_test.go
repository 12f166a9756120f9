package controller_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

const deployment = `{"apiVersion":"apps/v1","kind":"Deployment",` +
	`"metadata":{"name":"web","namespace":"ns","uid":"u","labels":{"llmbudget.dev/budget":"b"}},"spec":{"replicas":1}}`

func related(status string) metacontroller.ObjectMap {
	if status == "" {
		return metacontroller.ObjectMap{metacontroller.GroupKey(api.APIVersion, api.Kind): {}}
	}
	budget := metacontroller.Raw(`{"metadata":{"name":"b","namespace":"ns"},"status":` + status + `}`)
	return metacontroller.ObjectMap{metacontroller.GroupKey(api.APIVersion, api.Kind): {"ns/b": budget}}
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

func TestSyncReflectsTheBudget(t *testing.T) {
	over := `{"state":"OverBudget","limitUSD":"500.00","observedSpendUSD":"612.00","percentUsed":122,` +
		`"period":{"start":"2026-11-01T00:00:00Z","end":"2026-12-01T00:00:00Z"},` +
		`"thresholds":[{"percent":100,"basis":"Actual","crossedAt":"2026-11-29T07:00:00Z"}]}`
	cases := map[string]struct {
		related     metacontroller.ObjectMap
		state       string
		reason      string
		spend       string
		attachments int
	}{
		"a missing budget is reported as not found": {related(""), "Unknown", "BudgetNotFound", "<null>", 0},
		"a budget without status is not evaluated":  {related(`{}`), "Unknown", "BudgetNotEvaluated", "<null>", 0},
		"an over budget announces BudgetExceeded":   {related(over), "OverBudget", "<null>", "612.00", 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			now := time.Date(2026, 11, 29, 7, 10, 0, 0, time.UTC)
			req := metacontroller.DecoratorRequest{Object: json.RawMessage(deployment), Related: tc.related}
			resp, _, err := controller.Workload{}.Sync(req, now)
			require.NoError(t, err)
			assert.Equal(t, tc.state, str(resp.Labels[controller.LabelState]))
			assert.Equal(t, tc.reason, str(resp.Annotations[controller.AnnotationReason]))
			assert.Equal(t, tc.spend, str(resp.Annotations[controller.AnnotationSpend]))
			assert.Len(t, resp.Attachments, tc.attachments)
			assert.Nil(t, resp.Status, "never the workload's status")
			assert.Len(t, resp.Labels, 1, "only llmbudget.dev/state")
			assert.Len(t, resp.Annotations, 8)
			assert.Equal(t, "b", str(resp.Annotations[controller.AnnotationPostureBudget]), "the budget it describes")
		})
	}
}

// withAnnotations is the test Deployment carrying annotations.
func withAnnotations(ann string) json.RawMessage {
	return json.RawMessage(`{"apiVersion":"apps/v1","kind":"Deployment",` +
		`"metadata":{"name":"web","namespace":"ns","uid":"u","labels":{"llmbudget.dev/budget":"b"},` +
		`"annotations":` + ann + `}}`)
}

func TestTheExceededEventIsToldOncePerPeriodWhateverTheBudgetDoes(t *testing.T) {
	period := `"period":{"start":"2026-11-01T00:00:00Z","end":"2026-12-01T00:00:00Z"}`
	over := related(`{"state":"OverBudget",` + period + `}`)
	under := related(`{"state":"UnderBudget",` + period + `}`)
	t0 := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)

	first, _, err := sync(metacontroller.DecoratorRequest{Object: json.RawMessage(deployment), Related: over}, t0)
	require.NoError(t, err)
	require.Len(t, first.Attachments, 1)
	assert.Equal(t, "2026-11-29T07:00:00Z", str(first.Annotations[controller.AnnotationExceededAt]))
	assert.Equal(t, 10.0, first.ResyncAfterSeconds, "look again until the object carries the decorations")

	marked := withAnnotations(`{"llmbudget.dev/exceeded-at":"2026-11-29T07:00:00Z"}`)
	later, _, err := sync(metacontroller.DecoratorRequest{Object: marked, Related: under}, t0.Add(30*time.Minute))
	require.NoError(t, err)
	require.Len(t, later.Attachments, 1, "the budget recovered, the Event stays for its window")
	assert.Equal(t, first.Attachments[0], later.Attachments[0])

	gone, _, err := sync(metacontroller.DecoratorRequest{Object: marked, Related: over}, t0.Add(55*time.Minute))
	require.NoError(t, err)
	assert.Empty(t, gone.Attachments, "told once: not again this period")
	assert.Equal(t, "2026-11-29T07:00:00Z", str(gone.Annotations[controller.AnnotationExceededAt]))

	december := related(`{"state":"UnderBudget","period":{"start":"2026-12-01T00:00:00Z","end":"2027-01-01T00:00:00Z"}}`)
	next, _, err := sync(metacontroller.DecoratorRequest{Object: marked, Related: december},
		time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	assert.Empty(t, next.Attachments)
	assert.Nil(t, next.Annotations[controller.AnnotationExceededAt], "last period's mark goes")
}

// A finalize hook, where a DecoratorController has one, must never hold the object.
func TestFinalizeRemovesEveryKeyAndReleasesTheObjectAtOnce(t *testing.T) {
	for name, obj := range map[string]string{
		"decorated": `{"metadata":{"name":"web","namespace":"ns","labels":{"llmbudget.dev/state":"OverBudget"},` +
			`"annotations":{"llmbudget.dev/posture-budget":"b","other":"kept"}}}`,
		"clean": `{"metadata":{"name":"web","namespace":"ns","labels":{"app":"web"},"annotations":{"other":"kept"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			req := metacontroller.DecoratorRequest{Object: json.RawMessage(obj), Finalizing: true}
			resp, _, err := controller.Workload{}.Finalize(req, time.Now())
			require.NoError(t, err)
			assert.True(t, resp.Finalized, "released in the same update that removes the keys")
			assert.Zero(t, resp.ResyncAfterSeconds)
			assert.Empty(t, resp.Attachments)
			for k, v := range resp.Labels {
				assert.Nil(t, v, k)
			}
			for k, v := range resp.Annotations {
				assert.Nil(t, v, k)
			}
			assert.Contains(t, resp.Annotations, controller.AnnotationPostureBudget)
			assert.NotContains(t, resp.Annotations, "other", "keys of others are never touched")
		})
	}
}

// The unlabelled decorator selects what still carries the state label once the budget label is gone.
func TestSyncRemovesEveryDecorationOnceTheBudgetLabelIsGone(t *testing.T) {
	decorated := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"ns","uid":"u",` +
		`"labels":{"llmbudget.dev/state":"OverBudget","app":"web"},` +
		`"annotations":{"llmbudget.dev/posture-budget":"b","llmbudget.dev/spend-usd":"612.00","other":"kept"}}}`
	over := related(`{"state":"OverBudget","period":{"start":"2026-11-01T00:00:00Z","end":"2026-12-01T00:00:00Z"}}`)
	resp, _, err := sync(metacontroller.DecoratorRequest{Object: json.RawMessage(decorated), Related: over},
		time.Date(2026, 11, 29, 7, 10, 0, 0, time.UTC))
	require.NoError(t, err)
	assert.False(t, resp.Finalized, "no finalizer to release")
	assert.Zero(t, resp.ResyncAfterSeconds, "clean, it matches no decorator and needs no resync")
	assert.Empty(t, resp.Attachments, "no BudgetExceeded for a workload that draws on no budget")
	require.Len(t, resp.Labels, 1)
	require.Len(t, resp.Annotations, 8)
	for k, v := range resp.Labels {
		assert.Nil(t, v, k)
	}
	for k, v := range resp.Annotations {
		assert.Nil(t, v, k)
	}
	assert.NotContains(t, resp.Labels, "app", "keys of others are never touched")
}

func TestSyncNeverReleasesALiveObject(t *testing.T) {
	resp, _, err := sync(metacontroller.DecoratorRequest{Object: json.RawMessage(deployment), Related: related(`{}`)},
		time.Now())
	require.NoError(t, err)
	assert.False(t, resp.Finalized)
}

func TestThePostureNamesItsBudgetAndWhenTheBudgetTookIt(t *testing.T) {
	st := `{"state":"Warning","lastEvaluatedTime":"2026-11-29T06:55:00Z"}`
	resp, _, err := sync(metacontroller.DecoratorRequest{Object: json.RawMessage(deployment), Related: related(st)},
		time.Date(2026, 11, 29, 7, 10, 0, 0, time.UTC))
	require.NoError(t, err)
	assert.Equal(t, "b", str(resp.Annotations[controller.AnnotationPostureBudget]))
	assert.Equal(t, "2026-11-29T06:55:00Z", str(resp.Annotations[controller.AnnotationPostureAt]),
		"the budget's status.lastEvaluatedTime, not the clock: a resync changes nothing")

	resp, _, err = sync(metacontroller.DecoratorRequest{Object: json.RawMessage(deployment), Related: related("")},
		time.Now())
	require.NoError(t, err)
	assert.Nil(t, resp.Annotations[controller.AnnotationPostureAt], "no budget, no time")
}

func TestCustomizeRelatesTheNamespacesBudgetsToLabelledObjectsOnly(t *testing.T) {
	resp, err := controller.Workload{}.Customize(metacontroller.CustomizeRequest{Parent: json.RawMessage(deployment)})
	require.NoError(t, err)
	require.Len(t, resp.RelatedResources, 1)
	assert.Empty(t, resp.RelatedResources[0].Names,
		"every budget of the namespace: the answer is cached per generation, a label change is not")
	assert.Equal(t, "ns", resp.RelatedResources[0].Namespace)
	assert.Equal(t, "llmcostbudgets", resp.RelatedResources[0].Resource)

	unlabelled := json.RawMessage(`{"metadata":{"name":"web","namespace":"ns"}}`)
	resp, err = controller.Workload{}.Customize(metacontroller.CustomizeRequest{Parent: unlabelled})
	require.NoError(t, err)
	assert.Empty(t, resp.RelatedResources)
	assert.NotNil(t, resp.RelatedResources, "an empty list, not null")
}

func TestAWorkloadLabelledAfterTheCrossingIsStillTold(t *testing.T) {
	over := `{"state":"OverBudget","thresholds":[{"percent":100,"basis":"Actual","crossedAt":"2026-11-28T07:00:00Z"}]}`
	resp, _, err := sync(metacontroller.DecoratorRequest{Object: json.RawMessage(deployment), Related: related(over)},
		time.Date(2026, 11, 29, 7, 10, 0, 0, time.UTC))
	require.NoError(t, err)
	require.Len(t, resp.Attachments, 1)
	b, err := json.Marshal(resp.Attachments[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), `"name":"web.budgetexceeded.1795936200"`)
}

func TestAnObjectThatCarriesItsDecorationsNeedsNoRetry(t *testing.T) {
	st := `{"state":"UnderBudget","limitUSD":"500.00","observedSpendUSD":"1.00","percentUsed":0}`
	obj := json.RawMessage(`{"metadata":{"name":"web","namespace":"ns","labels":{"llmbudget.dev/budget":"b",` +
		`"llmbudget.dev/state":"UnderBudget"},` +
		`"annotations":{"llmbudget.dev/limit-usd":"500.00","llmbudget.dev/spend-usd":"1.00",` +
		`"llmbudget.dev/percent-used":"0","llmbudget.dev/posture-budget":"b"}}}`)
	resp, _, err := sync(metacontroller.DecoratorRequest{Object: obj, Related: related(st)}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, 0.0, resp.ResyncAfterSeconds)
}

var sync = controller.Workload{}.Sync

func TestACraftedStatusNeverMakesAnInvalidOrLargeDecoration(t *testing.T) {
	long := strings.Repeat("9", 100)
	cases := map[string]struct {
		status      string
		state       string
		spend, end  string
		reasonGiven string
	}{
		"a state that is no valid label value is not evaluated": {
			status: `{"state":"Over Budget!","observedSpendUSD":"1.00"}`, state: "Unknown", spend: "<null>",
			reasonGiven: controller.ReasonNotEvaluated,
		},
		"a state this version does not know is not evaluated": {
			status: `{"state":"Exhausted"}`, state: "Unknown", spend: "<null>", reasonGiven: controller.ReasonNotEvaluated,
		},
		"a spend that is no amount is left out": {
			status: `{"state":"Warning","observedSpendUSD":"lots\nof it"}`, state: "Warning", spend: "<null>",
			reasonGiven: "<null>",
		},
		"a spend longer than an annotation allows is left out": {
			status: `{"state":"Warning","observedSpendUSD":"1.` + long + `"}`, state: "Warning", spend: "<null>",
			reasonGiven: "<null>",
		},
		"a period end that is no time is left out": {
			status: `{"state":"Warning","period":{"start":"2026-11-01T00:00:00Z","end":"` + long + `"}}`,
			state:  "Warning", spend: "<null>", end: "<null>", reasonGiven: "<null>",
		},
		"valid values are copied as they are": {
			status: `{"state":"Warning","observedSpendUSD":"1.00",` +
				`"period":{"start":"2026-11-01T00:00:00Z","end":"2026-12-01T00:00:00Z"}}`,
			state: "Warning", spend: "1.00", end: "2026-12-01T00:00:00Z", reasonGiven: "<null>",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := metacontroller.DecoratorRequest{Object: json.RawMessage(deployment), Related: related(tc.status)}
			resp, _, err := sync(req, time.Date(2026, 11, 29, 7, 10, 0, 0, time.UTC))
			require.NoError(t, err)
			state := str(resp.Labels[controller.LabelState])
			assert.Equal(t, tc.state, state)
			assert.Empty(t, validation.IsValidLabelValue(state))
			assert.Equal(t, tc.spend, str(resp.Annotations[controller.AnnotationSpend]))
			assert.Equal(t, tc.reasonGiven, str(resp.Annotations[controller.AnnotationReason]))
			if tc.end != "" {
				assert.Equal(t, tc.end, str(resp.Annotations[controller.AnnotationPeriodEnd]))
			}
		})
	}
}

func TestAnExceededMarkOutsideTheCurrentPeriodIsNotTrusted(t *testing.T) {
	over := related(`{"state":"OverBudget","period":{"start":"2026-11-01T00:00:00Z","end":"2026-12-01T00:00:00Z"}}`)
	now := time.Date(2026, 11, 29, 7, 10, 0, 0, time.UTC)
	cases := map[string]struct {
		mark, want string
		told       bool
	}{
		"a mark in a later period":           {"2099-01-01T00:00:00Z", "2026-11-29T07:10:00Z", true},
		"a mark later in the current period": {"2026-11-30T00:00:00Z", "2026-11-29T07:10:00Z", true},
		"a mark at the period's end":         {"2026-12-01T00:00:00Z", "2026-11-29T07:10:00Z", true},
		"a mark of an earlier period":        {"2026-10-15T00:00:00Z", "2026-11-29T07:10:00Z", true},
		"a mark earlier in this period":      {"2026-11-29T07:00:00Z", "2026-11-29T07:00:00Z", true},
		"an old mark of this period, told":   {"2026-11-02T00:00:00Z", "2026-11-02T00:00:00Z", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := withAnnotations(`{"llmbudget.dev/exceeded-at":"` + tc.mark + `"}`)
			resp, _, err := sync(metacontroller.DecoratorRequest{Object: obj, Related: over}, now)
			require.NoError(t, err)
			assert.Equal(t, tc.want, str(resp.Annotations[controller.AnnotationExceededAt]))
			if tc.told {
				assert.Len(t, resp.Attachments, 1, "BudgetExceeded is announced")
			} else {
				assert.Empty(t, resp.Attachments)
			}
		})
	}
}
