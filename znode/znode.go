// Package znode has what the ZooKeeper-backed locks (mutex, rwlock,
// exclusive, leader, semaphore) add to the backend-neutral recipes
// contract: the lock node behind a lease, a write guarded by it, the queue
// of a lock path (Participant, and ParseChild for the names of its nodes)
// and Curator's revocation (Revoke).
//
// A node is named by its path ("/locks/orders/_c_<uuid>-lock-0000000001",
// without the client's namespace) wherever it is to be found again
// (Lease.Node, Participant.Path, Revoke), and by its name (the last
// segment) where it is parsed (ParseChild, Participant.Name).
//
// Every lease those locks return is a Lease; type-assert the recipes.Lease:
//
//	lease, err := m.Acquire(ctx)
//	...
//	zl := lease.(znode.Lease)
//	log.Printf("holding %s in session 0x%x", zl.Node(), zl.SessionID())
//	_, err = zl.GuardedMulti(ctx, session.SetOp("/orders/state", data, -1))
package znode

import (
	"context"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Lease is a lease held through a ZooKeeper node.
type Lease interface {
	recipes.Lease
	// Node is the path of the lock node (without the client's namespace).
	Node() string
	// SessionID is the ZooKeeper session the lock was taken under: the
	// node's ephemeral owner.
	SessionID() int64
	// GuardedMulti applies ops atomically only while the lock node exists,
	// in one transaction with a check of it: a write that cannot land once
	// the lock is lost. It fails with an error that is
	// session.ErrGuardFailed when the node is gone, or when the lease has
	// already ended. A lock whose node path is the same for every holder
	// (the exclusive lock) cannot guard this way: its node's existence does
	// not prove it is still ours; it returns recipes.ErrInvalidArgument,
	// and such writes are fenced with the token (session.FencedResource).
	GuardedMulti(ctx context.Context, ops ...session.Op) ([]session.OpResult, error)
	// Revoked fires when someone asks the holder to release the lock
	// (Revoke: Curator's revocation), if the lock was made revocable (the
	// mutex's and the read/write lock's WithRevocable); it is nil, and never
	// fires, otherwise. The holder decides: it may release, or not.
	Revoked() <-chan struct{}
}
