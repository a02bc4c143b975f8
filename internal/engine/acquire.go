package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// acquireState is what one Acquire carries from one attempt (one session
// value) to the next.
type acquireState struct {
	// kept is our node, still queued, when the last attempt's session value
	// ended; the next attempt resumes with it if its session is the same.
	// It points to slot (keep), which saves an allocation.
	kept *queued
	slot queued
	// out is our create, still out (or its node made too late to be used)
	// when the last attempt's session value ended; the next attempt takes
	// it over if its session is the same (takeOver). Never set with kept.
	out *outCreate
	// drops counts the connection drops in a row while our create was out.
	drops atomic.Int32
	// a is told when an attempt finds the lock held (or a waiter ahead);
	// nil when no one listens.
	a *hold.Acquisition
}

// queued is our node in a lock's queue.
type queued struct {
	node    string
	token   int64
	session int64     // the ZooKeeper session that owns it
	watches []watched // outstanding watches: a few, in buf while they fit
	buf     [2]watched
}

// watched is a watch set on a node of the queue, not fired yet.
type watched struct {
	name string
	ch   <-chan session.Event
}

// watchOf returns the watch on node name, if one is outstanding.
func (q *queued) watchOf(name string) (<-chan session.Event, bool) {
	for _, w := range q.watches {
		if w.name == name {
			return w.ch, true
		}
	}
	return nil, false
}

// remember records a watch set on node name.
func (q *queued) remember(name string, ch <-chan session.Event) {
	if q.watches == nil {
		q.watches = q.buf[:0] // q stays where it is (acquireState.slot)
	}
	q.watches = append(q.watches, watched{name, ch})
}

// forget drops the watch on node name (it fired).
func (q *queued) forget(name string) {
	q.watches = slices.DeleteFunc(q.watches, func(w watched) bool { return w.name == name })
}

// keep makes q the kept node.
func (st *acquireState) keep(q queued) {
	st.slot = q
	st.kept = &st.slot
}

// carriedFor reports whether what st carries from the last attempt (its
// kept node or its create still out), if anything, was made in session id.
func (st *acquireState) carriedFor(id int64) bool {
	switch {
	case st.kept != nil:
		return st.kept.session == id
	case st.out != nil:
		return st.out.session == id
	}
	return true
}

// abandon gives up what st carries from the last attempt: its kept node is
// removed, and whatever its create still out made is settled, in the
// background.
func (st *acquireState) abandon(c Conn) {
	if st.kept != nil {
		cleanupInBackground(c, st.kept.node, st.kept.session, nil)
		st.kept = nil
	}
	if o := st.out; o != nil {
		st.out = nil
		go func() { settleMade(o.c, <-o.res) }()
	}
}

// maxCreateDrops bounds the connection drops in a row while our create is
// out, after which Acquire gives up. A request the server refuses (larger
// than its jute.maxbuffer, when that is set below the client's
// session.WithMaxRequestSize) drops the connection on every try, and every
// drop suspends the client and ends the leases it holds: it must not be
// retried forever.
const maxCreateDrops = 4

// errCreateDrops: see maxCreateDrops.
var errCreateDrops = fmt.Errorf("the connection to ZooKeeper dropped %d times in a row while our create was out "+
	"(a request over the server's size limit, jute.maxbuffer, does that)", maxCreateDrops)

// noteCreateDrop counts a create that failed with a lost connection and
// returns the error to stop with once there were too many in a row.
func (st *acquireState) noteCreateDrop(err error) error {
	if st.drops.Add(1) >= maxCreateDrops {
		return fmt.Errorf("%w: last: %w", errCreateDrops, err)
	}
	return nil
}

// errSessionEnded: the session value ended during an attempt; go on under
// the next one.
var errSessionEnded = errors.New("the session ended while waiting")

// acquireLoop runs attempt under each new session value until it holds the
// lock or fails for another reason than the end of its session value; what
// every lock of the engine shares. A node an attempt left queued, or a
// create it left out, is carried to the next attempt if its session is the
// same, and removed otherwise. a, when not nil, is told when the lock is
// found held.
func acquireLoop(ctx context.Context, c Conn, what string, a *hold.Acquisition,
	attempt func(Session, *acquireState) (*lease, error)) (*lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, err
	}
	var st acquireState
	st.a = a
	drop := func() { st.abandon(c) }
	for {
		sess, err := c.Session(ctx)
		if err != nil {
			drop()
			return nil, notAcquired(ctx, what, err)
		}
		if !st.carriedFor(sess.ID()) {
			drop() // a new session: the old one's node is gone or going
		}
		le, err := attempt(sess, &st)
		if errors.Is(err, errCreateCut) && st.noteCreateDrop(err) != nil {
			err = notAcquired(ctx, what, errCreateDrops)
		}
		if errors.Is(err, errSessionEnded) {
			if ctx.Err() != nil {
				drop()
				return nil, recipes.NotAcquired(ctx)
			}
			continue // go on with the next session value
		}
		if err != nil {
			drop()
			return nil, err
		}
		return le, nil
	}
}

// attemptFailed returns the error maker of one attempt: ctx's error when ctx
// ended, errSessionEnded (go on) when the session value did, and otherwise
// err as ErrNotAcquired.
func attemptFailed(ctx context.Context, sess Session, what string) func(error) error {
	return func(err error) error {
		switch {
		case ctx.Err() != nil:
			return recipes.NotAcquired(ctx)
		case sess.Err() != nil:
			return errSessionEnded
		default:
			return notAcquired(ctx, what, err)
		}
	}
}

// notAcquired is the error of an Acquire that failed: ctx's when ctx ended,
// err otherwise; both are ErrNotAcquired.
func notAcquired(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return recipes.NotAcquired(ctx)
	}
	return fmt.Errorf("%w: %s: %w", recipes.ErrNotAcquired, what, err)
}

// opCtx is ctx, also cancelled when the session value ends.
func opCtx(ctx context.Context, sess Session) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(sess.Context(), func() { cancel(errSessionEnded) })
	return c, func() { stop(); cancel(nil) }
}
