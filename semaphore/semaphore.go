// Package semaphore is Curator's InterProcessSemaphoreV2 and
// InterProcessSemaphoreMutex for Go, wire-compatible, so that Go and Java
// processes count against one limit.
//
// A semaphore at PATH keeps its internal mutex at PATH/locks (LocksNode)
// and its leases as ephemeral sequential nodes
// PATH/leases/_c_<uuid>-lease-<seq10> (LeasesNode, LeaseName).
// A client takes the mutex, makes its lease node(s), waits (still holding
// the mutex) until the leases are no more than the maximum, and releases
// the mutex; releasing a lease deletes its node. The maximum is fixed (New)
// or read from a shared.Count (NewWithCount), Curator's shared integer, and
// a change of it wakes the waiter.
//
// Acquire(ctx, n) takes n leases, all or none. Curator's acquire(n) takes
// the mutex once per lease, so two clients that each want 3 of 4 leases
// can each hold 2 and wait for each other forever; here all n are made in
// one hold of the mutex, so a waiter holds the room it has until it has
// all it asked for, and nobody else can take part of it.
//
// # Session loss
//
// A lease's context is cancelled, with a cause that is recipes.ErrLockLost,
// as soon as the session it was taken under can no longer be trusted
// (under the default policy, at suspension): from then on the server may
// expire the session, delete the lease nodes and let another client count
// under the limit. Every failure path deletes the lease nodes it made. It
// is NOT safe to assume a lease is held until Release: do the work with the
// lease's context.
package semaphore

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/shared"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Curator's InterProcessSemaphoreV2 names for the nodes under the
// semaphore's path (zklock ls classifies a path by them).
const (
	// LocksNode is the child of the semaphore's path that is its internal
	// mutex: a queue of mutex.LockName nodes.
	LocksNode = "locks"
	// LeasesNode is the child of the semaphore's path under which the lease
	// nodes are.
	LeasesNode = "leases"
	// LeaseName is the name of a lease node after Curator's protected
	// prefix: "_c_<uuid>-lease-<seq10>".
	LeaseName = "lease-"
)

// Semaphore is the semaphore at one path.
type Semaphore struct {
	s    *engine.Semaphore
	c    *session.Client
	path string
}

// Option configures New and NewWithCount.
type Option func(*options)

type options struct{ data []byte }

// WithData stores data in each lease node (Curator stores the client's id
// there). Default: none.
func WithData(data []byte) Option { return func(o *options) { o.data = data } }

// New returns the semaphore at path allowing maxLeases leases at once. No
// I/O is done.
func New(c *session.Client, path string, maxLeases int, opts ...Option) (*Semaphore, error) {
	if maxLeases < 1 {
		return nil, fmt.Errorf("semaphore: %w: max leases %d: at least one", recipes.ErrInvalidArgument, maxLeases)
	}
	return newSemaphore(c, path, func(context.Context) (int, <-chan session.Event, error) { return maxLeases, nil, nil }, opts)
}

// NewWithCount returns the semaphore at path whose maximum is count's
// value, read when a client waits for room and watched while it waits.
// No I/O is done.
func NewWithCount(c *session.Client, path string, count *shared.Count, opts ...Option) (*Semaphore, error) {
	if count == nil {
		return nil, fmt.Errorf("semaphore: %w: nil count", recipes.ErrInvalidArgument)
	}
	return newSemaphore(c, path, maxOf(count), opts)
}

func newSemaphore(c *session.Client, path string, max engine.MaxLeases, opts []Option) (*Semaphore, error) {
	if err := engine.CheckPath(c, path); err != nil {
		return nil, fmt.Errorf("semaphore: %w", err)
	}
	var o options
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("semaphore: %w: nil Option", recipes.ErrInvalidArgument)
		}
		opt(&o)
	}
	nodes := engine.SemaphoreNodes{
		Locks:     session.JoinPath(path, LocksNode),
		Leases:    session.JoinPath(path, LeasesNode),
		LeaseName: LeaseName,
	}
	return &Semaphore{s: engine.NewSemaphore(engine.Client(c), "semaphore "+path, path, nodes, o.data, max), c: c, path: path}, nil
}

// Path is the semaphore's path.
func (s *Semaphore) Path() string { return s.path }

// String names the semaphore in messages, as its errors do:
// "semaphore /semaphores/db".
func (s *Semaphore) String() string { return s.s.What }

// Acquire takes n leases, all or none, waiting until there is room, ctx
// ends (an error that is recipes.ErrNotAcquired and ctx's; every node it
// made is removed) or the client is closed. n above the maximum is an
// error that is recipes.ErrInvalidArgument. The lease holds all n;
// Release gives them all back; its token is the first lease node's czxid.
// See the package doc for session loss.
func (s *Semaphore) Acquire(ctx context.Context, n int) (recipes.Lease, error) {
	return s.s.Acquire(ctx, n, false)
}

// TryAcquire takes n leases if there is room now, and otherwise fails at
// once with an error that is recipes.ErrLocked, leaving nothing behind.
func (s *Semaphore) TryAcquire(ctx context.Context, n int) (recipes.Lease, error) {
	return s.s.Acquire(ctx, n, true)
}

// Leases lists the semaphore's lease nodes, in order. A client waiting for
// room (one at a time: it holds the semaphore's internal mutex) has made
// its nodes already; they come last, and Holder is false for every node
// past the maximum. When the maximum (a shared.Count) was lowered below the
// leases held, the holders past it are marked false too.
func (s *Semaphore) Leases(ctx context.Context) ([]znode.Participant, error) {
	max, _, err := s.s.Max(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: the maximum: %w", s, err)
	}
	return engine.Participants(ctx, engine.Client(s.c), s.s.Nodes.Leases,
		engine.LeaseDriver{Leases: max, Kind: LeaseName}, LeaseName)
}

// Mutex is Curator's InterProcessSemaphoreMutex: a semaphore of one lease,
// as a lock. It is not reentrant: Acquire in a call chain that holds it
// fails at once with recipes.ErrNotReentrant.
type Mutex struct{ s *Semaphore }

var _ recipes.Locker = (*Mutex)(nil)

// NewMutex returns the semaphore mutex at path. No I/O is done.
func NewMutex(c *session.Client, path string, opts ...Option) (*Mutex, error) {
	s, err := New(c, path, 1, opts...)
	if err != nil {
		return nil, err
	}
	return &Mutex{s}, nil
}

// Acquire waits for the lock; see Semaphore.Acquire.
func (m *Mutex) Acquire(ctx context.Context) (recipes.Lease, error) { return m.acquire(ctx, false) }

// TryAcquire takes the lock if it is free now, and otherwise fails at once
// with recipes.ErrLocked.
func (m *Mutex) TryAcquire(ctx context.Context) (recipes.Lease, error) { return m.acquire(ctx, true) }

func (m *Mutex) acquire(ctx context.Context, try bool) (recipes.Lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, err
	}
	if engine.Holds(ctx, m.s.s.Owner) {
		return nil, fmt.Errorf("%w: %s", recipes.ErrNotReentrant, m)
	}
	return m.s.s.Acquire(ctx, 1, try)
}

// String names the mutex in messages: "semaphore /locks/db (mutex)".
func (m *Mutex) String() string { return m.s.String() + " (mutex)" }

// Locker is n leases of the semaphore as a recipes.Locker (for code that
// takes a lock: zklock, a MultiLock, WithLock). Like the semaphore, it is
// not reentrant: each Acquire takes n more leases.
func (s *Semaphore) Locker(n int) recipes.Locker { return leases{s, n} }

type leases struct {
	s *Semaphore
	n int
}

func (l leases) Acquire(ctx context.Context) (recipes.Lease, error) { return l.s.Acquire(ctx, l.n) }
func (l leases) TryAcquire(ctx context.Context) (recipes.Lease, error) {
	return l.s.TryAcquire(ctx, l.n)
}

// String names the leases in messages: "semaphore /semaphores/db (2 leases)".
func (l leases) String() string {
	if l.n == 1 {
		return l.s.String() + " (1 lease)"
	}
	return fmt.Sprintf("%s (%d leases)", l.s, l.n)
}
