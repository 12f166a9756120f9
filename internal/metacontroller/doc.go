// Package metacontroller is the generic half of a Metacontroller hook service: the v2 hook wire types of each
// controller kind (composite and decorator sync and finalize, customize), the finalizer reconcile, and an HTTP
// handler that serves a CompositeHook or DecoratorHook: guards and decodes each request within bounds, calls the
// hook and encodes its answer. It knows no resource of its own; the controllers that use it hold the domain.
//
// The JSON tags are the contract. Requests model only what the hooks read; responses carry only fields
// Metacontroller knows, because it decodes v2 responses strictly: one unknown field fails the call.
//
// Every hook answer is 200 with a response Metacontroller decodes strictly, or a 4xx with a one-line reason (shown
// to users in a SyncError Event) when the request is at fault (a RequestError); a hook's own failure, a panic
// included, is a 500, not a crashed process. Memory stays bounded however many callers: past
// Config.MaxInFlightBytes, a call is answered 429 with Retry-After. A body counts only the bytes that have arrived
// (at most twice them once a large body is read into one buffer), so callers that send slowly cannot starve the
// others. The routes of Config.Lists, whose requests grow with the cluster, have a body limit and an in-flight bound
// of their own, so a cluster-sized call neither needs the ordinary limit raised nor crowds out the ordinary calls.
// A request is held once: the objects of its maps are slices of its body (Raw), and a long answer is written a
// child at a time.
//
// # The finalizer
//
// Finalizer ports kube-rs's finalizer pattern (kube-runtime/src/finalizer.rs) to Metacontroller hooks,
// in kube-rs's words: the controller's logic receives an Event, Apply or Cleanup, and answers with an Action,
// requeue after a duration or await a change. Metacontroller adds and removes the finalizer string itself, so
// what is left of the pattern is the rule for `finalized`, and Finalizer.Reconcile is the one place that holds it.
//
// # Finalizer: expected flow
//
//  1. On create, Metacontroller adds its finalizer and calls the sync hook: Apply. Every later change or resync
//     runs Apply again.
//  2. On delete, it calls the finalize hook (finalizing is true): Cleanup. Cleanup desires none of the
//     controller's objects, so Metacontroller deletes them; while any of them is still observed, the answer is
//     not finalized and asks to be called again after the controller's retry delay.
//  3. Once Cleanup runs with nothing of the controller's left, the answer is finalized; Metacontroller removes
//     its finalizer and the deletion completes.
//
// # Finalizer: guarantees
//
//   - Exactly one of Apply or Cleanup runs for a request, chosen by the request's finalizing flag alone.
//   - Apply never reports finalized: only Cleanup can end an object's life, so a finalize hook wired to the sync
//     URL by mistake cannot release it early.
//   - Cleanup reports finalized only when the controller observes nothing of its own left, and then asks for
//     no requeue; the controller cannot decide either by itself.
//
// # Finalizer: assumptions
//
//   - Apply and Cleanup are idempotent, pure functions of the request and the clock; Cleanup may run many times
//     for one deletion.
//   - Cleanup tolerates Apply never having run: the object may be deleted before its first sync, or carry a
//     status this version never wrote.
//   - Remains is a function of the request alone: what Metacontroller observed of the controller's objects.
//
// # Finalizer: caveats
//
//   - While the hook service is down, deletion waits. Removing the finalizer by hand (kubectl patch ...
//     --type=json -p '[{"op":"remove","path":"/metadata/finalizers"}]') skips Cleanup.
//   - AwaitChange relies on watches alone: a change Metacontroller does not watch (the clock) needs RequeueAfter.
//
// # Finalizer: errors
//
// Reconcile adds none, and pure Apply and Cleanup have none to return; a request that cannot be answered at
// all is refused before Reconcile (a RequestError).
package metacontroller
