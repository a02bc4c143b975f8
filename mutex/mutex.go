// Package mutex is Curator's InterProcessMutex for Go: a reentrant lock on a
// ZooKeeper path, wire-compatible with Curator so that Go and Java processes
// lock the same path, exclude each other and queue fairly together.
//
// Each contender creates an ephemeral sequential node
// "_c_<uuid>-lock-<seq10>" under the lock path (Curator's protected mode);
// the first node holds the lock. A waiter watches the node just ahead of it
// and, by default, the one before that (lookahead): when the node two ahead
// goes, it learns while its predecessor still holds that it is next (from
// the listing it made when it queued, if that node was the head then; by
// listing again otherwise, since only a listing tells a head that released
// from a waiter that gave up), and when the predecessor releases it takes
// the lock on the notification alone. Each release wakes at most two
// waiters; no waiter ever watches the whole queue. WithLookahead(false)
// watches the predecessor only, as Curator's waiters do.
//
// Leases are znode.Lease values: lease.(znode.Lease).Node() is the lock
// node, and GuardedMulti writes only while it exists.
//
// # Session loss
//
// A lease's context is cancelled, with a cause that is recipes.ErrLockLost,
// as soon as the session it was taken under can no longer be trusted (under
// the session's default policy, as soon as the connection is suspended; the
// session package doc says exactly when, and with what margin before the
// server may expire the session). The lock node itself is not watched (as
// in Curator): if someone deletes it, Release reports recipes.ErrLockLost.
// It is NOT safe to assume the lock is held until Release: do the work with
// lease.Context(), and fence writes with the lease's token
// (session.FencedResource) or its GuardedMulti. A waiter whose connection
// drops keeps its node and its place in the queue if its session survives,
// and queues again under the next session if not.
package mutex

import (
	"context"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// LockName is Curator's node name for InterProcessMutex.
const LockName = "lock-"

// DefaultLookahead: waiters also watch the node two ahead (see the package
// doc and WithLookahead).
const DefaultLookahead = true

// Mutex is a reentrant lock on one path. Re-entry follows the call chain:
// Acquire with a context derived from a lease of this Mutex re-enters at
// once, with no ZooKeeper call, and needs its own Release. Two goroutines
// with unrelated contexts sharing one Mutex exclude each other. A Lease may
// be released from any goroutine.
type Mutex struct {
	l *engine.Lock
}

var _ recipes.Locker = (*Mutex)(nil)

// Option configures New.
type Option func(*options)

// options are what Options set; their defaults are set in New.
type options struct {
	data      []byte
	lookahead bool
	revocable bool
}

// WithData stores data in the lock node (Curator stores the participant id
// there; zklock ls shows it). Default: none.
func WithData(data []byte) Option { return func(o *options) { o.data = data } }

// WithLookahead sets whether a waiter also watches the node two ahead of
// it (default DefaultLookahead). With it, a waiter takes the lock on its
// predecessor's deletion notification alone: each handoff costs about one
// round trip instead of two, for one more watch per acquisition and, for a
// waiter that queued more than two behind the head, one more listing
// (docs/benchmarks.md has both). Without it, each waiter watches only its
// predecessor, as Curator's do. Either way the nodes are Curator's.
func WithLookahead(on bool) Option { return func(o *options) { o.lookahead = on } }

// WithRevocable makes the mutex revocable, as Curator's makeRevocable:
// a holding watches its node (one more request per acquisition), and
// lease.(znode.Lease).Revoked() fires when anyone, Go or Java, asks for the
// lock with znode.Revoke (Curator's Revoker). The holder decides whether to
// release. Curator's revocable nodes hold no data, so it cannot be used
// with WithData.
func WithRevocable() Option { return func(o *options) { o.revocable = true } }

// New returns the mutex at path. No I/O is done.
func New(c *session.Client, path string, opts ...Option) (*Mutex, error) {
	if err := engine.CheckPath(c, path); err != nil {
		return nil, fmt.Errorf("mutex: %w", err)
	}
	o := options{lookahead: DefaultLookahead}
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("mutex: %w: nil Option", recipes.ErrInvalidArgument)
		}
		opt(&o)
	}
	if o.revocable && len(o.data) > 0 {
		return nil, fmt.Errorf("mutex: %w: WithRevocable and WithData together (revocable nodes hold no data)", recipes.ErrInvalidArgument)
	}
	driver := engine.LeaseDriver{Leases: 1, Kind: LockName, Lookahead: o.lookahead}
	l := engine.NewLock(engine.Client(c), "mutex", "mutex "+path, path, LockName, []string{LockName}, driver, o.data)
	if o.revocable {
		l.MakeRevocable()
	}
	return &Mutex{l}, nil
}

// Path is the lock path.
func (m *Mutex) Path() string { return m.l.Path() }

// String names the mutex in messages, as its errors do: "mutex /locks/orders".
func (m *Mutex) String() string { return m.l.String() }

// Acquire waits until the lock is held, ctx ends (an error that is
// recipes.ErrNotAcquired and ctx's error; nothing is left on the server) or
// the client is closed. With a context from a live lease of this Mutex it
// re-enters at once. See the package doc for what session loss does.
func (m *Mutex) Acquire(ctx context.Context) (recipes.Lease, error) { return m.l.Acquire(ctx, false) }

// TryAcquire takes the lock if no one else holds it now, and otherwise
// returns an error that is recipes.ErrLocked at once, leaving nothing behind.
func (m *Mutex) TryAcquire(ctx context.Context) (recipes.Lease, error) { return m.l.Acquire(ctx, true) }

// Participants lists the lock's queue, holder first (Curator's
// getParticipantNodes), each node with its owner, data and creation time
// (Created: how long the holder has held, its wait included). A lock path
// that does not exist has none. To learn when the holder lets go (it
// released, or its session ended), wait on its node:
// Participant.WaitGone.
func (m *Mutex) Participants(ctx context.Context) ([]znode.Participant, error) {
	return m.l.Participants(ctx)
}
