package metacontroller_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/llmbudget/llmbudget/internal/metacontroller"
)

// recorder is a controller whose halves record that they ran.
type recorder struct {
	ran     []string
	remains bool
}

func (r *recorder) controller() metacontroller.Finalizer[string] {
	return metacontroller.Finalizer[string]{
		Apply: func() (string, metacontroller.Action) {
			r.ran = append(r.ran, "apply")
			return "applied", metacontroller.RequeueAfter(time.Minute)
		},
		Cleanup: func() string {
			r.ran = append(r.ran, "cleanup")
			return "cleaned"
		},
		Remains: func() bool { return r.remains },
		Retry:   5 * time.Second,
	}
}

func TestFinalizingSelectsTheEvent(t *testing.T) {
	assert.Equal(t, metacontroller.Apply, metacontroller.EventOf(false))
	assert.Equal(t, metacontroller.Cleanup, metacontroller.EventOf(true))
}

func TestReconcile(t *testing.T) {
	cases := map[string]struct {
		event     metacontroller.Event
		remains   bool
		ran       string
		response  string
		seconds   float64
		finalized bool
	}{
		"apply answers with its own action": {
			event: metacontroller.Apply, ran: "apply", response: "applied", seconds: 60,
		},
		"apply ignores what remains: it never releases the object": {
			event: metacontroller.Apply, remains: true, ran: "apply", response: "applied", seconds: 60,
		},
		"cleanup waits, and asks again, while something of ours remains": {
			event: metacontroller.Cleanup, remains: true, ran: "cleanup", response: "cleaned", seconds: 5,
		},
		"cleanup releases the object once nothing of ours remains": {
			event: metacontroller.Cleanup, ran: "cleanup", response: "cleaned", finalized: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &recorder{remains: tc.remains}
			res := r.controller().Reconcile(tc.event)
			assert.Equal(t, []string{tc.ran}, r.ran, "exactly one half runs")
			assert.Equal(t, tc.response, res.Response)
			assert.Equal(t, metacontroller.Tail{ResyncAfterSeconds: tc.seconds, Finalized: tc.finalized}, res.Tail())
		})
	}
}

func TestRequeueSecondsRoundUp(t *testing.T) {
	assert.Equal(t, 0.0, metacontroller.AwaitChange().Seconds())
	assert.Equal(t, 1.0, metacontroller.RequeueAfter(time.Millisecond).Seconds())
	assert.Equal(t, 30.0, metacontroller.RequeueAfter(29500*time.Millisecond).Seconds())
	assert.Equal(t, 3600.0, metacontroller.RequeueAfter(time.Hour).Seconds())
}
