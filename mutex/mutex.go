// Package mutex is Curator's InterProcessMutex for Go: a reentrant lock on a
// ZooKeeper path, wire-compatible with Curator so that Go and Java processes
// lock the same path, exclude each other and queue fairly together.
//
// Each contender creates an ephemeral sequential node
// "_c_<uuid>-lock-<seq10>" under the lock path (Curator's protected mode) and
// watches only the node just ahead of it; the first node holds the lock.
//
// # Session loss
//
// A lease's context is cancelled, with a cause that is recipes.ErrLockLost,
// as soon as the session it was taken under can no longer be trusted (under
// the session's default policy, as soon as the connection is suspended).
// The lock node itself is not watched (as in Curator): if someone deletes it,
// Release reports recipes.ErrLockLost. It is NOT safe to assume the lock is held until
// Release: do the work with lease.Context(), and fence writes with
// lease.Token() (session.FencedResource) or recipes.GuardedMulti. A waiter
// whose connection drops keeps its node and its place in the queue if its
// session survives, and queues again under the next session if not. The
// session package doc says exactly when a session stops being trusted.
package mutex

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// LockName is Curator's node name for InterProcessMutex.
const LockName = "lock-"

// Mutex is a reentrant lock on one path. Re-entry follows the call chain:
// Acquire with a context derived from a lease of this Mutex re-enters at
// once, with no ZooKeeper call, and needs its own Release. Two goroutines
// with unrelated contexts sharing one Mutex exclude each other. A Lease may
// be released from any goroutine.
type Mutex struct {
	*recipes.QueueLock
}

var _ recipes.Locker = (*Mutex)(nil)

// Option configures New.
type Option = recipes.QueueOption

// WithData stores data in the lock node (Curator stores the participant id
// there; zklock ls shows it). Default: none.
func WithData(data []byte) Option { return recipes.WithData(data) }

// WithLookahead makes each waiter also watch the node two ahead of it, and
// list the queue again when that node goes, while its predecessor still
// holds: by the time the predecessor releases, the waiter knows it is next
// and takes the lock without listing (docs/benchmarks.md measures the gain
// under contention). Off by default: each waiter watches only its
// predecessor, as Curator's do. Either way it queues with Curator's nodes.
func WithLookahead() Option { return recipes.WithLookahead() }

// New returns the mutex at path. No I/O is done.
func New(c *session.Client, path string, opts ...Option) (*Mutex, error) {
	cfg, err := recipes.ApplyQueueOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("mutex: %w", err)
	}
	driver := recipes.LeaseDriver{Leases: 1, Kind: LockName, Lookahead: cfg.Lookahead}
	q, err := recipes.NewQueueLock(c, path, LockName, []string{LockName}, driver, cfg.Data)
	if err != nil {
		return nil, fmt.Errorf("mutex: %w", err)
	}
	return &Mutex{q}, nil
}

// Acquire waits until the lock is held, ctx ends (an error that is
// recipes.ErrNotAcquired and ctx's error; nothing is left on the server) or
// the client is closed. With a context from a live lease of this Mutex it
// re-enters at once. See the package doc for what session loss does.
func (m *Mutex) Acquire(ctx context.Context) (recipes.Lease, error) { return m.QueueLock.Acquire(ctx) }

// TryAcquire takes the lock if no one else holds it now, and otherwise
// returns an error that is recipes.ErrLocked at once, leaving nothing behind.
func (m *Mutex) TryAcquire(ctx context.Context) (recipes.Lease, error) {
	return m.QueueLock.TryAcquire(ctx)
}
