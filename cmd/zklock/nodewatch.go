package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// nodeWatchRetry is the pause before watchNode tries again after an error.
const nodeWatchRetry = time.Second

// watchNode watches the lease's lock node and sends, once, why the lock is
// lost when the node is deleted, or replaced by a node that is not ours.
//
// The library ends a lease only when its session ends: it does not watch
// the lock node, to save a request per acquisition (docs/design.md). For
// zklock, which takes one lock per run, the request is cheap, and deleting
// the node is how an operator breaks a stuck lock: the next waiter then
// holds it, so COMMAND must stop. The watch ends with the lease.
func watchNode(c *session.Client, lease znode.Lease) <-chan error {
	out := make(chan error, 1)
	ctx := lease.Context()
	node := lease.Node()
	go func() {
		for ctx.Err() == nil {
			_, st, ev, err := c.GetW(ctx, node)
			switch {
			case errors.Is(err, session.ErrNoNode):
				out <- fmt.Errorf("lock node %s was deleted", node)
				return
			case err != nil:
				// ctx ended, or the connection failed for longer than the
				// retry policy allows (the session's end, if it comes, ends
				// the lease), or the server refused: look again later.
				select {
				case <-ctx.Done():
				case <-time.After(nodeWatchRetry):
				}
				continue
			case st.EphemeralOwner != lease.SessionID():
				out <- fmt.Errorf("lock node %s was replaced by a node of session 0x%x", node, st.EphemeralOwner)
				return
			}
			select {
			case e := <-ev:
				if e.Type == session.EventNodeDeleted {
					out <- fmt.Errorf("lock node %s was deleted", node)
					return
				}
				if e.Type == session.EventNotWatching {
					<-ctx.Done() // the session ended: so does the lease
					return
				}
				// Its data changed: watch again.
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
