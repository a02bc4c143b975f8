// Package leader is leader election on ZooKeeper, wire-compatible with
// Curator's LeaderLatch and LeaderSelector, so that Go and Java
// participants share one election.
//
// A participant campaigns by queueing an ephemeral sequential node under
// the election path, its participant id as the node's data: LeaderLatch's
// "_c_<uuid>-latch-<seq10>" (NewLatch) or LeaderSelector's
// InterProcessMutex node "_c_<uuid>-lock-<seq10>" (NewSelector). The
// lowest node leads; every other participant watches only its
// predecessor. Both have the same Go shape:
//
//	e, _ := leader.NewLatch(client, "/election/orders", "worker-7")
//	err := e.Run(ctx, func(ctx context.Context) error {
//		// Lead until ctx ends: it is cancelled, with a cause, the moment
//		// leadership can no longer be trusted. Then Run campaigns again.
//		return serve(ctx)
//	})
//
// Campaign blocks until this participant leads and returns its
// Leadership, which is a recipes.Lease: a Context cancelled when
// leadership ends, a fencing Token (the czxid of the leader's node, which
// never goes back, unlike the sequence, when the parent is reaped and
// recreated) and Release. Lead runs a function while leading; Run does it
// again and again. Leader and Observe show the current leader, or that
// there is none; Participants lists the queue.
//
// # Never two trusted leaders
//
// Leadership is a lease of the engine the mutex uses, with the same
// guarantee: its context is cancelled, with a cause that is
// recipes.ErrLockLost, when the session it was won in can no longer be
// trusted (at suspension under the default policy; the session package
// doc says when otherwise), before the server can expire the session and
// let a successor lead. A node is taken as leading only if it was created
// in the session value we trust, and a reconnection never revives a
// leadership (Curator's CURATOR-498, -696 and -620; docs/design.md).
// Release, and the end of Lead's or Run's function, deletes our node at
// once, so that a successor leads within a few round trips, not a session
// timeout. A locktrace.Trace hears of campaigns and leaderships as of any
// lock's (LockID Kind "leader"), and of this participant gaining and
// losing the leadership (Err nil when it was given up).
package leader

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/engine"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Curator's node names.
const (
	// LatchName is LeaderLatch's.
	LatchName = "latch-"
	// SelectorName is LeaderSelector's: its InterProcessMutex's.
	SelectorName = "lock-"
)

// Election is one participant of the election at a path. It is a
// recipes.Locker too (Acquire is Campaign), so that it can be used where a
// lock is expected.
type Election struct {
	c    *session.Client
	lock *engine.Lock
	path string
	id   string
	name string
}

var _ recipes.Locker = (*Election)(nil)

// NewLatch returns participant id of the election at path, with Curator's
// LeaderLatch nodes. No I/O is done.
func NewLatch(c *session.Client, path, id string) (*Election, error) {
	return newElection(c, path, id, LatchName)
}

// NewSelector returns participant id of the election at path, with
// Curator's LeaderSelector nodes (an InterProcessMutex's). No I/O is done.
func NewSelector(c *session.Client, path, id string) (*Election, error) {
	return newElection(c, path, id, SelectorName)
}

func newElection(c *session.Client, path, id, name string) (*Election, error) {
	if err := engine.CheckPath(c, path); err != nil {
		return nil, fmt.Errorf("leader: %w", err)
	}
	driver := engine.LeaseDriver{Leases: 1, Kind: name}
	return &Election{
		c: c, path: path, id: id, name: name,
		lock: engine.NewLock(engine.Client(c), "leader", "leader "+path, path, name, []string{name}, driver, []byte(id)),
	}, nil
}

// ID is this participant's id, the data of its node.
func (e *Election) ID() string { return e.id }

// Path is the election's path.
func (e *Election) Path() string { return e.path }

// String names the election in messages, as its errors do:
// "leader /election/orders".
func (e *Election) String() string { return e.lock.String() }

// Leadership is this participant leading, from Campaign until Release or
// until leadership can no longer be trusted. It is a recipes.Lease: a
// leadership and a lock's lease end alike.
type Leadership struct {
	lease znode.Lease
}

var _ recipes.Lease = (*Leadership)(nil)

// Context is cancelled when leadership ends: Release, or a cause that is
// recipes.ErrLockLost.
func (l *Leadership) Context() context.Context { return l.lease.Context() }

// Done is Context().Done().
func (l *Leadership) Done() <-chan struct{} { return l.lease.Done() }

// Err is nil while leading, then why it ended.
func (l *Leadership) Err() error { return l.lease.Err() }

// Token is the fencing token: the czxid of the leader's node, strictly
// greater than every earlier leader's. ok is always true (every ZooKeeper
// lease has one); the shape is recipes.Lease's.
func (l *Leadership) Token() (token int64, ok bool) { return l.lease.Token() }

// Node is the path of the leader's node (without the client's namespace),
// as znode.Lease's Node.
func (l *Leadership) Node() string { return l.lease.Node() }

// Lease is the leadership as a lock lease (for GuardedMulti, or code that
// takes a recipes.Lease).
func (l *Leadership) Lease() znode.Lease { return l.lease }

// Release ends the leadership and deletes our node, so that the next
// participant leads at once: what etcd calls Resign and Curator's
// LeaderLatch close. It returns an error that is recipes.ErrLockLost when
// leadership had already been lost, and recipes.ErrNotHeld when it was
// released already.
func (l *Leadership) Release(ctx context.Context) error { return l.lease.Release(ctx) }

// Campaign queues this participant and blocks until it leads, ctx ends (an
// error that is recipes.ErrNotAcquired and ctx's; our node is removed) or
// the client is closed. A campaign whose session ends goes on under the
// next session, keeping its place if the session survived.
func (e *Election) Campaign(ctx context.Context) (*Leadership, error) {
	le, err := e.acquire(ctx, false)
	if err != nil {
		return nil, err
	}
	return &Leadership{lease: le.(znode.Lease)}, nil
}

// Acquire implements recipes.Locker: Campaign, as a lease.
func (e *Election) Acquire(ctx context.Context) (recipes.Lease, error) {
	return e.acquire(ctx, false)
}

// TryAcquire leads if no one else leads or waits ahead now, and otherwise
// fails at once with recipes.ErrLocked.
func (e *Election) TryAcquire(ctx context.Context) (recipes.Lease, error) {
	return e.acquire(ctx, true)
}

// Lead campaigns, runs fn while leading (its context ends when leadership
// does, or when ctx does), and resigns when fn returns. It returns fn's
// error, joined with an error that is recipes.ErrLockLost when leadership
// was lost while fn ran; when ctx ends before leadership comes, an error
// that is recipes.ErrNotAcquired. It is Curator's LeaderSelector without
// requeue.
func (e *Election) Lead(ctx context.Context, fn func(ctx context.Context) error) error {
	if fn == nil {
		return fmt.Errorf("leader: %w: nil function", recipes.ErrInvalidArgument)
	}
	return recipes.WithLock(ctx, e, fn)
}

// Named defaults of Run's requeue.
const (
	// ShortTerm is how short a leadership must be for Run to pause before
	// campaigning again: a function that returns at once (or fails at once,
	// its dependency down) would otherwise make Run campaign thousands of
	// times a second.
	ShortTerm = 100 * time.Millisecond
	// RequeueBackoff is Run's first pause after a short term; it doubles
	// with each short term in a row, up to MaxRequeueBackoff, and a longer
	// term resets it. While Run pauses it has resigned: others may lead.
	RequeueBackoff = 100 * time.Millisecond
	// MaxRequeueBackoff caps Run's pause.
	MaxRequeueBackoff = 5 * time.Second
)

// Run leads again and again: it campaigns, runs fn while leading, resigns
// when fn returns or leadership is lost, and campaigns again, until ctx
// ends; then it returns ctx's error (wrapped: recipes.ErrNotAcquired when
// it was waiting). fn's errors, whatever they wrap, do not stop it
// (Curator's autoRequeue); after a term shorter than ShortTerm it pauses
// before campaigning again (RequeueBackoff). Only a campaign that cannot go
// on (the client closed) stops it, with that error.
//
// When the session is lost (or, under the default error policy, suspended)
// fn's context is cancelled with a cause that is recipes.ErrLockLost, and
// Run campaigns again under the client's next session.
func (e *Election) Run(ctx context.Context, fn func(ctx context.Context) error) error {
	if fn == nil {
		return fmt.Errorf("leader: %w: nil function", recipes.ErrInvalidArgument)
	}
	var pause time.Duration
	for {
		var began time.Time // set once this campaign won: fn runs
		err := e.Lead(ctx, func(ctx context.Context) error {
			began = time.Now()
			return fn(ctx)
		})
		switch {
		case ctx.Err() != nil:
			return recipes.NotAcquired(ctx)
		case began.IsZero():
			return err // the campaign itself failed; fn never ran
		}
		if pause = requeuePause(pause, time.Since(began)); pause > 0 {
			timer := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				timer.Stop()
				return recipes.NotAcquired(ctx)
			case <-timer.C:
			}
		}
	}
}

// requeuePause is Run's pause after a term that lasted held, the previous
// pause being prev (0 after a long term).
func requeuePause(prev, held time.Duration) time.Duration {
	switch {
	case held >= ShortTerm:
		return 0
	case prev == 0:
		return RequeueBackoff
	default:
		return min(2*prev, MaxRequeueBackoff)
	}
}

// Participants lists the election's queue, the leader first (Curator's
// getParticipants); Data is each participant's id, Created when it
// joined. Participant.WaitGone waits for the leader's node to go (it
// resigned, or its session ended); Observe reports the next leader.
func (e *Election) Participants(ctx context.Context) ([]znode.Participant, error) {
	return e.lock.Participants(ctx)
}
