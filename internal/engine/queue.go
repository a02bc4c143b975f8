package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// queue is Curator's LockInternals: it queues an ephemeral sequential node
// under a lock path and waits, watching only what its Driver names, until
// the node owns the lock. Every failure path removes the node. The mutex
// and the halves of the read/write lock are a queue with a lock name and a
// Driver, behind a Lock.
type queue struct {
	Conn     Conn
	What     string   // names the lock in errors: its recipe's String ("mutex /locks/orders")
	Path     string   // the lock path: parent of the queue's nodes
	LockName string   // the node name after the protected prefix, e.g. "lock-"
	Kinds    []string // every lock name that may share Path (for ordering)
	Driver   Driver
	Data     []byte // stored in our node (Curator: the participant id)
	Owner    any    // the Lock, for re-entry through a lease's context
	// NoListing: make our node without the listing pipelined behind its
	// create (a semaphore's leases are counted otherwise).
	NoListing bool
}

// Acquire waits until a node of ours owns the lock, or fails (ErrLocked at
// once when try is set and the lock is held elsewhere). A session value
// that ends while we wait is not an error: the wait goes on under the next
// value, keeping our node and its place in the queue when the ZooKeeper
// session survived (a reconnection), even when the reply to our create was
// lost with the connection (takeOver finds the node by its protected
// prefix), and with a new node when it did not.
func (q *queue) Acquire(ctx context.Context, try bool, a *hold.Acquisition) (*lease, error) {
	return acquireLoop(ctx, q.Conn, q.What, a, func(sess Session, st *acquireState) (*lease, error) {
		return q.attempt(ctx, sess, st, try)
	})
}

// attempt queues under one session value (creating our node, or resuming
// with the one st kept or the create st left out) and waits. When the
// session value ends, the node (or the create still out) stays in st for
// the next attempt; on any other failure it is removed.
func (q *queue) attempt(ctx context.Context, sess Session, st *acquireState, try bool) (*lease, error) {
	var listed []string
	if st.kept == nil {
		r, err := q.create(ctx, sess, st)
		if err != nil {
			return nil, err
		}
		listed = r.children
		st.keep(queued{node: r.node, token: r.czxid, session: sess.ID()})
	}
	le, err := q.wait(ctx, sess, st, try, listed)
	switch {
	case err == nil:
		st.kept = nil
	case errors.Is(err, errSessionEnded):
	default:
		// A refused TryAcquire or a cancelled wait leaves nothing behind
		// when it returns (a lingering node would look like a holder or
		// waiter to everyone): delete now, in the background only if the
		// connection will not let us.
		node := st.kept.node
		st.kept = nil
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncCleanupTimeout)
		derr := deleteNode(dctx, q.Conn, node, sess.ID())
		cancel()
		if derr != nil {
			cleanupInBackground(q.Conn, node, sess.ID(), nil)
		}
	}
	return le, err
}

// wait lists the children, and decides from each listing and the events
// of the nodes it watches, until our node owns the lock; listed, when not
// nil, is a listing already made after our create (pipelined with it).
func (q *queue) wait(ctx context.Context, sess Session, st *acquireState, try bool, listed []string) (*lease, error) {
	ours := st.kept
	// The wait's context (ctx, also ended by the session) is made only when
	// needed: an uncontended acquisition never waits.
	var octx context.Context
	cancel := func() {}
	defer func() { cancel() }()
	waitCtx := func() context.Context {
		if octx == nil {
			octx, cancel = opCtx(ctx, sess)
		}
		return octx
	}
	// Requests honour ctx; when nothing can cancel ctx, they run on this
	// goroutine (no hop) and the session is checked before owning.
	rctx := context.Background()
	if ctx.Done() != nil {
		rctx = waitCtx()
	}
	fail := attemptFailed(ctx, sess, q.What)
	node, token := ours.node, ours.token
	name := session.BaseName(node)
	var kids []Child // the last listing; nil: list again
	for {
		if kids == nil {
			names := listed
			listed = nil
			if names == nil {
				var err error
				if names, err = q.Conn.Children(rctx, q.Path); err != nil {
					return nil, fail(err)
				}
			}
			names = q.dropStrays(names, name, sess.ID())
			kids = SortChildren(names, q.Kinds...)
		}
		d, err := q.Driver.Decide(kids, indexOf(kids, name))
		if err != nil {
			return nil, fail(fmt.Errorf("our node %s: %w", node, err))
		}
		if d.Owns {
			return q.own(ctx, sess, node, token, fail)
		}
		st.a.Queued()
		if try {
			return nil, fmt.Errorf("%w: %s", recipes.ErrLocked, q.What)
		}
		chans, gone, err := q.setWatches(rctx, ours, d.Watch, d.Refresh)
		if err != nil {
			return nil, fail(err)
		}
		if gone {
			kids = nil // a node to watch is gone already: list again
			continue
		}
		var e fired
		select {
		case e.ev[0] = <-chans[0]:
			e.got[0] = true
		case e.ev[1] = <-chans[1]: // nil without a Refresh node
			e.got[1] = true
		case <-sess.Done():
			return nil, fail(errSessionEnded)
		case <-ctx.Done():
			return nil, fail(context.Cause(ctx))
		}
		e.readOthers(chans)
		if e.got[0] {
			ours.forget(d.Watch)
		}
		if e.got[1] {
			ours.forget(d.Refresh)
		}
		var owns bool
		owns, kids = q.afterEvents(kids, name, d, e)
		if owns && sess.Err() == nil {
			return q.own(ctx, sess, node, token, fail)
		}
	}
}

// fired is what the watches of one Decision told: the event of its Watch
// (index 0) and of its Refresh (1), where one came.
type fired struct {
	ev  [2]session.Event
	got [2]bool
}

// readOthers reads the events already in of the channels not read yet:
// when two nodes went, the order in which their events are read must
// decide nothing.
func (e *fired) readOthers(chans [2]<-chan session.Event) {
	for i, ch := range chans {
		if e.got[i] || ch == nil {
			continue
		}
		select {
		case e.ev[i] = <-ch:
			e.got[i] = true
		default:
		}
	}
}

// deleted reports whether the node of index i was deleted.
func (e *fired) deleted(i int) bool { return e.got[i] && e.ev[i].Type == session.EventNodeDeleted }

// afterEvents says what the events e of d's nodes leave: the lock ours
// (owns), or else the listing to decide again from (nil: list again).
func (q *queue) afterEvents(kids []Child, name string, d Decision, e fired) (owns bool, next []Child) {
	if e.deleted(0) && d.FastHandoff {
		return true, nil
	}
	// Any other change but the head's deletion (a waiter ahead gave up, a
	// node's data changed, a session event) needs a new listing.
	if !d.RefreshIsHead || !e.deleted(1) || (e.got[0] && !e.deleted(0)) || len(kids) == 0 || kids[0].Name != d.Refresh {
		return false, nil
	}
	next = kids[1:] // the head went: Watch is the head now
	if !e.got[0] {
		return false, next
	}
	// Watch went too (both events were in): with the head gone, nothing is
	// left ahead of ours if the driver grants the fast handoff on Watch's
	// deletion in the listing without the head.
	nd, err := q.Driver.Decide(next, indexOf(next, name))
	return err == nil && nd.Watch == d.Watch && nd.FastHandoff, nil
}

// setWatches watches the nodes watch and refresh ("" for none) unless
// they are watched already, with both requests in flight at once (one
// round trip), records them in ours and returns their channels; gone
// reports a node that no longer exists (list again).
func (q *queue) setWatches(ctx context.Context, ours *queued, watch, refresh string) (
	chans [2]<-chan session.Event, gone bool, err error) {
	names := [2]string{watch, refresh}
	var (
		errs [2]error
		set  [2]bool // a request is needed
	)
	for i, n := range names {
		if n != "" {
			chans[i], set[i] = ours.watchOf(n)
			set[i] = !set[i]
		}
	}
	switch {
	case set[0] && set[1]:
		type result struct {
			ch  <-chan session.Event
			err error
		}
		second := make(chan result) // always received
		go func() {
			ch, err := q.getW(ctx, refresh)
			second <- result{ch, err}
		}()
		chans[0], errs[0] = q.getW(ctx, watch)
		r := <-second
		chans[1], errs[1] = r.ch, r.err
	case set[0]:
		chans[0], errs[0] = q.getW(ctx, watch)
	case set[1]:
		chans[1], errs[1] = q.getW(ctx, refresh)
	}
	for i, n := range names {
		switch {
		case !set[i]:
		case errors.Is(errs[i], session.ErrNoNode):
			gone = true
		case errs[i] != nil:
			return chans, false, errs[i]
		default:
			ours.remember(n, chans[i])
		}
	}
	return chans, gone, nil
}

// getW watches the queue's node name.
func (q *queue) getW(ctx context.Context, name string) (<-chan session.Event, error) {
	_, ch, err := q.Conn.GetW(ctx, session.JoinPath(q.Path, name))
	return ch, err
}

// own turns an owning node into a held lease, trusting it only while the
// session it was created in is still trusted. A create answered while that
// session value was live ran in that session: go-zookeeper reports a new
// session (which ends the old value) before it sends anything on it, so the
// node's owner is our session without asking the server again.
func (q *queue) own(ctx context.Context, sess Session, node string, token int64,
	fail func(error) error) (*lease, error) {
	if err := sess.Err(); err != nil {
		return nil, fail(err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fail(err)
	}
	return newHolding(ctx, q.Conn, q.Owner, node, token, sess, false), nil
}

// create makes our protected ephemeral sequential node and returns it with
// its czxid, and the queue listed in the same round trip (when it could be);
// see createSettled for what happens to the node when it cannot be used.
func (q *queue) create(ctx context.Context, sess Session, st *acquireState) (created, error) {
	r, err := createSettled(ctx, sess, st, queueCreate{q: q, sess: sess, path: protectedPath(q.Path, q.LockName)})
	switch {
	case err != nil:
		return created{}, err
	case r.err != nil:
		return created{}, notAcquired(ctx, q.What, r.err)
	}
	return r, nil
}

// queueCreate is the creation of our node in a queue, at path.
type queueCreate struct {
	q    *queue
	sess Session
	path string
}

// try implements creation. No cancellation inside a request
// (createSettled stops waiting instead), so that the common path makes no
// extra goroutine hop.
func (c queueCreate) try() created {
	const flags = session.Ephemeral | session.PersistentSequential
	if c.q.NoListing {
		node, czxid, err := c.q.Conn.CreateWithZxid(context.Background(), c.path, c.q.Data, flags)
		return created{node: node, czxid: czxid, err: err}
	}
	node, czxid, kids, err := c.q.Conn.CreateAndList(context.Background(), c.path, c.q.Data, flags, c.q.Path)
	return created{node: node, czxid: czxid, err: err, children: kids}
}

// prefix is the protected prefix of our node's name.
func (c queueCreate) prefix() string {
	p, _ := protectedPrefixOf(session.BaseName(c.path))
	return p
}

// find implements creation.
func (c queueCreate) find() created { return c.q.findProtected(c.sess.Context(), c.sess, c.prefix()) }

// under implements creation.
func (c queueCreate) under(sess Session) creation {
	c.sess = sess
	return c
}

// settle implements creation.
func (c queueCreate) settle(r created) {
	if r.err == nil {
		cleanupInBackground(c.q.Conn, r.node, c.sess.ID(), nil)
		return
	}
	// The reply was lost: the node may exist. Find it by prefix.
	cleanupProtectedInBackground(c.q.Conn, c.q.Path, c.prefix(), c.sess.ID())
}

// acquireAt creates our node with a fixed sequence and owns it at once,
// while guard exists (the same transaction checks it).
func (q *queue) acquireAt(ctx context.Context, seq int64, guard string) (*lease, error) {
	sess, err := q.Conn.Session(ctx)
	if err != nil {
		return nil, notAcquired(ctx, q.What, err)
	}
	c := queueCreate{q: q, sess: sess, path: protectedPath(q.Path, fmt.Sprintf("%s%0*d", q.LockName, znode.SeqDigits, seq))}
	node, czxid, err := q.Conn.CreateWithZxid(ctx, c.path, q.Data, session.Ephemeral, guard)
	if err != nil {
		if !definitelyNotCreated(err) && !errors.Is(err, session.ErrGuardFailed) {
			cleanupProtectedInBackground(q.Conn, q.Path, c.prefix(), sess.ID())
		}
		return nil, notAcquired(ctx, q.What, err)
	}
	le, err := q.own(ctx, sess, node, czxid, func(err error) error { return notAcquired(ctx, q.What, err) })
	if err != nil {
		cleanupInBackground(q.Conn, node, sess.ID(), nil)
	}
	return le, err
}
