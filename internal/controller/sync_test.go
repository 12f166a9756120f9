package controller

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/evaluate"
	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

func TestCleanupKeepsAnObjectStatusOnly(t *testing.T) {
	cases := map[string]struct {
		status string
		kept   bool
	}{
		"an object is kept": {`{"state": "OverBudget"}`, true},
		"null is dropped":   {`null`, false},
		"a list is dropped": {`[1]`, false},
		"nothing is kept":   {``, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp := cleanup(json.RawMessage(tc.status))
			assert.Equal(t, tc.kept, resp.Status != nil)
			assert.Equal(t, []any{}, resp.Children)
		})
	}
}

func TestCreatedReadsWhenTheAPIServerCreatedEachRecordedEvent(t *testing.T) {
	at := time.Date(2026, 11, 29, 7, 30, 0, 0, time.UTC)
	st := &api.Status{Announcements: []api.AnnouncementStatus{
		{Slug: "blocking", At: metav1.NewTime(at)},
		{Slug: "threshold-80-actual", At: metav1.NewTime(at)},
		{Slug: "threshold-100-actual", At: metav1.NewTime(at)},
	}}
	event := func(name, created string) (string, metacontroller.Raw) {
		return "team-ml/" + name, metacontroller.Raw(`{"metadata":{"name":"` + name + `","namespace":"team-ml",` +
			`"creationTimestamp":` + created + `}}`)
	}
	kids := metacontroller.ObjectMap{metacontroller.GroupKey("v1", "Event"): {}}
	for _, e := range []struct{ name, created string }{
		{EventName("chatbot", "blocking", at.Unix()), `"2026-11-29T09:30:02Z"`},
		{EventName("chatbot", "threshold-80-actual", at.Unix()), `"yesterday"`}, // not the API server's
		{EventName("other", "threshold-100-actual", at.Unix()), `"2026-11-29T09:30:02Z"`},
	} {
		k, v := event(e.name, e.created)
		kids[metacontroller.GroupKey("v1", "Event")][k] = v
	}
	owner := BudgetOwner(api.ObjectMeta{Name: "chatbot", Namespace: "team-ml"})
	got := created(owner, st, kids)
	assert.Equal(t, map[evaluate.Occurrence]time.Time{
		{Slug: "blocking", At: at.Unix()}: time.Date(2026, 11, 29, 9, 30, 2, 0, time.UTC),
	}, mapUTC(got), "only the budget's own Events, with a creationTimestamp that reads")
	assert.Empty(t, created(owner, nil, kids), "no status, nothing recorded")
}

func mapUTC(m map[evaluate.Occurrence]time.Time) map[evaluate.Occurrence]time.Time {
	out := map[evaluate.Occurrence]time.Time{}
	for k, v := range m {
		out[k] = v.UTC()
	}
	return out
}
