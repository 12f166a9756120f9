package metacontroller

import "time"

// Event is what the controller is asked to do, kube-rs's Event.
type Event int

// The two events of kube-rs's finalizer.
const (
	Apply   Event = iota // bring the world in line with the object
	Cleanup              // tear down what Apply set up, before the object goes
)

// EventOf is the event of a request, from Metacontroller's finalizing flag.
func EventOf(finalizing bool) Event {
	if finalizing {
		return Cleanup
	}
	return Apply
}

// Action says when Metacontroller should call again without a change, kube-rs's Action.
type Action struct{ after time.Duration }

// AwaitChange waits for a watched change (see Caveats).
func AwaitChange() Action { return Action{} }

// RequeueAfter asks for another call after d, rounded up to whole seconds.
func RequeueAfter(d time.Duration) Action { return Action{after: d} }

// Seconds is the resyncAfterSeconds to send; 0 means await a change.
func (a Action) Seconds() float64 { return float64((max(a.after, 0) + time.Second - 1) / time.Second) }

// Finalizer is one controller's half of the pattern: what Apply and Cleanup answer, and what of its own
// objects is still observed.
type Finalizer[R any] struct {
	Apply func() (R, Action)
	// Cleanup answers with none of the controller's objects desired.
	Cleanup func() R
	// Remains reports whether anything Apply set up is still observed.
	Remains func() bool
	// Retry is how soon Cleanup is called again while something remains; Metacontroller usually calls sooner,
	// when it observes the deletion. Zero waits for that change.
	Retry time.Duration
}

// Result is the answer to one request.
type Result[R any] struct {
	Response  R
	Action    Action
	Finalized bool
}

// Tail is the end of the hook's answer that the pattern decides.
func (r Result[R]) Tail() Tail {
	return Tail{ResyncAfterSeconds: r.Action.Seconds(), Finalized: r.Finalized}
}

// Reconcile runs Apply or Cleanup for ev and decides, in the one place that does, finalized and Cleanup's requeue.
func (c Finalizer[R]) Reconcile(ev Event) Result[R] {
	switch {
	case ev == Apply: // the object is wanted: never release it
		resp, action := c.Apply()
		return Result[R]{Response: resp, Action: action}
	case c.Remains(): // going, but not yet clean: look again
		return Result[R]{Response: c.Cleanup(), Action: RequeueAfter(c.Retry)}
	default: // going, and nothing of ours is left: let it go
		return Result[R]{Response: c.Cleanup(), Action: AwaitChange(), Finalized: true}
	}
}
