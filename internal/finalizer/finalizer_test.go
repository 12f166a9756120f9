package finalizer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/llmbudget/llmbudget/internal/finalizer"
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
			_, err := finalizer.Reconcile("obj", tc.finalizing, func(ev finalizer.Event[string]) (finalizer.Result[int], error) {
				got = append(got, ev.Action)
				assert.Equal(t, "obj", ev.Object)
				return finalizer.Result[int]{}, nil
			})
			require.NoError(t, err)
			assert.Equal(t, []finalizer.Action{tc.want}, got, "exactly one event")
		})
	}
}

func TestApplyCanNeverReleaseTheObject(t *testing.T) {
	res, err := finalizer.Reconcile(1, false, func(finalizer.Event[int]) (finalizer.Result[string], error) {
		return finalizer.Result[string]{Response: "x", Finalized: true}, nil
	})
	require.NoError(t, err)
	assert.False(t, res.Finalized)
	assert.Equal(t, "x", res.Response)
}

func TestCleanupReportsFinalized(t *testing.T) {
	res, err := finalizer.Reconcile(1, true, func(finalizer.Event[int]) (finalizer.Result[string], error) {
		return finalizer.Result[string]{Finalized: true}, nil
	})
	require.NoError(t, err)
	assert.True(t, res.Finalized)
}

func TestErrorsNameTheStepAndWrapTheCause(t *testing.T) {
	cause := errors.New("boom")
	for finalizing, step := range map[bool]finalizer.Step{false: finalizer.StepApply, true: finalizer.StepCleanup} {
		_, err := finalizer.Reconcile(1, finalizing, func(finalizer.Event[int]) (finalizer.Result[int], error) {
			return finalizer.Result[int]{}, cause
		})
		var fe *finalizer.Error
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, step, fe.Step)
		assert.ErrorIs(t, err, cause)
		assert.Equal(t, string(step)+" failed: boom", err.Error())
	}
}

func TestRequeueSecondsRoundUp(t *testing.T) {
	assert.Equal(t, 0.0, finalizer.AwaitChange().Seconds())
	assert.Equal(t, 1.0, finalizer.RequeueAfter(time.Millisecond).Seconds())
	assert.Equal(t, 30.0, finalizer.RequeueAfter(29500*time.Millisecond).Seconds())
	assert.Equal(t, 3600.0, finalizer.RequeueAfter(time.Hour).Seconds())
}
