// Package recipes holds what every lock in zkrecipes has in common, on every
// backend: the Locker and Lease contract, its sentinel errors, WithLock and
// the helpers that implementations share. It imports only the standard
// library, so that a lock on Redis or Memcached satisfies it without linking
// ZooKeeper. The locks themselves are in mutex, rwlock and exclusive
// (ZooKeeper), and compat (Redis, Memcached); recipes/locktest is the
// contract suite every one of them runs, and znode has what only
// ZooKeeper-backed leases add (the lock node, a guarded write, revocation,
// the queue). The higher recipes live beside them: leader (leader
// election), semaphore (semaphores, a shared count, the semaphore
// mutex) and recipes/multilock (all of several locks, any backends mixed).
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
package recipes
