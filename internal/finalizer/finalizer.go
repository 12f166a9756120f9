// Package finalizer ports kube-rs's finalizer pattern (kube-runtime/src/finalizer.rs) to Metacontroller hooks,
// in kube-rs's words: the controller's logic receives an Event, Apply or Cleanup, and answers with an Action,
// requeue after a duration or await a change. Metacontroller adds and removes the finalizer string itself, so
// what is left of the pattern is the rule for `finalized`, and this package is the one place that holds it.
//
// # Expected flow
//
//  1. On create, Metacontroller adds its finalizer and calls the sync hook: Apply. Every later change or resync
//     runs Apply again.
//  2. On delete, it calls the finalize hook (finalizing is true): Cleanup. Cleanup desires none of the
//     controller's objects, so Metacontroller deletes them; while any of them is still observed, the answer is
//     not finalized and asks to be called again after the controller's retry delay.
//  3. Once Cleanup runs with nothing of the controller's left, the answer is finalized; Metacontroller removes
//     its finalizer and the deletion completes.
//
// # Guarantees
//
//   - Exactly one of Apply or Cleanup runs for a request, chosen by the request's finalizing flag alone.
//   - Apply never reports finalized: only Cleanup can end an object's life, so a finalize hook wired to the sync
//     URL by mistake cannot release it early.
//   - Cleanup reports finalized only when the controller observes nothing of its own left, and then asks for
//     no requeue; the controller cannot decide either by itself.
//
// # Assumptions
//
//   - Apply and Cleanup are idempotent, pure functions of the request and the clock; Cleanup may run many times
//     for one deletion.
//   - Cleanup tolerates Apply never having run: the object may be deleted before its first sync, or carry a
//     status this version never wrote.
//   - Remains is a function of the request alone: what Metacontroller observed of the controller's objects.
//
// # Caveats
//
//   - While the hook service is down, deletion waits. Removing the finalizer by hand (kubectl patch ...
//     --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]') skips Cleanup.
//   - AwaitChange relies on watches alone: a change Metacontroller does not watch (the clock) needs RequeueAfter.
//
// # Errors
//
// Reconcile adds none, and pure Apply and Cleanup have none to return; a request that cannot be answered at
// all is refused before Reconcile (a hookwire.RequestError).
package finalizer

import (
	"time"

	"github.com/llmbudget/llmbudget/internal/hookwire"
)

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

// Controller is one controller's half of the pattern: what Apply and Cleanup answer, and what of its own
// objects is still observed.
type Controller[R any] struct {
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
func (r Result[R]) Tail() hookwire.Tail {
	return hookwire.Tail{ResyncAfterSeconds: r.Action.Seconds(), Finalized: r.Finalized}
}

// Reconcile runs Apply or Cleanup for ev and decides, in the one place that does, finalized and Cleanup's requeue.
func (c Controller[R]) Reconcile(ev Event) Result[R] {
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
