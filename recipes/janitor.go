package recipes

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/session"
)

// Named defaults of the background clean-up.
const (
	// cleanupTimeout bounds one delete attempt of a node left behind.
	cleanupTimeout = 10 * time.Second
	// cleanupRetry is the first wait between attempts; it doubles up to
	// cleanupRetryCap.
	cleanupRetry    = 50 * time.Millisecond
	cleanupRetryCap = 2 * time.Second
)

// deleteNode removes a node of session sessID. It returns nil once the node
// is gone, or once it no longer matters: the client moved to another
// session (ephemeral nodes of the old one die with it) or was closed.
func deleteNode(ctx context.Context, c *session.Client, path string, sessID int64) error {
	err := c.Delete(ctx, path, -1)
	if err == nil || errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if errors.Is(err, session.ErrClosed) || !sessionMayLive(c, sessID) {
		return nil
	}
	return err
}

// sessionMayLive reports whether ZooKeeper session sessID may still hold
// ephemeral nodes that this client could delete.
func sessionMayLive(c *session.Client, sessID int64) bool {
	cur := c.CurrentSession()
	return cur != nil && cur.ID() == sessID && c.State() != session.Closed
}

// cleanupInBackground deletes path, retrying after failures (connection
// loss) until the node is gone or the session that owns it has ended. done,
// if not nil, is closed when the work is over. It is how every failure path
// of the engine removes its node without making the caller wait.
func cleanupInBackground(c *session.Client, path string, sessID int64, done chan<- struct{}) {
	go func() {
		if done != nil {
			defer close(done)
		}
		wait := cleanupRetry
		for {
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			err := deleteNode(ctx, c, path, sessID)
			cancel()
			if err == nil {
				return
			}
			if !session.IsRetryable(err) && !errors.Is(err, context.DeadlineExceeded) {
				c.Logger().Error("lock node clean-up failed", "node", path, "err", err)
				return
			}
			c.Logger().Debug("lock node clean-up failed, retrying", "node", path, "err", err)
			time.Sleep(wait)
			wait = min(2*wait, cleanupRetryCap)
		}
	}()
}
