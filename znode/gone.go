package znode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// goneRetry is WaitGone's pause before it reads again after a failed
// read that may succeed later: short beside any session timeout, long
// enough not to spin while the client connects.
const goneRetry = session.DefaultRetryBase

// Gone is how a participant's node went (Participant.WaitGone).
type Gone struct {
	// Replaced is true when another node is at the path now (the exclusive
	// lock's one node, taken by the next holder), false when the node was
	// deleted.
	Replaced bool
	// Owner is the ephemeral owner of the node now at the path (0 for a
	// persistent node) when Replaced.
	Owner int64
}

// WaitGone waits until the participant's node is gone, watching it (one
// read with a watch, again after each change of its data): deleted, or
// replaced by another node at its path (one whose ephemeral owner is not
// SessionID, or that was created after the one first seen). Its holder,
// if it held the lock, no longer does then; to watch the node of a lease
// of one's own, give its Node and SessionID:
//
//	p := znode.Participant{Path: zl.Node(), SessionID: zl.SessionID()}
//	gone, err := p.WaitGone(zl.Context(), c)
//
// Only Path and SessionID are used, and Created when set (a node at Path
// made at another time is a replacement).
//
// WaitGone reports only what it saw: a node it could not read is not
// taken as gone. While c's connection is down it waits for it (under c's
// retry policy, then again); a watch lost with c's session is set again
// under c's next session, and the node read anew: an ephemeral node whose
// session expired meanwhile is found gone then. It returns an error only
// when ctx ends (the error is ctx.Err() and its cause), when c is closed
// (session.ErrClosed), for a Participant with no Path
// (recipes.ErrInvalidArgument) or when the server refuses the read
// (session.ErrNoAuth, for one).
func (p Participant) WaitGone(ctx context.Context, c *session.Client) (Gone, error) {
	switch {
	case c == nil:
		return Gone{}, fmt.Errorf("znode: %w: wait for a node to go: nil session client", recipes.ErrInvalidArgument)
	case p.Path == "":
		return Gone{}, fmt.Errorf("znode: %w: wait for a node to go: the Participant has no Path", recipes.ErrInvalidArgument)
	}
	if ctx == nil {
		return Gone{}, fmt.Errorf("znode: %w: wait for %s to go: nil context", recipes.ErrInvalidArgument, p.Path)
	}
	var czxid int64 // of the node first seen: a later node is a replacement
	for {
		_, st, ev, err := c.GetW(ctx, p.Path)
		switch {
		case errors.Is(err, session.ErrNoNode):
			return Gone{}, nil
		case ctx.Err() != nil:
			return Gone{}, ctxEnded(ctx, p.Path)
		case err != nil && (session.IsRetryable(err) || errors.Is(err, session.ErrRetriesExhausted) ||
			errors.Is(err, session.ErrSessionExpired)):
			// The connection is down, for longer than the retry policy
			// allows, or the session just expired (go-zookeeper fails
			// the requests in flight when it learns that; c makes a new
			// session): ask again, after a pause.
			select {
			case <-ctx.Done():
				return Gone{}, ctxEnded(ctx, p.Path)
			case <-time.After(goneRetry):
			}
			continue
		case err != nil:
			return Gone{}, fmt.Errorf("znode: wait for %s to go: %w", p.Path, err)
		case st.EphemeralOwner != p.SessionID,
			czxid != 0 && st.Czxid != czxid,
			!p.Created.IsZero() && st.Ctime != p.Created.UnixMilli():
			return Gone{Replaced: true, Owner: st.EphemeralOwner}, nil
		}
		czxid = st.Czxid
		select {
		case e := <-ev:
			if e.Type == session.EventNodeDeleted {
				return Gone{}, nil
			}
			// Its data changed, or the watch was lost with the session
			// (session.EventNotWatching): read it again.
		case <-ctx.Done():
			return Gone{}, ctxEnded(ctx, p.Path)
		}
	}
}

// ctxEnded is WaitGone's error when ctx ended: ctx.Err() and its cause.
func ctxEnded(ctx context.Context, path string) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if errors.Is(cause, err) {
		return fmt.Errorf("znode: wait for %s to go: %w", path, err)
	}
	return fmt.Errorf("znode: wait for %s to go: %w (%w)", path, err, cause)
}
