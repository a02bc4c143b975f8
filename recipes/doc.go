// Package recipes is the contract every lock of zkrecipes keeps, on every
// backend: Locker, Lease, their sentinel errors and WithLock. It imports
// only the standard library, so a lock on Redis or SQL satisfies it
// without linking ZooKeeper.
//
// A Locker is a lock on one named resource. Acquire waits for it,
// honouring its context; TryAcquire returns at once, with an error that is
// ErrLocked when someone else holds it. Both return a Lease, never
// (nil, nil).
//
// A Lease is one holding. Its Context is cancelled, with a cause (also
// Lease.Err), as soon as the lock is released or can no longer be trusted
// (the session was lost or suspended, a TTL lapsed), and before the server
// can grant the lock to anyone else. Do the work under the lease's
// context: a lease that has not been released is not proof that the lock
// is held.
//
// Token is a fencing token that strictly increases between successive
// holders; pass it to the resource you protect so it can refuse a stale
// holder's write (see session.FencedResource). Its ok result is false
// where the backend has none (Redlock).
//
// The locks live elsewhere: mutex, rwlock, exclusive, leader and semaphore
// on ZooKeeper, compat/... on Redis, memcached and SQL. recipes/locktest
// is the contract suite every lock runs, recipes/multilock holds several
// locks of any backends at once, recipes/locktrace reports what locks do.
//
// # A backend of your own
//
// A lock outside this module implements Locker and Lease; MultiLock and
// WithLock take it as they take the module's own. To keep the contract:
//
//   - Begin Acquire and TryAcquire with CheckContext; when ctx ends while
//     waiting, remove what the attempt left on the server and return
//     NotAcquired(ctx).
//   - End the lease's Context, with a cause that is ErrLockLost, before
//     the server may let the lock go: count a TTL from the send time of
//     the request that set it, less DriftMargin(ttl).
//   - Re-entry goes through the lease's context (a context value keyed by
//     the Locker); a lock that is not reentrant fails it with
//     ErrNotReentrant.
//   - Run recipes/locktest's Run on it, against the real server.
package recipes
