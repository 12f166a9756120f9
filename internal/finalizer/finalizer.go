// Package finalizer ports the kube-rs finalizer pattern
// (kube-runtime/src/finalizer.rs) to Metacontroller hooks.
//
// The caller's logic receives exactly one of two events, Apply or Cleanup, and
// never handles finalizer bookkeeping: with Metacontroller that bookkeeping
// (adding and removing the finalizer string on the object) is Metacontroller's.
// What remains for a hook is mapping the request's `finalizing` flag onto the
// event and reporting `finalized` once Cleanup is complete.
//
// # Expected flow
//
//  1. A user creates an object; Metacontroller adds its finalizer and calls the
//     sync hook with finalizing=false. Reconcile runs Apply.
//  2. Every later change or resync calls sync again: Apply again. Apply must be
//     idempotent, a pure function of the request and the clock.
//  3. The user deletes the object (or, for a decorator, the object stops
//     matching the selector). Metacontroller calls the finalize hook with
//     finalizing=true. Reconcile runs Cleanup.
//  4. Cleanup answers Finalized=false while it still observes something it must
//     tear down; Metacontroller calls again after its next observation.
//  5. Cleanup answers Finalized=true; Metacontroller removes its finalizer and
//     the API server completes the deletion.
//
// # Guarantees
//
//   - Exactly one of Apply or Cleanup runs for a request.
//   - A Result from Apply never reports Finalized: only Cleanup can end an
//     object's life, so a finalize hook wired to the sync URL by mistake
//     cannot release an object early.
//
// # Assumptions
//
//   - Cleanup must tolerate Apply never having run: the object may be deleted
//     before its first sync, or carry a status this version never wrote.
//   - Cleanup may run many times for one deletion and must be idempotent.
//
// # Caveats
//
//   - While the hook service is down, deleting an object waits: the finalizer
//     stays until a finalize call answers Finalized=true. An operator can
//     remove the finalizer by hand (kubectl patch ... --type=json -p
//     '[{"op":"remove","path":"/metadata/finalizers"}]') at the price of
//     skipping Cleanup.
//   - Requeue choices are named: RequeueAfter asks Metacontroller to call
//     again after a duration; AwaitChange relies on watches alone, and a change
//     Metacontroller does not watch (such as the clock) is then missed.
//
// # Errors
//
// Reconcile adds none: with Metacontroller, Apply and Cleanup are pure
// functions of the request and the clock, and a request that cannot be
// answered at all is refused before Reconcile (hookwire.ErrBadRequest).
package finalizer

import (
	"time"

	"github.com/llmbudget/llmbudget/internal/hookwire"
)

// Action is the event a reconciler receives.
type Action int

const (
	// Apply brings the world in line with the object.
	Apply Action = iota
	// Cleanup tears down what Apply set up before the object goes.
	Cleanup
)

// Event is what a reconciler is handed: the action and the object.
type Event[T any] struct {
	Action Action
	Object T
}

// Requeue says when Metacontroller should call again without a change.
type Requeue struct {
	after time.Duration
}

// AwaitChange waits for a watched change; nothing time-based is missed only if
// the result does not depend on the clock.
func AwaitChange() Requeue { return Requeue{} }

// RequeueAfter asks for another call after d (rounded up to whole seconds by
// Seconds).
func RequeueAfter(d time.Duration) Requeue { return Requeue{after: d} }

// Seconds is the resyncAfterSeconds to send; 0 means await a change.
func (r Requeue) Seconds() float64 {
	if r.after <= 0 {
		return 0
	}
	return float64((r.after + time.Second - 1) / time.Second)
}

// Result is a reconciler's answer.
type Result[R any] struct {
	Response  R
	Requeue   Requeue
	Finalized bool
}

// Tail is the end of the hook's answer that the pattern decides: when to
// call again, and whether the object may go.
func (r Result[R]) Tail() hookwire.Tail {
	return hookwire.Tail{ResyncAfterSeconds: r.Requeue.Seconds(), Finalized: r.Finalized}
}

// Reconcile runs fn with Apply or Cleanup according to Metacontroller's
// finalizing flag.
func Reconcile[T, R any](obj T, finalizing bool, fn func(Event[T]) Result[R]) Result[R] {
	if finalizing { // the object is going: tear down, and say when done
		return fn(Event[T]{Action: Cleanup, Object: obj})
	}
	res := fn(Event[T]{Action: Apply, Object: obj}) // the object is wanted: never release it
	res.Finalized = false
	return res
}
