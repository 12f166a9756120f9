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
//   - Errors name the step that failed (apply or cleanup) and wrap the cause.
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
// Reconcile returns an *Error whose Step is StepApply or StepCleanup.
package finalizer

import (
	"fmt"
	"time"
)

// Action is the event a reconciler receives.
type Action int

const (
	// Apply brings the world in line with the object.
	Apply Action = iota
	// Cleanup tears down what Apply set up before the object goes.
	Cleanup
)

func (a Action) String() string {
	switch a {
	case Apply:
		return "apply"
	case Cleanup:
		return "cleanup"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

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
	whole := (r.after + time.Second - 1) / time.Second
	return float64(whole)
}

// Result is a reconciler's answer.
type Result[R any] struct {
	Response  R
	Requeue   Requeue
	Finalized bool
}

// Step names what failed.
type Step string

// Steps of the pattern.
const (
	StepApply   Step = "apply"
	StepCleanup Step = "cleanup"
)

// Error is a failed Apply or Cleanup.
type Error struct {
	Step Step
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("%s failed: %v", e.Step, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// state is where an object is in its life as far as the hook can tell.
type state int

const (
	live     state = iota // finalizing=false: keep reconciling
	deleting              // finalizing=true: tear down
)

// Reconcile runs fn with Apply or Cleanup according to Metacontroller's
// finalizing flag.
func Reconcile[T, R any](obj T, finalizing bool, fn func(Event[T]) (Result[R], error)) (Result[R], error) {
	st := live
	if finalizing {
		st = deleting
	}
	switch st {
	case live: // the object is wanted: converge, never release it
		res, err := fn(Event[T]{Action: Apply, Object: obj})
		if err != nil {
			return res, &Error{Step: StepApply, Err: err}
		}
		res.Finalized = false
		return res, nil
	case deleting: // the object is going: tear down, and say when done
		res, err := fn(Event[T]{Action: Cleanup, Object: obj})
		if err != nil {
			return Result[R]{}, &Error{Step: StepCleanup, Err: err}
		}
		return res, nil
	default: // a state added without a branch: refuse rather than guess
		return Result[R]{}, &Error{Step: StepApply, Err: fmt.Errorf("unknown state %d", st)}
	}
}
