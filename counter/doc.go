// Package counter is Curator's recipes.atomic for Go: counters and values
// changed atomically in one ZooKeeper node that Go and Java processes
// share. Each type is the Curator class of the same bytes:
//
//	counter.Long   DistributedAtomicLong     8 bytes, big-endian
//	counter.Int    DistributedAtomicInteger  4 bytes, big-endian (a shared.Count's bytes)
//	counter.Value  DistributedAtomicValue    the bytes as given
//
// An absent or empty node reads as 0 (as nil bytes for a Value); the first
// write creates it (with container parents, as Curator).
//
//	ids, err := counter.NewLong(client, "/ids/orders", counter.WithLock("/ids/orders-lock"))
//	r, err := ids.Increment(ctx) // r.Pre, r.Post; err when it did not apply
//
// How a change is made (Curator's): optimistically first, a getData with
// its version and a setData at that version (or a create when the node is
// absent), tried again under the retry policy (WithRetry) while other
// writers win; then, with a lock path (WithLock, Curator's
// PromotedToLock), the same under an InterProcessMutex on that path,
// whose nodes are Curator's, so Go and Java writers queue together there.
//
// Every call that changes the node returns the value before and after
// (Result) and an error when the change did not apply: where Curator
// returns an AtomicValue whose succeeded() is easy to forget, the error
// here is ErrNotApplied (other writers won every try, or CompareAndSet
// found another value) or ErrOutcomeUnknown.
//
// # Session loss
//
// A write whose reply is lost (the connection dropped, the session
// expired, ctx ended while it was out) may or may not have been applied:
// the call returns ErrOutcomeUnknown with the Result it meant to write,
// and does not try again, since a retry of an increment that did apply
// would apply it twice (as Curator's retry loop can). Read the value to
// know. A failure before the write was sent (the read, the lock) is an
// error of its own and nothing was written. Under the lock, the write runs
// with the lease's context: a lease that ends with its session ends the
// write too, with ErrOutcomeUnknown if it was out.
package counter
