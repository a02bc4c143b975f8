package recipes

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/session"
)

// NodeLock is the simplest exclusive lock: whoever creates the ephemeral
// node Path/Name holds the lock; everyone else watches the children of Path
// and tries again when they change. No queue, so no fairness, and every
// waiter wakes at every change (the herd effect). It shares the engine's
// leases, clean-up and loss signal; the exclusive package wraps it.
type NodeLock struct {
	Client *session.Client
	Path   string // the parent, watched by waiters
	Name   string // the lock node's name
	Data   []byte
}

func (l *NodeLock) node() string { return session.JoinPath(l.Path, l.Name) }

// Acquire waits for the lock (try: fails at once with ErrLocked).
func (l *NodeLock) Acquire(ctx context.Context, try bool) (Lease, error) {
	if err := CheckContext(ctx); err != nil {
		return nil, err
	}
	if h, ok := ctx.Value(holdingKey{l}).(*holding); ok && h.ctx.Err() == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotReentrant, l.node())
	}
	h, err := acquireLoop(ctx, l.Client, l.node(), func(sess *session.Session, st *acquireState) (*holding, error) {
		return l.attempt(ctx, sess, st, try)
	})
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return h, nil
}

// attempt tries to create the node, waiting on the parent's children
// between tries, under one session.
func (l *NodeLock) attempt(ctx context.Context, sess *session.Session, st *acquireState, try bool) (*holding, error) {
	octx, cancel := opCtx(ctx, sess)
	defer cancel()
	fail := attemptFailed(ctx, sess, l.node())
	for {
		token, err := l.create(ctx, sess, st)
		if err == nil {
			return newHolding(ctx, l.Client, l, l.node(), token, sess, true), nil
		}
		if !errors.Is(err, zk.ErrNodeExists) {
			return nil, fail(err)
		}
		if try {
			return nil, fmt.Errorf("%w: %s", ErrLocked, l.node())
		}
		kids, _, ev, err := l.Client.ChildrenW(octx, l.Path)
		if errors.Is(err, zk.ErrNoNode) {
			continue // released, and the empty parent reaped: create again
		}
		if err != nil {
			return nil, fail(err)
		}
		if !contains(kids, l.Name) {
			continue // released meanwhile
		}
		select {
		case <-ev:
		case <-octx.Done():
			return nil, fail(context.Cause(octx))
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// create makes the lock node and returns its czxid; zk.ErrNodeExists when
// someone else holds it. The create runs on its own so that it cannot be
// abandoned half-way: if ctx or the session ends first, a node it made is
// removed in the background. After a lost reply, the node is ours only if
// its ephemeral owner is our session.
func (l *NodeLock) create(ctx context.Context, sess *session.Session, st *acquireState) (int64, error) {
	res := make(chan created, 1)
	go func() {
		for {
			if sess.Err() != nil {
				res <- created{err: errSessionEnded}
				return
			}
			node, czxid, err := l.Client.CreateWithZxid(context.Background(), l.node(), l.Data, zk.FlagEphemeral)
			if err == nil {
				st.drops.Store(0)
			}
			if !session.IsRetryable(err) {
				res <- created{node, czxid, err}
				return
			}
			if stop := st.noteCreateDrop(err); stop != nil || sess.Err() != nil {
				res <- created{err: cmp.Or(stop, err)}
				return
			}
			r := l.findOurs(sess)
			if r.err != nil || r.node != "" {
				res <- r
				return
			}
		}
	}()
	settle := func(r created) {
		if r.err == nil || !definitelyNotCreated(r.err) {
			inBackground(l.Client, l.node(), func(ctx context.Context) error { return l.deleteIfOurs(ctx, sess.ID(), r.czxid) }, nil)
		}
	}
	select {
	case r := <-res:
		if r.err == nil && sess.Err() != nil {
			// Created, but the session value ended meanwhile: not a lease.
			settle(r)
			return 0, errSessionEnded
		}
		if r.err != nil && !errors.Is(r.err, zk.ErrNodeExists) {
			settle(r)
			if sess.Err() != nil {
				return 0, errSessionEnded
			}
		}
		return r.czxid, r.err
	case <-sess.Done():
		go func() { settle(<-res) }()
		return 0, errSessionEnded
	case <-ctx.Done():
		go func() { settle(<-res) }()
		return 0, NotAcquired(ctx)
	}
}

// findOurs reads the lock node after a lost create reply.
func (l *NodeLock) findOurs(sess *session.Session) created {
	_, st, err := l.Client.Get(sess.Context(), l.node())
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return created{} // not created: try again
	case err != nil:
		return created{err: err}
	case st.EphemeralOwner == sess.ID():
		return created{node: l.node(), czxid: st.Czxid}
	default:
		return created{err: zk.ErrNodeExists}
	}
}

// deleteIfOurs removes the lock node only when it is the one our create
// made: the czxid our create returned (whichever session it landed in), or,
// when the reply was lost (czxid 0), a node that session sessID owns.
func (l *NodeLock) deleteIfOurs(ctx context.Context, sessID, czxid int64) error {
	_, st, err := l.Client.Get(ctx, l.node())
	switch {
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, session.ErrClosed):
		return nil
	case err != nil:
		if czxid == 0 && !sessionMayLive(l.Client, sessID) {
			return nil // the session's nodes are gone or going
		}
		return err
	case czxid != 0 && st.Czxid != czxid, czxid == 0 && st.EphemeralOwner != sessID:
		return nil // another holder's node
	}
	err = l.Client.Delete(ctx, l.node(), st.Version)
	if err == nil || errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrBadVersion) {
		return nil
	}
	return err
}
