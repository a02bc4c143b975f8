// Package znode has what the ZooKeeper-backed locks (mutex, rwlock,
// exclusive) add to the backend-neutral recipes contract: the lock node
// behind a lease, a write guarded by it, and the queue of a lock path.
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
	"fmt"

	"github.com/go-zookeeper/zk"
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
	GuardedMulti(ctx context.Context, ops ...session.Op) ([]zk.MultiResponse, error)
	// Revoked fires when someone asks the holder to release the lock
	// (Revoke: Curator's revocation), if the lock was made revocable (the
	// mutex's and the read/write lock's WithRevocable); it is nil, and never
	// fires, otherwise. The holder decides: it may release, or not.
	Revoked() <-chan struct{}
}

// RevokeMessage is what Curator's Revoker writes into a holder's lock node
// to ask it to release the lock.
var RevokeMessage = []byte("__REVOKE__")

// Revoke asks the holder of the lock node (a Participant's, or a lease's
// Node) to release it, as Curator's Revoker.attemptRevoke does: it writes
// RevokeMessage into the node. Go and Curator holders that made their lock
// revocable learn it; others ignore it. The error wraps zk.ErrNoNode when
// the node is gone.
func Revoke(ctx context.Context, c *session.Client, node string) error {
	if _, err := c.Set(ctx, node, RevokeMessage, -1); err != nil {
		return fmt.Errorf("znode: revoke %s: %w", node, err)
	}
	return nil
}

// Participant is one node in a lock's queue, as Curator's
// getParticipantNodes lists them.
type Participant struct {
	Node      string // node name
	Kind      string // the lock name of the node ("lock-", "__READ__", ...)
	Seq       int64  // its sequence number
	SessionID int64  // its ephemeral owner
	Data      []byte // what the participant stored (Curator: its id)
	Holder    bool   // the node holds the lock
}
