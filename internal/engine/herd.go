package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
	"github.com/zkrecipes/zkrecipes/session"
)

// Herd is the simplest exclusive lock: whoever creates the ephemeral node
// Path/Name holds the lock; everyone else watches the children of Path and
// tries again when they change. No queue, so no fairness, and every waiter
// wakes at every change (the herd effect). It shares the engine's leases,
// clean-up and loss signal; the exclusive package wraps it. It is not
// reentrant.
type Herd struct {
	Conn Conn
	What string // names the lock in errors: its recipe's String ("exclusive /locks/orders")
	Path string // the parent, watched by waiters
	Name string // the lock node's name
	Data []byte
}

func (l *Herd) node() string { return session.JoinPath(l.Path, l.Name) }

// Acquire waits for the lock (try: fails at once with ErrLocked). In a call
// chain that holds it, it fails at once with ErrNotReentrant.
func (l *Herd) Acquire(ctx context.Context, try bool) (recipes.Lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, err
	}
	if heldBy(ctx, l) != nil {
		return nil, fmt.Errorf("%w: %s", recipes.ErrNotReentrant, l.What)
	}
	a := hold.Begin(ctx, l.Conn.Trace(), locktrace.LockID{Backend: Backend, Kind: "exclusive", Name: l.Path}, try)
	le, err := acquireLoop(ctx, l.Conn, l.What, a, func(sess Session, st *acquireState) (*lease, error) {
		return l.attempt(ctx, sess, st, try)
	})
	if err != nil {
		a.Done(nil, err, false)
		return nil, err // not a typed nil in the interface
	}
	a.Done(le, nil, false)
	return le, nil
}

// attempt tries to create the node, waiting on the parent's children
// between tries, under one session value.
func (l *Herd) attempt(ctx context.Context, sess Session, st *acquireState, try bool) (*lease, error) {
	octx, cancel := opCtx(ctx, sess)
	defer cancel()
	fail := attemptFailed(ctx, sess, l.What)
	for {
		token, err := l.create(ctx, sess, st)
		if err == nil {
			return newHolding(ctx, l.Conn, l, l.node(), token, sess, true), nil
		}
		if !errors.Is(err, session.ErrNodeExists) {
			return nil, fail(err)
		}
		st.a.Queued()
		if try {
			return nil, fmt.Errorf("%w: %s", recipes.ErrLocked, l.What)
		}
		kids, ev, err := l.Conn.ChildrenW(octx, l.Path)
		if errors.Is(err, session.ErrNoNode) {
			continue // released, and the empty parent reaped: create again
		}
		if err != nil {
			return nil, fail(err)
		}
		if !slices.Contains(kids, l.Name) {
			continue // released meanwhile
		}
		select {
		case <-ev:
		case <-octx.Done():
			return nil, fail(context.Cause(octx))
		}
	}
}

// create makes the lock node and returns its czxid; session.ErrNodeExists when
// someone else holds it. After a lost reply, the node is ours only if its
// ephemeral owner is our session; a node the create may have made and that
// is not used is removed only while it is still ours (see deleteIfOurs).
func (l *Herd) create(ctx context.Context, sess Session, st *acquireState) (int64, error) {
	r, err := createSettled(ctx, sess, st, herdCreate{l, sess})
	if err != nil {
		return 0, err
	}
	return r.czxid, r.err
}

// herdCreate is the creation of the lock node.
type herdCreate struct {
	l    *Herd
	sess Session
}

// try implements creation.
func (c herdCreate) try() created {
	node, czxid, err := c.l.Conn.CreateWithZxid(context.Background(), c.l.node(), c.l.Data, session.Ephemeral)
	return created{node: node, czxid: czxid, err: err}
}

// find implements creation.
func (c herdCreate) find() created { return c.l.findOurs(c.sess) }

// under implements creation.
func (c herdCreate) under(sess Session) creation {
	c.sess = sess
	return c
}

// settle implements creation.
func (c herdCreate) settle(r created) {
	inBackground(c.l.Conn, c.l.node(), func(ctx context.Context) error {
		return c.l.deleteIfOurs(ctx, c.sess.ID(), r.czxid)
	}, nil)
}

// findOurs reads the lock node after a lost create reply.
func (l *Herd) findOurs(sess Session) created {
	_, st, err := l.Conn.Get(sess.Context(), l.node())
	switch {
	case errors.Is(err, session.ErrNoNode):
		return created{} // not created: try again
	case err != nil:
		return created{err: err}
	case st.EphemeralOwner == sess.ID():
		return created{node: l.node(), czxid: st.Czxid}
	default:
		return created{err: session.ErrNodeExists}
	}
}

// deleteIfOurs removes the lock node only when it is the one our create
// made: the czxid our create returned (whichever session it landed in), or,
// when the reply was lost (czxid 0), a node that session sessID owns.
func (l *Herd) deleteIfOurs(ctx context.Context, sessID, czxid int64) error {
	_, st, err := l.Conn.Get(ctx, l.node())
	switch {
	case errors.Is(err, session.ErrNoNode), errors.Is(err, session.ErrClosed):
		return nil
	case err != nil:
		if czxid == 0 && !l.Conn.SessionMayLive(sessID) {
			return nil // the session's nodes are gone or going
		}
		return err
	case czxid != 0 && st.Czxid != czxid, czxid == 0 && st.EphemeralOwner != sessID:
		return nil // another holder's node
	}
	err = l.Conn.Delete(ctx, l.node(), st.Version)
	if err == nil || errors.Is(err, session.ErrNoNode) || errors.Is(err, session.ErrBadVersion) {
		return nil
	}
	return err
}
