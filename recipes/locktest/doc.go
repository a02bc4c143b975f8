// Package locktest is the contract test suite that every recipes.Locker in
// zkrecipes runs, what Curator's TestInterProcessMutexBase is to its mutexes:
// the scenarios are written once and each lock (the ZooKeeper mutex, the
// halves of the read/write lock, the exclusive lock, the Redis and Memcached
// locks) runs them against its own servers.
//
// A backend describes itself with a Backend: how to make an independent
// contender for a named lock, how to make a held lock untrustworthy the way a
// real fault would, and how to list what it left on its server. Run then runs
// every scenario as a subtest:
//
//   - MutualExclusion: contenders do slow read-modify-writes on shared state;
//     no update may be lost, and no holder may find another holder inside
//     unless that holder's lease had already ended.
//   - TryAcquire: on a held lock it fails at once with ErrLocked and gives no
//     lease; on a free lock it succeeds.
//   - CancelWhileWaiting: a waiter whose context is cancelled, or whose
//     deadline passes, gets ErrNotAcquired and the context's error, and leaves
//     nothing behind.
//   - ReleaseTwice: Release ends the lease with ErrReleased; a second Release
//     is ErrNotHeld.
//   - LostLock: after Backend.Lose the lease ends with ErrLockLost, Release
//     reports it, and a queued contender gets the lock with a higher token.
//   - TokensIncrease: fencing tokens strictly increase across holders; on a
//     backend with none (Backend.NoTokens) every lease says so.
//   - BadInput: a nil context is ErrInvalidArgument, a done one is
//     ErrNotAcquired, and neither takes the lock.
//   - ReleaseFromOtherGoroutine: a lease is released from any goroutine.
//   - Reentrant (Backend.Reentrant only): Acquire with the lease's context
//     re-enters; the lock is held until every lease is released; goroutines
//     sharing one Locker with their own contexts exclude each other.
//   - NotReentrant (not Backend.Reentrant): Acquire and TryAcquire with the
//     lease's context fail at once with ErrNotReentrant, and the lease stays
//     held.
//   - WithLock: recipes.WithLock holds the lock while fn runs, and cancels
//     fn's context with ErrLockLost when the lock is lost.
//   - WithLockPanic: when fn panics, WithLock releases the lock and the
//     panic goes on to the caller.
//
// # Shared locks
//
// The read half of a read/write lock is a Locker whose holders share the
// lock. Its backend sets Backend.Shared and gives a Backend.Blocker, a
// Locker on the same name that excludes the sharers (the write half). Each
// scenario then checks the same property of the sharer, with a Blocker
// wherever it needs the lock held by someone else: TryAcquire is refused
// behind a Blocker and succeeds on a free or shared lock; a waiter behind a
// Blocker is cancelled; a lost share lets a queued Blocker in with a higher
// token; tokens increase across sharers and Blockers taking the lock in
// turn; re-entry goes at once even with a Blocker queued, and goroutines
// sharing one sharer hold it together; WithLock keeps a Blocker out.
// MutualExclusion becomes a sharing check: sharers and a Blocker contend, a
// Blocker holder must never meet a live lease of anyone else, and sharers
// must be seen holding together at least once.
//
// Every scenario uses a lock name of its own, bounds every wait with a
// timeout (30 seconds per scenario) so that a broken lock fails instead of
// hanging, and never asserts that something was fast. When Backend.Leftovers
// is set, Run checks after each passing scenario that nothing of the lock is
// left on the server.
//
// # Using it from a backend's tests
//
// A backend's test file builds a Backend from its own harness. Here, for a
// ZooKeeper lock, with the test's own helpers (startZK, newSession,
// expireSession and children are the backend's, not this package's):
//
//	func TestMutexContract(t *testing.T) {
//		servers := startZK(t)
//		locktest.Run(t, locktest.Backend{
//			New: func(t *testing.T, name string) recipes.Locker {
//				// A session of its own: a contender of its own.
//				m, err := mutex.New(newSession(t, servers), "/locktest/"+name)
//				if err != nil {
//					t.Fatal(err)
//				}
//				return m
//			},
//			Lose: func(t *testing.T, name string, lease recipes.Lease) {
//				expireSession(t, servers, lease)
//			},
//			Leftovers: func(t *testing.T, name string) []string {
//				return children(t, servers, "/locktest/"+name)
//			},
//			Reentrant: true,
//		})
//	}
//
// The suite's own tests run it against an in-memory lock, and against broken
// variants of it to show that each check catches what it is there to catch.
// It imports only the standard library and recipes, so any backend can run
// it without linking another.
package locktest
