package controller_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	api "github.com/llmbudget/llmbudget/internal/api/v1alpha1"
	"github.com/llmbudget/llmbudget/internal/controller"
	"github.com/llmbudget/llmbudget/internal/evaluate"
)

func TestEventNamesAreDeterministicAndValid(t *testing.T) {
	assert.Equal(t, "chatbot.threshold-80-actual.1795939200",
		controller.EventName("chatbot", "threshold-80-actual", 1795939200))
	long := strings.Repeat("a", 250)
	n := controller.EventName(long, "periodreset", 1)
	assert.LessOrEqual(t, len(n), 253)
	assert.Equal(t, n, controller.EventName(long, "periodreset", 1), "same input, same name")
	assert.NotEqual(t, n, controller.EventName(long, "periodreset", 2), "another occurrence, another name")
}

func TestQuotaCountsEachResource(t *testing.T) {
	q := controller.Quota(controller.Owner{Name: "b", Namespace: "ns", Budget: "b"},
		&evaluate.Quota{Name: "llmbudget-b", Resources: []string{"jobs.batch", "pods"}, Why: "over"}, "ns")
	assert.Equal(t, map[string]string{"count/jobs.batch": "0", "count/pods": "0"}, q.Spec.Hard)
	assert.Equal(t, "llmbudget-b", q.Metadata.Name)
	assert.Equal(t, "over", q.Metadata.Annotations[controller.AnnotationWhy])
	assert.Equal(t, "b", q.Metadata.Labels[api.LabelBudget])
}

func TestEventsAreSortedByName(t *testing.T) {
	at := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	evs := controller.Events(controller.Owner{Name: "b", Namespace: "ns"},
		[]evaluate.Announcement{{Slug: "z", At: at}, {Slug: "a", At: at}})
	assert.Equal(t, "b.a.1795935600", evs[0].Metadata.Name)
	assert.Equal(t, "b.z.1795935600", evs[1].Metadata.Name)
	assert.Equal(t, int32(1), evs[0].Count)
	assert.Equal(t, "llmbudget", evs[0].Source.Component)
}
