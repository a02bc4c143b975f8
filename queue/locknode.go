package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
)

// held is the lock nodes that a take or a Remove of this process holds,
// or is creating, by client, session and path. The consumers of one
// client share its session, so a lock node's owner cannot tell them
// apart: without this, one would take as its own (a create whose reply
// was lost) the node another holds, and both would handle the item. A
// node of our session that nobody here holds is such a leftover, ours to
// take.
var held sync.Map // heldKey → struct{}

type heldKey struct {
	c    *session.Client
	sess int64
	path string
}

// errHeldHere: another take of this process holds the lock node.
var errHeldHere = fmt.Errorf("queue: the lock node is held by another consumer of this client: %w", session.ErrNodeExists)

// unlockTimeout bounds the deletion of a lock node after its item: the
// node is ephemeral, so a deletion that cannot be made goes with the
// session.
const unlockTimeout = 10 * time.Second

// acquire makes the ephemeral lock node of an item under sess and returns
// its release (unlock, when done with the item). An error wrapping
// session.ErrNodeExists means another consumer has it.
//
// The create is not cut short by ctx: a request given up on may still be
// sent after what follows it, so its node could outlive any clean-up,
// and left there it would keep every other consumer from the item as
// long as our session lives. A create that failed with its outcome
// unknown (its reply lost, the retries spent) is undone if the server
// made it. One still unanswered after unlockTimeout (no connection) is
// left: a node it makes is ours to take again (see held), or goes with
// the session.
func (q *Queue) acquire(ctx context.Context, sess *session.Session, lock string) (func(), error) {
	k := heldKey{c: q.c, sess: sess.ID(), path: lock}
	if _, busy := held.LoadOrStore(k, struct{}{}); busy {
		return nil, errHeldHere
	}
	release := func() { held.Delete(k) }
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer cancel()
	_, _, err := q.c.CreateWithZxid(cctx, lock, nil, session.Ephemeral)
	switch {
	case err == nil:
		return release, nil
	case errors.Is(err, session.ErrNoNode):
		release()
		return nil, err
	case errors.Is(err, session.ErrNodeExists):
		// Ours when our session made it and nobody here holds it: the
		// leftover of a create whose reply was lost.
		ok, st, xerr := q.c.Exists(ctx, lock)
		switch {
		case xerr != nil:
			release()
			return nil, xerr
		case !ok:
			release()
			return nil, fmt.Errorf("queue: lock node %s gone meanwhile: %w", lock, session.ErrNoNode)
		case st.EphemeralOwner == sess.ID():
			return release, nil
		}
		release()
		return nil, err
	}
	if cctx.Err() == nil {
		q.unmade(ctx, sess, lock)
	}
	release()
	return nil, err
}

// unmade deletes the lock node of a create whose outcome is unknown, if
// our session made it (nobody here holds it: acquire's caller does).
func (q *Queue) unmade(ctx context.Context, sess *session.Session, lock string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer cancel()
	ok, st, err := q.c.Exists(ctx, lock)
	if err == nil && ok && st.EphemeralOwner == sess.ID() {
		err = q.c.Delete(ctx, lock, st.Version)
	}
	if err != nil && !errors.Is(err, session.ErrNoNode) {
		q.c.Logger().Warn("queue: lock node of an unanswered create not deleted; it goes with the session", "path", lock, "err", err)
	}
}

// unlock deletes a lock node that acquire made, then releases it.
func (q *Queue) unlock(ctx context.Context, lock string, release func()) {
	defer release()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer cancel()
	if err := q.c.Delete(ctx, lock, -1); err != nil && !errors.Is(err, session.ErrNoNode) {
		q.c.Logger().Warn("queue: lock node not deleted; it goes with the session", "path", lock, "err", err)
	}
}
