package recipes

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/session"
)

// QueueLock is a Locker over a Queue, reentrant the Go way: Acquire with a
// context derived from a lease of the same QueueLock re-enters at once, with
// no ZooKeeper call, and that lease needs its own Release; the node goes when
// the last lease is released. Two goroutines with unrelated contexts sharing
// one QueueLock queue separately and exclude each other. The mutex and the
// halves of the read/write lock are QueueLocks.
type QueueLock struct {
	q Queue
}

// NewQueueLock returns the lock at path whose nodes are named lockName
// (after Curator's protected prefix) and ordered among kinds by driver. No
// I/O is done.
func NewQueueLock(c *session.Client, path, lockName string, kinds []string, driver Driver, data []byte) (*QueueLock, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil session client", ErrInvalidArgument)
	}
	if err := session.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if path == "/" {
		return nil, fmt.Errorf("%w: lock path cannot be the root", ErrInvalidArgument)
	}
	l := &QueueLock{q: Queue{Client: c, Path: path, LockName: lockName, Kinds: kinds, Driver: driver, Data: data}}
	l.q.Owner = l
	return l, nil
}

// Path is the lock path.
func (l *QueueLock) Path() string { return l.q.Path }

// Client is the session client the lock runs on.
func (l *QueueLock) Client() *session.Client { return l.q.Client }

// Acquire waits for the lock; see Locker. Re-enters when ctx comes from a
// live lease of this lock.
func (l *QueueLock) Acquire(ctx context.Context) (Lease, error) { return l.acquire(ctx, false) }

// TryAcquire takes the lock if it is free now; see Locker.
func (l *QueueLock) TryAcquire(ctx context.Context) (Lease, error) { return l.acquire(ctx, true) }

func (l *QueueLock) acquire(ctx context.Context, try bool) (Lease, error) {
	if err := CheckContext(ctx); err != nil {
		return nil, err
	}
	if h := l.held(ctx); h != nil && h.reenter() {
		return newHandle(h), nil
	}
	h, err := l.q.Acquire(ctx, try)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return h, nil
}

// HeldBy reports whether ctx carries a live lease of this lock (so Acquire
// with ctx would re-enter).
func (l *QueueLock) HeldBy(ctx context.Context) bool { return ctx != nil && l.held(ctx) != nil }

// held returns the live holding of this lock carried by ctx, or nil.
func (l *QueueLock) held(ctx context.Context) *holding {
	h, _ := ctx.Value(holdingKey{l}).(*holding)
	if h == nil || h.ctx.Err() != nil {
		return nil
	}
	return h
}

// HeldNode returns the lock node of the live lease of this lock that ctx
// carries.
func (l *QueueLock) HeldNode(ctx context.Context) (string, bool) {
	if ctx == nil {
		return "", false
	}
	if h := l.held(ctx); h != nil {
		return h.node, true
	}
	return "", false
}

// AcquireAt takes this lock at once, without queueing, with a
// non-sequential node that carries sequence seq: the read lock a writer
// takes to downgrade (Curator since CURATOR-621), whose node sorts beside
// the writer's so that no queued writer can slip in between. The caller
// must hold what makes that safe (the write lock).
//
// guard is the node that makes it safe (the writer's): the new node is
// created only while guard exists, in the same transaction.
func (l *QueueLock) AcquireAt(ctx context.Context, seq int64, guard string) (Lease, error) {
	if err := CheckContext(ctx); err != nil {
		return nil, err
	}
	h, err := l.q.acquireAt(ctx, seq, guard)
	if err != nil {
		return nil, err
	}
	return newHandle(h), nil
}
