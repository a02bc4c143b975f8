package rwlock

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
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
	name  string // String
}

// ReadLock is the shared half: held by any number of readers at once, never
// together with a writer.
type ReadLock struct {
	q  *engine.Lock
	rw *RWLock
}

// WriteLock is the exclusive half.
type WriteLock struct {
	q  *engine.Lock
	rw *RWLock
}

var (
	_ recipes.Locker = (*ReadLock)(nil)
	_ recipes.Locker = (*WriteLock)(nil)
)

// Option configures New.
type Option func(*options)

// options are what Options set; their defaults are set in New.
type options struct {
	data                             []byte
	writerLookahead, readerLookahead bool
	revocable                        bool
}

// WithData stores data in every node of the lock (Curator stores the
// participant id). Default: none.
func WithData(data []byte) Option { return func(o *options) { o.data = data } }

// WithLookahead sets, for both halves, whether a waiter also watches the
// node two ahead of it (a writer) or the second nearest writer ahead (a
// reader), as mutex.WithLookahead. Default: on for writers
// (DefaultLookahead), off for readers, who wait behind writers only and
// gain less from it.
func WithLookahead(on bool) Option {
	return func(o *options) { o.writerLookahead, o.readerLookahead = on, on }
}

// WithRevocable makes both halves revocable, as mutex.WithRevocable.
func WithRevocable() Option { return func(o *options) { o.revocable = true } }

// DefaultLookahead is the writers' lookahead by default.
const DefaultLookahead = true

// New returns the read/write lock at path. No I/O is done.
func New(c *session.Client, path string, opts ...Option) (*RWLock, error) {
	if err := engine.CheckPath(c, path); err != nil {
		return nil, fmt.Errorf("rwlock: %w", err)
	}
	o := options{writerLookahead: DefaultLookahead}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("rwlock: %w: nil Option", recipes.ErrInvalidArgument)
		}
		opt(&o)
	}
	conn, d := engine.Client(c), driver{writerLookahead: o.writerLookahead, readerLookahead: o.readerLookahead}
	rw := &RWLock{name: "rwlock " + path}
	rw.read = &ReadLock{q: engine.NewLock(conn, "read", rw.name+" (read)", path, ReadName, kinds, d, o.data), rw: rw}
	rw.write = &WriteLock{q: engine.NewLock(conn, "write", rw.name+" (write)", path, WriteName, kinds, d, o.data), rw: rw}
	if o.revocable {
		if len(o.data) > 0 {
			return nil, fmt.Errorf("rwlock: %w: WithRevocable and WithData together (revocable nodes hold no data)", recipes.ErrInvalidArgument)
		}
		rw.read.q.MakeRevocable()
		rw.write.q.MakeRevocable()
	}
	return rw, nil
}

// Path is the lock path.
func (l *RWLock) Path() string { return l.write.q.Path() }

// String names the lock in messages: "rwlock /locks/orders". Its halves
// add which they are: "rwlock /locks/orders (read)", "... (write)".
func (l *RWLock) String() string { return l.name }

// String names the read lock in messages, as its errors do:
// "rwlock /locks/orders (read)".
func (r *ReadLock) String() string { return r.q.String() }

// String names the write lock in messages, as its errors do:
// "rwlock /locks/orders (write)".
func (w *WriteLock) String() string { return w.q.String() }

// ReadLock returns the shared half.
func (l *RWLock) ReadLock() *ReadLock { return l.read }

// WriteLock returns the exclusive half.
func (l *RWLock) WriteLock() *WriteLock { return l.write }

// Participants lists readers and writers in queue order, holders marked as
// the lock's rules say (several readers may hold at once).
func (l *RWLock) Participants(ctx context.Context) ([]znode.Participant, error) {
	return l.write.q.Participants(ctx)
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
			c, ok := znode.ParseChild(session.BaseName(node), kinds...)
			if !ok {
				return nil, fmt.Errorf("%s: write node %s has no sequence", r, node)
			}
			return r.q.AcquireAt(ctx, c.Seq, node)
		}
	}
	return r.q.Acquire(ctx, try)
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
	return w.q.Acquire(ctx, try)
}
