// Package exclusive is the simple exclusive lock, the seed recipe of
// ZooKeeper's documentation: whoever creates the ephemeral node
// "<path>/lock" holds the lock; every other contender watches the children
// of <path> and tries again when they change; release deletes the node.
//
// # When to choose it
//
// It is one node and one watch, easy to reason about and to inspect, and it
// is cheap when contention is rare. It is not fair (no queue: whoever
// re-creates the node first wins), and every release wakes every waiter,
// which then all try to create the node: the herd effect. With more than a
// handful of waiters, or when fairness matters, use mutex.Mutex, whose
// waiters each watch at most two nodes (docs/benchmarks.md has the
// numbers). It is not wire-compatible with any Curator recipe, and it is
// not reentrant: Acquire in a call chain that holds it fails at once with
// recipes.ErrNotReentrant.
//
// # Session loss
//
// A lease's context is cancelled, with a cause that is recipes.ErrLockLost,
// as soon as its session can no longer be trusted (under the session's
// default policy, at suspension). It is NOT safe to assume the lock is held
// until Release. After a lost create reply the node is taken as ours only
// if its ephemeral owner is our session, and a node is deleted only while
// its czxid is still the one we created: the lock never deletes another
// holder's node. Since every holder's node has the same path, its
// existence proves nothing: fence writes with the token
// (session.FencedResource), not with znode.Lease's GuardedMulti.
package exclusive

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// NodeName is the name of the lock node under the lock path.
const NodeName = "lock"

// Lock is the exclusive lock at one path.
type Lock struct {
	h *engine.Herd
}

var _ recipes.Locker = (*Lock)(nil)

// Option configures New.
type Option func(*options)

// options are what Options set.
type options struct {
	data []byte
}

// WithData stores data in the lock node. Default: none.
func WithData(data []byte) Option { return func(o *options) { o.data = data } }

// New returns the lock at path (the lock node is path + "/lock"). No I/O is
// done.
func New(c *session.Client, path string, opts ...Option) (*Lock, error) {
	if err := engine.CheckPath(c, path); err != nil {
		return nil, fmt.Errorf("exclusive: %w", err)
	}
	var o options
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("exclusive: %w: nil Option", recipes.ErrInvalidArgument)
		}
		opt(&o)
	}
	return &Lock{&engine.Herd{Conn: engine.Client(c), What: "exclusive " + path, Path: path, Name: NodeName, Data: o.data}}, nil
}

// Path is the lock path.
func (l *Lock) Path() string { return l.h.Path }

// String names the lock in messages, as its errors do: "exclusive /locks/orders".
func (l *Lock) String() string { return l.h.What }

// Acquire waits until this process creates the lock node, ctx ends (an
// error that is recipes.ErrNotAcquired and ctx's error; nothing is left on
// the server) or the client is closed. The token is the node's czxid. The
// lease's context ends, with recipes.ErrLockLost, as soon as the session is
// suspended or lost: it is NOT safe to assume the lock is held until
// Release.
func (l *Lock) Acquire(ctx context.Context) (recipes.Lease, error) { return l.h.Acquire(ctx, false) }

// TryAcquire creates the lock node if it does not exist, and otherwise fails
// at once with recipes.ErrLocked.
func (l *Lock) TryAcquire(ctx context.Context) (recipes.Lease, error) { return l.h.Acquire(ctx, true) }
