package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
)

// Named defaults of the background clean-up.
const (
	// cleanupTimeout bounds one clean-up attempt.
	cleanupTimeout = 10 * time.Second
	// syncCleanupTimeout bounds the delete a failed Acquire makes before it
	// returns; past it the delete goes on in the background.
	syncCleanupTimeout = 2 * time.Second
	// cleanupRetry is the first wait between attempts; it doubles up to
	// cleanupRetryCap.
	cleanupRetry    = 50 * time.Millisecond
	cleanupRetryCap = 2 * time.Second
)

// deleteNode removes a node named with our protected prefix (so it can be
// nobody else's). It returns nil once the node is gone or the client is
// closed, and the error otherwise: the caller retries. This ends, because a
// node whose session has ended is removed by the server (NoNode), and one
// whose create landed in the client's next session (a request queued during
// a disconnection) is deleted once connected. sessID is the session the node
// was created for, kept for the log.
func deleteNode(ctx context.Context, c Conn, path string, sessID int64) error {
	err := c.Delete(ctx, path, -1)
	if err == nil || errors.Is(err, session.ErrNoNode) || errors.Is(err, session.ErrClosed) {
		return nil
	}
	return fmt.Errorf("session 0x%x: %w", sessID, err)
}

// deleteProtected removes every node under parent whose name starts with
// prefix (a "_c_<uuid>-" of ours), except the one named except (none when
// ""): the node a create may have made before its reply was lost.
func deleteProtected(ctx context.Context, c Conn, parent, prefix, except string, sessID int64) error {
	names, err := c.Children(ctx, parent)
	if errors.Is(err, session.ErrNoNode) {
		return nil
	}
	if err != nil {
		if errors.Is(err, session.ErrClosed) {
			return nil
		}
		return err
	}
	for _, n := range names {
		if n != except && strings.HasPrefix(n, prefix) {
			if err := deleteNode(ctx, c, session.JoinPath(parent, n), sessID); err != nil {
				return err
			}
		}
	}
	return nil
}

// inBackground runs clean until it succeeds, retrying after retryable
// failures (connection loss) with backoff; clean itself returns nil once
// the session that owns the nodes has ended. done, if not nil, is closed
// when the work is over. Every failure path of the engine removes its node
// this way without making the caller wait.
func inBackground(c Conn, what string, clean func(ctx context.Context) error, done chan<- struct{}) {
	go func() {
		if done != nil {
			defer close(done)
		}
		wait := cleanupRetry
		for {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			err := clean(ctx)
			cancel()
			if err == nil {
				return
			}
			if !session.IsRetryable(err) && !errors.Is(err, context.DeadlineExceeded) {
				c.Logger().Error("lock node clean-up failed", "node", what, "err", err)
				return
			}
			c.Logger().Debug("lock node clean-up failed, retrying", "node", what, "err", err)
			time.Sleep(wait)
			wait = min(2*wait, cleanupRetryCap)
		}
	}()
}

// cleanupInBackground deletes node (of session sessID) in the background.
func cleanupInBackground(c Conn, node string, sessID int64, done chan<- struct{}) {
	inBackground(c, node, func(ctx context.Context) error { return deleteNode(ctx, c, node, sessID) }, done)
}

// cleanupProtectedInBackground deletes, in the background, any node under
// parent named with our protected prefix.
func cleanupProtectedInBackground(c Conn, parent, prefix string, sessID int64) {
	inBackground(c, session.JoinPath(parent, prefix+"*"), func(ctx context.Context) error {
		return deleteProtected(ctx, c, parent, prefix, "", sessID)
	}, nil)
}
