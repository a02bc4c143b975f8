package engine

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// CheckPath refuses a nil client and a path that cannot be a lock path,
// with an error that is recipes.ErrInvalidArgument.
func CheckPath(c *session.Client, path string) error {
	if c == nil {
		return fmt.Errorf("%w: nil session client", recipes.ErrInvalidArgument)
	}
	if err := session.ValidatePath(path); err != nil {
		return err // session.ErrInvalidArgument, which is recipes.ErrInvalidArgument
	}
	if path == "/" {
		return fmt.Errorf("%w: lock path cannot be the root", recipes.ErrInvalidArgument)
	}
	return nil
}

// Lock is a lock over a queue, reentrant the Go way: Acquire with a context
// derived from a lease of the same Lock re-enters at once, with no
// ZooKeeper call, and that lease needs its own Release; the node goes when
// the last lease is released. Two goroutines with unrelated contexts sharing
// one Lock queue separately and exclude each other. The mutex and the
// halves of the read/write lock are Locks.
type Lock struct {
	q         queue
	kind      string // locktrace.LockID's Kind; "" for a lock inside a recipe, not traced
	revocable bool
}

// Backend is the locktrace.LockID Backend of the ZooKeeper locks.
const Backend = "zookeeper"

// NewLock returns the lock at path (checked by the caller), named what in
// errors (its recipe's String), whose nodes are named lockName (after
// Curator's protected prefix) and ordered among kinds by driver. No I/O is
// done. kind is what its acquisitions and leases are reported as (a
// locktrace.LockID's Kind); "" for a lock a recipe uses inside (not
// reported).
func NewLock(c Conn, kind, what, path, lockName string, kinds []string, driver Driver, data []byte) *Lock {
	l := &Lock{q: queue{Conn: c, What: what, Path: path, LockName: lockName, Kinds: kinds, Driver: driver, Data: data},
		kind: kind}
	l.q.Owner = l
	return l
}

// MakeRevocable makes the lock revocable, as Curator's makeRevocable: each
// holding watches its node for the revoke message (znode.Revoke), and its
// leases' Revoked channel fires when it comes. The lock's nodes must then
// hold no data (Curator's revocable nodes hold none).
func (l *Lock) MakeRevocable() { l.revocable = true }

// Path is the lock path.
func (l *Lock) Path() string { return l.q.Path }

// String is the lock's name in errors, as NewLock was given it.
func (l *Lock) String() string { return l.q.What }

// Acquire waits for the lock. It re-enters when ctx comes from a live lease
// of this lock; try fails at once with ErrLocked when another holds it.
func (l *Lock) Acquire(ctx context.Context, try bool) (recipes.Lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, err
	}
	if l.kind == "" {
		le, _, err := l.acquire(ctx, try, nil)
		return le, err
	}
	a := hold.Begin(ctx, l.q.Conn.Trace(), locktrace.LockID{Backend: Backend, Kind: l.kind, Name: l.q.Path}, try)
	le, reentered, err := l.acquire(ctx, try, a)
	a.Done(le, err, reentered)
	return le, err
}

// acquire is Acquire after its checks; a learns whether it was contended.
func (l *Lock) acquire(ctx context.Context, try bool, a *hold.Acquisition) (_ recipes.Lease, reentered bool, _ error) {
	if h := heldBy(ctx, l); h != nil {
		if le := h.reenter(); le != nil {
			return le, true, nil
		}
	}
	le, err := l.q.Acquire(ctx, try, a)
	if err != nil {
		return nil, false, err // not a typed nil in the interface
	}
	if l.revocable {
		le.h.watchRevocation()
	}
	return le, false, nil
}

// HeldBy reports whether ctx carries a live lease of this lock (so Acquire
// with ctx would re-enter).
func (l *Lock) HeldBy(ctx context.Context) bool { return heldBy(ctx, l) != nil }

// HeldNode returns the lock node of the live lease of this lock that ctx
// carries.
func (l *Lock) HeldNode(ctx context.Context) (string, bool) {
	if h := heldBy(ctx, l); h != nil {
		return h.node, true
	}
	return "", false
}

// AcquireAt takes this lock at once, without queueing, with a
// non-sequential node that carries sequence seq: the read lock a writer
// takes to downgrade (Curator since CURATOR-621), whose node sorts beside
// the writer's so that no queued writer can slip in between. The node is
// created only while guard (the writer's node, which makes it safe) exists,
// in the same transaction.
func (l *Lock) AcquireAt(ctx context.Context, seq int64, guard string) (recipes.Lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, err
	}
	le, err := l.q.acquireAt(ctx, seq, guard)
	if err != nil {
		return nil, err
	}
	if l.revocable {
		le.h.watchRevocation()
	}
	return le, nil
}

// Participants lists this lock's queue; see Participants.
func (l *Lock) Participants(ctx context.Context) ([]znode.Participant, error) {
	return Participants(ctx, l.q.Conn, l.q.Path, l.q.Driver, l.q.Kinds...)
}
