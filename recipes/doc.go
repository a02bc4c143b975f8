// Package recipes is the contract every lock in zkrecipes keeps, on every
// backend: the Locker and Lease interfaces, their sentinel errors, WithLock,
// and the few helpers an implementation of the contract needs (CheckContext,
// NotAcquired, DriftMargin). It imports only the standard library, so that a
// lock on Redis or memcached satisfies it without linking ZooKeeper. Beside
// it, also backend-neutral: recipes/locktest, the contract suite every lock
// runs, and recipes/multilock (all of several locks, any backends mixed).
//
// The locks themselves live elsewhere: mutex, rwlock and exclusive
// (ZooKeeper, with znode for what only ZooKeeper-backed leases add: the
// lock node, a guarded write, revocation, the queue), leader (leader
// election) and semaphore (semaphores, a shared count, the semaphore
// mutex), and compat (Redis, Redlock, memcached).
//
// # The contract
//
// A Locker is a lock on one named resource. Acquire waits for it, honouring
// its context; TryAcquire returns at once with an error that is ErrLocked when
// someone else holds it. Both return a Lease, never (nil, nil).
//
// A Lease is one holding of the lock. Its Context is cancelled as soon as the
// lock is released or can no longer be trusted — the session it was taken
// under was lost or suspended, a TTL lapsed — and
// context.Cause of that context (and Lease.Err) says which. Code doing work
// under a lock should do that work with the lease's context, so that it stops
// when the lock is gone: it is NOT safe to assume the lock is still held just
// because Release has not been called.
//
// Token is a fencing token that strictly increases between successive holders
// of one lock; pass it to the resource you protect so that it can refuse a
// write from a holder that has lost the lock (see session.FencedResource).
// Its ok result says whether the backend has one at all: a lock over
// independent servers (Redlock) has none, and says so rather than give a
// number that would not order its holders.
//
// The package recipes/locktest runs the same scenarios against any Locker.
//
// # Seeing the locks
//
// Trace is a set of optional hooks, in the style of net/http/httptrace,
// that every lock of the module calls: acquisitions (start, found held,
// done, with the outcome and the time waited), a holding's end (held for
// how long, why, and for a loss the told-first margin: how long before the
// server could let the lock go the holder was told), renewals, ZooKeeper
// connection states and attempts, leadership. Attach one per call with
// WithTrace, or per client or lock with session.WithTrace and the compat
// locks' WithTrace options. With none set, nothing is allocated.
// recipes/tracelog logs what matters through log/slog; the module
// contrib/otelrecipes makes OpenTelemetry metrics and spans of it.
// docs/metrics.md lists every report, metric and span.
package recipes

// # A backend of your own
//
// A lock outside this module implements Locker and Lease itself; nothing
// else is required of it, and MultiLock and WithLock take it as they take
// the module's own. To keep the contract as the module's locks do:
//
//   - Begin Acquire and TryAcquire with CheckContext, and when ctx ends
//     while waiting return NotAcquired(ctx), after removing whatever the
//     attempt left on the server; TryAcquire fails with an error that is
//     ErrLocked when someone else holds the lock.
//   - End the lease's Context, with a cause that is ErrLockLost, before the
//     server may let the lock go: a TTL lock counts its TTL from the send
//     time of the request that set it, less DriftMargin(ttl).
//   - Re-entry, if the lock is reentrant, goes through the lease's context:
//     store the holding under a key of the Locker (a context value), and
//     give a second lease of it to an Acquire whose ctx carries it; a lock
//     that is not reentrant fails such an Acquire with ErrNotReentrant.
//   - Return ok = false from Token when the backend has no fencing token.
//   - Run recipes/locktest's Run on it, against the real server.
