package session

import (
	"context"
	"slices"
	"sync"
)

// callOrder keeps an operation from reaching the server before a write
// of the same client that was abandoned: its caller's context ended before
// it was answered, and callOnce returned while its goroutine still runs.
// Without it, a clean-up issued after a cancelled create (the delete of
// the node it was making, or the read that looks for it first) can
// overtake the create, which then lands and leaves the node behind.
//
// The rule: an operation waits, before it takes a connection, until every
// call abandoned before it began has returned (each of its requests
// answered or failed), or its own context ends (or the client closes).
// Reads wait too: every clean-up here decides by reading first (is the
// node there, is it ours), and a read that overtakes the create finds
// nothing to delete. Operations that nobody abandoned keep their
// concurrency. An abandoned read is recorded like a write (callOnce does
// not tell them apart): waiting for it costs at most its reply.
//
// Why it is enough (go-zookeeper v1.0.4, conn.go):
//   - Every request is queued in one FIFO channel (sendChan, which outlives
//     reconnections), written by one sendLoop at a time in that order; the
//     server processes a session's requests in order, and rejects a write
//     that reaches it through a member the session moved away from
//     (SessionMoved). So a request queued after another's reply is
//     processed after it.
//   - A request fails only when it will never be written afterward: those
//     on the wire when their connection's loops have ended (flushRequests),
//     those still queued when every server was tried (flushUnsentRequests),
//     those met by a closed connection (sendData, queueRequest).
//
// So once an abandoned call's function has returned, each of its requests
// is applied, refused, or will never be sent, and a request queued after
// that is processed after it or alone. Only a request waiting for its
// goroutine to be scheduled, or for room in sendChan (16 requests; senders
// block while disconnected), or the later requests of a call that makes
// several (a create making its parents), could overtake it, and that is
// what the wait removes: the moment go-zookeeper queues a request cannot be
// seen from outside, so the rule waits for its outcome.
//
// The hole left: when the client closes or replaces its zk.Conn (Close, a
// simulated expiry), go-zookeeper's request returns ErrConnectionClosed at
// once, though the request may still be queued ahead of the session's
// close request and be sent on the old connection; a write of the new
// session is then not ordered after it, as ZooKeeper orders nothing across
// sessions.
//
// Cost: nothing until a call is abandoned (a lock and a length check per
// call, and a channel per call whose context can end); then operations
// issued meanwhile wait for the abandoned call's replies, a round trip or
// a few on a working connection, or until the connection's loss fails it
// (the watchdog drops a connection that stops answering).
type callOrder struct {
	mu        sync.Mutex
	abandoned []chan struct{} // each closed once its call has returned
}

// abandon records a call whose caller has gone: done is closed once its
// function returns.
func (o *callOrder) abandon(done chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pruneLocked()
	o.abandoned = append(o.abandoned, done)
}

// wait returns once every call abandoned so far has returned, or ctx ends
// (its error), or closed is closed (ErrClosed).
func (o *callOrder) wait(ctx context.Context, closed <-chan struct{}) error {
	o.mu.Lock()
	o.pruneLocked()
	if len(o.abandoned) == 0 {
		o.mu.Unlock()
		return nil
	}
	pending := slices.Clone(o.abandoned) // abandon may append to, and prune, the shared slice
	o.mu.Unlock()
	for _, done := range pending {
		select {
		case <-done:
		case <-closed:
			return ErrClosed
		case <-ctx.Done():
			return ctxError(ctx)
		}
	}
	return nil
}

// pruneLocked forgets the abandoned calls that have returned.
func (o *callOrder) pruneLocked() {
	o.abandoned = slices.DeleteFunc(o.abandoned, func(done chan struct{}) bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
}
