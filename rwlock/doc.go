// Package rwlock is Curator's InterProcessReadWriteLock for Go: a shared
// read lock and an exclusive write lock on one ZooKeeper path, wire-compatible
// with Curator (and able to read kazoo's nodes in the same parent).
//
// Readers and writers queue together as ephemeral sequential nodes
// "_c_<uuid>-__READ__<seq10>" and "_c_<uuid>-__WRIT__<seq10>". A writer
// holds the lock when its node is first of all and watches its predecessor;
// a reader holds it when no writer is ahead and watches only the nearest
// writer ahead. Both halves are reentrant along the call chain, like
// mutex.Mutex. A holder of the write lock may take the read lock
// (downgrade) and then release the write lock with no queued writer
// slipping in; asking for the write lock while holding only the read lock
// fails at once with ErrUpgrade.
//
// # Session loss
//
// Every lease of either half is cancelled, with a cause that is
// recipes.ErrLockLost, as soon as its session can no longer be trusted
// (under the default policy, at suspension). Fencing tokens are the nodes'
// czxids, as for the mutex. Readers hold at the same time, so their tokens
// order the readers among the writers, not the readers among themselves.
package rwlock
