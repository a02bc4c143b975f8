package rwlock

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// The errors of package rwlock; the recipes sentinels apply as well.
var (
	// ErrUpgrade: the write lock was asked for in a call chain that holds
	// the read lock. It can never be granted (our own read node is ahead of
	// any write node we would queue), so it fails at once where Curator
	// would wait forever.
	ErrUpgrade = fmt.Errorf("rwlock: cannot upgrade a read lock to the write lock: %w", recipes.ErrNotAcquired)
)

// RWLock is the read/write lock at one path: its ReadLock and WriteLock
// queue together in one parent.
type RWLock struct {
	read  *ReadLock
	write *WriteLock
}

// ReadLock is the shared half: held by any number of readers at once, never
// together with a writer.
type ReadLock struct {
	q  *recipes.QueueLock
	rw *RWLock
}

// WriteLock is the exclusive half.
type WriteLock struct {
	q  *recipes.QueueLock
	rw *RWLock
}

var (
	_ recipes.Locker = (*ReadLock)(nil)
	_ recipes.Locker = (*WriteLock)(nil)
)

// Option configures New.
type Option = recipes.QueueOption

// WithData stores data in every node of the lock (Curator stores the
// participant id). Default: none.
func WithData(data []byte) Option { return recipes.WithData(data) }

// WithLookahead: as mutex.WithLookahead. A writer also watches the node two
// ahead of it, a reader the second nearest writer ahead. Off by default.
func WithLookahead() Option { return recipes.WithLookahead() }

// New returns the read/write lock at path. No I/O is done.
func New(c *session.Client, path string, opts ...Option) (*RWLock, error) {
	cfg, err := recipes.ApplyQueueOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("rwlock: %w", err)
	}
	r, err := recipes.NewQueueLock(c, path, ReadName, kinds, driver{write: false, lookahead: cfg.Lookahead}, cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("rwlock: %w", err)
	}
	w, err := recipes.NewQueueLock(c, path, WriteName, kinds, driver{write: true, lookahead: cfg.Lookahead}, cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("rwlock: %w", err)
	}
	rw := &RWLock{}
	rw.read, rw.write = &ReadLock{q: r, rw: rw}, &WriteLock{q: w, rw: rw}
	return rw, nil
}

// ReadLock returns the shared half.
func (l *RWLock) ReadLock() *ReadLock { return l.read }

// WriteLock returns the exclusive half.
func (l *RWLock) WriteLock() *WriteLock { return l.write }

// Participants lists readers and writers in queue order.
func (l *RWLock) Participants(ctx context.Context) ([]recipes.Participant, error) {
	parts, err := recipes.Participants(ctx, l.write.q.Client(), l.write.q.Path(), readerView{}, kinds...)
	return parts, err
}

// readerView marks holders for Participants: a node holds when it would own
// as what it is (reader or writer).
type readerView struct{}

func (readerView) Decide(kids []recipes.Child, ours int) (recipes.Decision, error) {
	if ours < 0 || ours >= len(kids) {
		return recipes.Decision{}, fmt.Errorf("rwlock: node %d is not among the %d children", ours, len(kids))
	}
	return driver{write: !isReader(kids[ours])}.Decide(kids, ours)
}

// Acquire waits for the read lock. In a call chain that holds the read lock
// it re-enters; in one that holds the write lock it downgrades: the read
// lock is granted at once, with a node beside the writer's, so that no
// queued writer can take the lock when the write lock is released.
//
// The lease's context is cancelled, with a cause that is
// recipes.ErrLockLost, as soon as the session is suspended or lost: it is
// NOT safe to assume the lock is held until Release.
func (r *ReadLock) Acquire(ctx context.Context) (recipes.Lease, error) { return r.acquire(ctx, false) }

// TryAcquire takes the read lock if no writer holds or waits ahead, and
// otherwise fails at once with recipes.ErrLocked.
func (r *ReadLock) TryAcquire(ctx context.Context) (recipes.Lease, error) {
	return r.acquire(ctx, true)
}

func (r *ReadLock) acquire(ctx context.Context, try bool) (recipes.Lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, err
	}
	if !r.q.HeldBy(ctx) {
		if node, ok := r.rw.write.q.HeldNode(ctx); ok {
			c, ok := recipes.ParseChild(session.BaseName(node), kinds...)
			if !ok {
				return nil, fmt.Errorf("rwlock: write node %s has no sequence", node)
			}
			return r.q.AcquireAt(ctx, c.Seq, node)
		}
	}
	if try {
		return r.q.TryAcquire(ctx)
	}
	return r.q.Acquire(ctx)
}

// Acquire waits for the write lock; in a call chain that holds it, it
// re-enters. In a call chain that holds only the read lock it fails at once
// with ErrUpgrade. Session loss: as for ReadLock.Acquire.
func (w *WriteLock) Acquire(ctx context.Context) (recipes.Lease, error) { return w.acquire(ctx, false) }

// TryAcquire takes the write lock if no one holds or waits ahead, and
// otherwise fails at once with recipes.ErrLocked.
func (w *WriteLock) TryAcquire(ctx context.Context) (recipes.Lease, error) {
	return w.acquire(ctx, true)
}

func (w *WriteLock) acquire(ctx context.Context, try bool) (recipes.Lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, err
	}
	if !w.q.HeldBy(ctx) && w.rw.read.q.HeldBy(ctx) {
		return nil, ErrUpgrade
	}
	if try {
		return w.q.TryAcquire(ctx)
	}
	return w.q.Acquire(ctx)
}
