// Package multilock holds several locks as one: Curator's
// InterProcessMultiLock, over any recipes.Locker values, of any backends
// mixed (a ZooKeeper mutex, a Redis lock, a memcached lock, Redlock, even
// another MultiLock). A MultiLock is itself a recipes.Locker, and runs the
// contract suite (recipes/locktest).
//
//	m, err := multilock.New(accountA, accountB) // no I/O
//	lease, err := m.Acquire(ctx)                 // both, or neither
//	defer lease.Release(ctx)
//
// # All or none, in one order
//
// Acquire takes the members one after another, in the order New was given
// them, and waits for each in turn, all within the one ctx it is given (not
// a full timeout per member, as Curator's acquire(time, unit) gives). If
// anything goes wrong before it holds them all — ctx ends, a member's
// Acquire fails, or the lease of a member it already holds ends — it
// releases what it took, in reverse order, and returns an error that is
// recipes.ErrNotAcquired (and ctx's error when ctx ended), joined with the
// member's error (a *MemberError that says which member). TryAcquire does
// the same with each member's TryAcquire; when a member is held by someone
// else its error is recipes.ErrLocked.
//
// The order is the deadlock rule: every process that takes overlapping sets
// of these locks must take them in the same order. MultiLocks listing the
// same locks in the same order never deadlock; one that lists A, B and
// another that lists B, A can each take one and wait for the other until
// their contexts end. The locks of zkrecipes have no identity that compares
// across processes and backends (a ZooKeeper path and a Redis key are not
// ordered against each other), so the package does not sort them: pick one
// global order (say, by resource name) and build every MultiLock with it.
// A deadline on ctx turns a mistake into a timeout rather than a hang.
// List each lock once: New refuses the same Locker twice, but cannot see
// two Lockers on the same resource, and the second of those would wait for
// the first until ctx ends.
//
// # The lease
//
// The lease of a MultiLock is a *Lease. It holds while every member's lease
// holds: its Context ends as soon as any member's lease context ends, with
// a cause that is recipes.ErrLockLost, in which errors.As finds a
// *MemberError naming the member and carrying that member's own cause.
// What ends a member's lease is that member's business, as its package
// documents: for a ZooKeeper lock, its session being suspended or lost (at
// suspension under the session's default policy, before the server can
// expire it; a lock node deleted by a third party is not watched for, and
// shows only at Release, as recipes.ErrLockLost); for a Redis, memcached or
// Redlock lock, its TTL lapsing unrenewed (less a margin), a renewal
// finding the lock gone or someone else's, or a renewal error.
// When one member is lost the MultiLock releases the others at once, in
// reverse order, in the background (bounded by CleanupTimeout): they are no
// use without it, and others may be waiting for them.
//
// Release releases every member in reverse order and returns their errors
// joined (errors.Join), each a *MemberError. When a member had been lost
// before Release, it returns an error that is recipes.ErrLockLost (the work
// done under the lease may not have been exclusive), after waiting, bounded
// by its ctx, for the background release of the others. A second Release is
// recipes.ErrNotHeld.
//
// # Tokens
//
// A MultiLock has no fencing token of its own: Lease.Token returns (0,
// false). Each member guards its own resource, and each resource must be
// fenced with its own lock's token: no single number orders the holders of
// every member (a holder of one member alone takes part in that member's
// order but not the others'). Lease.Leases, or MultiLock.HeldLeases from
// inside recipes.WithLock, gives the members' leases, in the MultiLock's
// order, for their tokens (or, for a ZooKeeper member, its znode.Lease
// GuardedMulti). A member with no token of its own (Redlock) says so there.
//
// # Re-entry
//
// A MultiLock is reentrant, whatever its members are, and re-entry follows
// the call chain through the lease's context, as for the reentrant locks of
// zkrecipes. Acquire (or TryAcquire) with a context from a live lease of the
// same MultiLock re-enters it at once, with no call to any member, and
// needs its own Release; the members are released at the last one.
//
// The lease's context also carries every member's holding, so that code
// running under it can take a member again on its own, or in another
// MultiLock: a reentrant member (the ZooKeeper mutex, the Redis, memcached
// and Redlock locks) re-enters at once, and a member that is not reentrant
// (exclusive.Lock) fails at once with recipes.ErrNotReentrant. The same
// holds when Acquire is called with a context that already holds a member
// (say, the lease of that member alone): that member re-enters, or fails
// fast; it never waits for itself. Goroutines sharing one MultiLock with
// contexts of their own exclude each other, as with any lock.
//
// # Tracing
//
// A MultiLock reports to the recipes.Trace of the context of Acquire or
// TryAcquire (recipes.WithTrace; it has no option of its own), as
// recipes.LockID{Backend: "multi", Kind: "multilock", Name: its members'
// names joined by ", "}: AcquireStart and AcquireDone, AcquireQueued when
// a member found its lock held, and LeaseEnd once per holding, at its last
// Release or when a member is lost (the cause is that member's, as
// recipes.EndCauseOf classifies it). The members report their own
// acquisitions and leases too, to that trace and to their own.
package multilock
