// Package finalizer ports the kube-rs finalizer pattern (kube-runtime/src/finalizer.rs) to Metacontroller
// hooks. Metacontroller adds and removes the finalizer string, so what remains is mapping the request's
// `finalizing` flag onto one of two events, Apply or Cleanup, and reporting `finalized` when Cleanup is done.
//
// # Expected flow
//
//  1. On create, Metacontroller adds its finalizer and calls the sync hook, which runs Apply; every later change
//     or resync runs Apply again.
//  2. On delete (for a decorator, also when the object stops matching the selector), it calls the finalize hook,
//     which runs Cleanup; while Cleanup answers Finalized=false, it calls again after its next observation.
//  3. Once Cleanup answers Finalized=true, Metacontroller removes its finalizer and the deletion completes.
//
// # Guarantees
//
//   - Exactly one of Apply or Cleanup runs for a request.
//   - Apply never reports Finalized: only Cleanup can end an object's life, so a finalize hook wired to the
//     sync URL by mistake cannot release it early.
//
// # Assumptions
//
//   - Apply and Cleanup are idempotent, pure functions of request and clock; Cleanup may rerun for one deletion.
//   - Cleanup tolerates Apply never having run: the object may be deleted before its first sync, or carry a
//     status this version never wrote.
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

// Action is the event a reconciler receives.
type Action int

const (
	Apply   Action = iota // brings the world in line with the object
	Cleanup               // tears down what Apply set up before the object goes
)

// Event is what a reconciler is handed: the action and the object.
type Event[T any] struct {
	Action Action
	Object T
}

// Requeue says when Metacontroller should call again without a change.
type Requeue struct{ after time.Duration }

// AwaitChange waits for a watched change (see Caveats).
func AwaitChange() Requeue { return Requeue{} }

// RequeueAfter asks for another call after d, rounded up to whole seconds.
func RequeueAfter(d time.Duration) Requeue { return Requeue{after: d} }

// Seconds is the resyncAfterSeconds to send; 0 means await a change.
func (r Requeue) Seconds() float64 { return float64((max(r.after, 0) + time.Second - 1) / time.Second) }

// Result is a reconciler's answer.
type Result[R any] struct {
	Response  R
	Requeue   Requeue
	Finalized bool
}

// Tail is the end of the hook's answer that the pattern decides.
func (r Result[R]) Tail() hookwire.Tail {
	return hookwire.Tail{ResyncAfterSeconds: r.Requeue.Seconds(), Finalized: r.Finalized}
}

// Reconcile runs fn with Apply or Cleanup, as Metacontroller's finalizing flag says.
func Reconcile[T, R any](obj T, finalizing bool, fn func(Event[T]) Result[R]) Result[R] {
	if finalizing { // the object is going: tear down, and say when done
		return fn(Event[T]{Action: Cleanup, Object: obj})
	}
	res := fn(Event[T]{Action: Apply, Object: obj}) // the object is wanted: never release it
	res.Finalized = false
	return res
}
