// Package engine is the ZooKeeper engine behind the lock recipes, Curator's
// LockInternals. It has three shapes, each shared by the recipes named:
//
//   - Lock (mutex, rwlock's two halves, leader): an ephemeral sequential
//     node queued under the lock path; a pure Driver decides from the
//     sorted children whether the node owns the lock and which node it
//     watches meanwhile.
//   - Semaphore (semaphore): Curator's InterProcessSemaphoreV2, lease
//     nodes made under an internal Lock and counted against a maximum.
//   - Herd (exclusive): one node at a fixed path that every waiter tries
//     to create.
//
// Each turns an owning node into a lease whose context ends, with a cause
// that is recipes.ErrLockLost, when the session it was taken under can no
// longer be trusted. Every failure path removes the node it made
// (cleanup.go). The engine talks to ZooKeeper through Conn, the narrow
// interface of the operations it uses, which *session.Client satisfies
// through Client and which the tests replace with a fake that fails on
// purpose.
package engine
