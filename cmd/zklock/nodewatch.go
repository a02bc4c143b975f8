package main

import (
	"fmt"

	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// watchNode watches the lease's lock node and sends, once, why the lock is
// lost when the node is deleted, or replaced by a node that is not ours.
//
// The library ends a lease only when its session ends: it does not watch
// the lock node, to save a request per acquisition (docs/design.md). For
// zklock, which takes one lock per run, the request is cheap, and deleting
// the node is how an operator breaks a stuck lock: the next waiter then
// holds it, so COMMAND must stop. The watch ends with the lease, and sends
// nothing then: the lease's own cause says why (a node seen gone after the
// session ended went with the session).
func watchNode(c *session.Client, lease znode.Lease) <-chan error {
	out := make(chan error, 1)
	ctx := lease.Context()
	p := znode.Participant{Path: lease.Node(), SessionID: lease.SessionID()}
	go func() {
		g, err := p.WaitGone(ctx, c)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			// The server refused the read (an ACL that changed): the lease
			// still tells of a lost session.
		case g.Replaced:
			out <- fmt.Errorf("lock node %s was replaced by a node of session 0x%x", p.Path, g.Owner)
		default:
			out <- fmt.Errorf("lock node %s was deleted", p.Path)
		}
	}()
	return out
}
