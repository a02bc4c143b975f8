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
// Acquire takes the members one after another, in the order New was given
// them, all within the one ctx. If anything goes wrong before it holds them
// all (ctx ends, a member's Acquire fails, a member's lease ends), it
// releases what it took, in reverse order, and returns an error that is
// recipes.ErrNotAcquired joined with the member's (a *MemberError naming
// it); TryAcquire does the same with each member's TryAcquire.
//
// The order is the deadlock rule: every process that takes overlapping
// sets of these locks must take them in the same order. The package cannot
// sort them (a ZooKeeper path and a Redis key are not ordered against each
// other): pick one global order, say by resource name, and build every
// MultiLock with it. List each lock once.
//
// The lease holds while every member's lease holds: its Context ends, with
// a cause that is recipes.ErrLockLost (errors.As finds the *MemberError),
// as soon as any member's does, by that member's own rules (its package
// says when), and the others are released at once in the background.
// Release releases every member in reverse order and joins their errors;
// after a member was lost it returns recipes.ErrLockLost.
//
// A MultiLock has no fencing token of its own (Token returns (0, false)):
// fence each resource with its own member's token, from Lease.Leases or
// MultiLock.HeldLeases. It is reentrant along the call chain, whatever its
// members, and the lease's context carries every member's holding, so a
// member taken again under it re-enters, or fails at once with
// recipes.ErrNotReentrant; it never waits for itself. It reports to the
// locktrace.Trace of the context of Acquire (Backend "multi").
//
// docs/design.md, "Leader election, semaphores, multi-lock", has the rest.
package multilock
