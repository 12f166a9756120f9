package finalizer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/llmbudget/llmbudget/internal/finalizer"
	"github.com/llmbudget/llmbudget/internal/hookwire"
)

func TestFinalizingSelectsTheEvent(t *testing.T) {
	cases := map[string]struct {
		finalizing bool
		want       finalizer.Action
	}{
		"a live object is applied":              {false, finalizer.Apply},
		"an object being deleted is cleaned up": {true, finalizer.Cleanup},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []finalizer.Action
			finalizer.Reconcile("obj", tc.finalizing, func(ev finalizer.Event[string]) finalizer.Result[int] {
				got = append(got, ev.Action)
				assert.Equal(t, "obj", ev.Object)
				return finalizer.Result[int]{}
			})
			assert.Equal(t, []finalizer.Action{tc.want}, got, "exactly one event")
		})
	}
}

func TestApplyCanNeverReleaseTheObject(t *testing.T) {
	res := finalizer.Reconcile(1, false, func(finalizer.Event[int]) finalizer.Result[string] {
		return finalizer.Result[string]{Response: "x", Finalized: true}
	})
	assert.False(t, res.Finalized)
	assert.Equal(t, "x", res.Response)
}

func TestCleanupReportsFinalized(t *testing.T) {
	res := finalizer.Reconcile(1, true, func(finalizer.Event[int]) finalizer.Result[string] {
		return finalizer.Result[string]{Finalized: true}
	})
	assert.True(t, res.Finalized)
}

func TestTheTailCarriesRequeueAndFinalized(t *testing.T) {
	res := finalizer.Result[int]{Requeue: finalizer.RequeueAfter(90 * time.Second), Finalized: true}
	assert.Equal(t, hookwire.Tail{ResyncAfterSeconds: 90, Finalized: true}, res.Tail())
}

func TestRequeueSecondsRoundUp(t *testing.T) {
	assert.Equal(t, 0.0, finalizer.AwaitChange().Seconds())
	assert.Equal(t, 1.0, finalizer.RequeueAfter(time.Millisecond).Seconds())
	assert.Equal(t, 30.0, finalizer.RequeueAfter(29500*time.Millisecond).Seconds())
	assert.Equal(t, 3600.0, finalizer.RequeueAfter(time.Hour).Seconds())
}
