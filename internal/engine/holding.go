package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// holding is the node (or, for a semaphore's n leases, the nodes) that
// holds a lock: the ZooKeeper side of a hold.Holding, which keeps the
// leases that re-entered it. The holding ends, with a cause that is
// ErrLockLost, when the session value it was taken under ends; the last
// Release deletes the nodes.
type holding struct {
	rh    hold.Holding[*holding]
	conn  Conn
	node  string   // client path of the lock node (the first, for a semaphore)
	more  []string // a semaphore's other lease nodes
	token int64
	sess  Session
	// shared marks a node at a fixed path that another holder may create
	// after ours is gone (the exclusive lock): it is deleted only after
	// checking that it is still ours (same czxid).
	shared bool
	// revoked, for a revocable lock, fires when someone asks for it
	// (Curator's revocation); nil otherwise.
	revoked *revocation
}

// newHolding starts holding a freshly acquired node and returns its first
// lease. It needs no goroutine: the session value tells the holding when it
// ends (SessionEnded). base supplies the context
// values (not the cancellation) of the Acquire call; owner is the lock,
// for re-entry; shared: see holding.shared.
func newHolding(base context.Context, c Conn, owner any, node string, token int64,
	sess Session, shared bool, more ...string) *lease {
	h := &holding{conn: c, node: node, more: more, token: token, sess: sess, shared: shared}
	first := &lease{h: h}
	h.rh.Start(&first.Lease, base, owner, token, true, h)
	if !sess.Watch(h) {
		go h.SessionEnded(sess.Err())
	}
	return first
}

// SessionEnded implements session.Watcher: the holding is lost.
func (h *holding) SessionEnded(cause error) {
	h.lose(fmt.Errorf("%w: %s: %w", recipes.ErrLockLost, h.node, cause))
}

// ServerDeadline implements hold.ServerDeadliner: when the server may
// expire the session the lock was taken under.
func (h *holding) ServerDeadline() (time.Time, bool) { return h.sess.ServerDeadline() }

// heldBy returns the live holding of owner that ctx carries, or nil.
func heldBy(ctx context.Context, owner any) *holding {
	if rh := hold.HeldBy[*holding](ctx, owner); rh != nil {
		return rh.Impl()
	}
	return nil
}

// Holds reports whether ctx carries a live holding of owner's lock (ctx
// comes from one of its leases): for a recipe that is not reentrant, and
// refuses to wait for itself.
func Holds(ctx context.Context, owner any) bool { return heldBy(ctx, owner) != nil }

// reenter adds a lease to a live holding; nil when it has ended.
func (h *holding) reenter() *lease {
	if le := (&lease{h: h}); h.rh.ReenterInto(&le.Lease) {
		return le
	}
	return nil
}

// lose ends the holding because the lock can no longer be trusted, and
// removes the node in the background if the session may still hold it.
func (h *holding) lose(cause error) {
	h.rh.Lose(cause)
	inBackground(h.conn, h.node, h.removeQuietly, nil)
}

// Free deletes the node at the last Release. A failed delete (connection
// loss) is retried in the background until it succeeds or the session
// ends; a node found already gone means the lock was lost.
func (h *holding) Free(ctx context.Context) error {
	h.sess.Unwatch(h)
	err := h.removeOnRelease(ctx)
	if errors.Is(err, errNodeGone) {
		return fmt.Errorf("%w: %s: %w", recipes.ErrLockLost, h.node, err)
	}
	if err != nil {
		inBackground(h.conn, h.node, h.removeQuietly, nil)
		return fmt.Errorf("release %s: its delete will be retried in the background: %w", h.node, err)
	}
	return nil
}

// errNodeGone: the holding's node was already gone (or, at a shared path,
// is another holder's) when we came to delete it.
var errNodeGone = errors.New("lock node was deleted by someone else while held")

// remove deletes the holding's nodes. It returns errNodeGone when one was
// not there to delete; nil once they are deleted or no longer matter (the
// session ended). A node at a shared path is deleted only while it is still
// ours.
func (h *holding) remove(ctx context.Context) error {
	var gone error
	for _, n := range h.more {
		switch err := h.conn.Delete(ctx, n, -1); {
		case errors.Is(err, session.ErrNoNode):
			gone = errNodeGone
		case err != nil:
			if err = h.unlessSessionEnded(err); err != nil {
				return err
			}
		}
	}
	if err := h.removeFirst(ctx); err != nil {
		return err
	}
	return gone
}

// removeFirst deletes the holding's first (or only) node.
func (h *holding) removeFirst(ctx context.Context) error {
	version := int32(-1)
	if h.shared {
		_, st, err := h.conn.Get(ctx, h.node)
		switch {
		case errors.Is(err, session.ErrNoNode):
			return errNodeGone
		case err != nil:
			return h.unlessSessionEnded(err)
		case st.Czxid != h.token || st.EphemeralOwner != h.sess.ID():
			return errNodeGone // never delete another holder's node
		}
		version = st.Version
	}
	err := h.conn.Delete(ctx, h.node, version)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, session.ErrNoNode), errors.Is(err, session.ErrBadVersion):
		return errNodeGone
	}
	return h.unlessSessionEnded(err)
}

// unlessSessionEnded drops err when the session that owned the node has
// ended: its ephemeral nodes are gone or going.
func (h *holding) unlessSessionEnded(err error) error {
	if errors.Is(err, session.ErrClosed) || !h.conn.SessionMayLive(h.sess.ID()) {
		return nil
	}
	return err
}

// removeQuietly is remove for background clean-up: a node already gone is
// done.
func (h *holding) removeQuietly(ctx context.Context) error {
	if err := h.remove(ctx); !errors.Is(err, errNodeGone) {
		return err
	}
	return nil
}

// removeOnRelease is remove, retried by hand so that a node found gone
// after a lost reply counts as deleted by us, not by someone else.
func (h *holding) removeOnRelease(ctx context.Context) error {
	err := h.remove(session.WithoutRetry(ctx))
	if !session.IsRetryable(err) {
		return err
	}
	// The first delete may have been applied: from now on, gone is done.
	return retryRemove(ctx, err, h.removeQuietly)
}

// retryRemove retries a clean-up that failed with err, a few times while
// ctx allows; it returns nil only once clean succeeded.
func retryRemove(ctx context.Context, err error, clean func(context.Context) error) error {
	wait := cleanupRetry
	for range 5 {
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		if err = clean(ctx); err == nil || !session.IsRetryable(err) {
			return err
		}
		wait = min(2*wait, cleanupRetryCap)
	}
	return err
}
