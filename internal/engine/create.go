package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// created is the outcome of a create: the node and its czxid (and the
// listing pipelined behind it, if any), or why not.
type created struct {
	node     string
	czxid    int64
	err      error
	children []string
}

// definitelyNotCreated reports whether a failed create surely made no node:
// the server answered with an error (not a lost connection or an abandoned
// wait).
func definitelyNotCreated(err error) bool {
	return !session.IsRetryable(err) && !errors.Is(err, context.Canceled) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, errSessionEnded) &&
		!errors.Is(err, session.ErrClosed)
}

// errCreateCut: the session value ended while our create was out, most
// often with a dropped connection (acquireLoop counts these, see
// maxCreateDrops). It is errSessionEnded.
var errCreateCut = fmt.Errorf("%w while our create was out", errSessionEnded)

// creation is one create of a lock's node, as createSettled runs it.
type creation interface {
	// try makes one create.
	try() created
	// find looks, after a lost reply, for the node the create may have
	// made (none: created{}).
	find() created
	// settle removes, in the background, what the create may have made and
	// will not be used (r.err set: the reply was lost).
	settle(r created)
	// under is the same create (the same node name, the same protected
	// prefix) under sess, a later value of its ZooKeeper session.
	under(sess Session) creation
}

// outCreate is a create of ours that was still out (or whose node was made
// too late to be used) when its session value ended, most often because
// the connection dropped and its reply with it. acquireLoop hands it to the
// next attempt, which takes it over (takeOver) if the ZooKeeper session is
// the same, and settles it otherwise.
type outCreate struct {
	c       creation
	session int64          // the ZooKeeper session it was made for
	res     <-chan created // its outcome: retryCreate stops soon after its value ends
}

// handOver leaves c, sent in session id, to the next attempt; res brings
// its outcome.
func (st *acquireState) handOver(c creation, id int64, res <-chan created) {
	st.out = &outCreate{c: c, session: id, res: res}
}

// resolved is a channel that holds r.
func resolved(r created) <-chan created {
	ch := make(chan created, 1)
	ch <- r
	return ch
}

// createSettled makes our node with c, or, when st holds a create of ours
// that an earlier value of sess's ZooKeeper session left out, takes that one
// over instead (see takeOver; c is then unused).
func createSettled[C creation](ctx context.Context, sess Session, st *acquireState, c C) (created, error) {
	if st.out != nil {
		return takeOver(ctx, sess, st)
	}
	return runCreate(ctx, sess, st, c, false)
}

// runCreate runs c (retryCreate; look: find the node first) on its own
// goroutine, since a create cannot be abandoned half-way (it may land on the
// server after we stopped waiting), and returns its outcome while ctx and
// the session value allow. When the session value ends first, the create is
// handed over to the next attempt (st.out) with errCreateCut. Whatever else
// the create may have made and will not be used is handed to c.settle: the
// node of a create that finished after ctx ended, or after a lost reply
// that the search did not resolve. A create the server refused (r.err set,
// and nothing made) is returned for the caller to handle. When nothing can
// cancel ctx, c runs on this goroutine: no hop.
func runCreate[C creation](ctx context.Context, sess Session, st *acquireState, c C, look bool) (created, error) {
	if ctx.Done() == nil {
		return settled(sess, st, c, retryCreate(sess, st, c, look))
	}
	res := make(chan created, 1)
	go func() { res <- retryCreate(sess, st, c, look) }()
	select {
	case r := <-res:
		return settled(sess, st, c, r)
	case <-sess.Done():
		st.handOver(c, sess.ID(), res)
		return created{}, errCreateCut
	case <-ctx.Done():
		go func() { settleMade(c, <-res) }()
		return created{}, recipes.NotAcquired(ctx)
	}
}

// settled is runCreate's outcome of r.
func settled[C creation](sess Session, st *acquireState, c C, r created) (created, error) {
	if r.err == nil && sess.Err() == nil {
		return r, nil
	}
	if sess.Err() != nil {
		// Made, or maybe made: the node is the session's, not the value's
		// (see takeOver). Refused: nothing to hand over.
		if r.err == nil || !definitelyNotCreated(r.err) {
			st.handOver(c, sess.ID(), resolved(r))
		}
		return created{}, errCreateCut
	}
	settleMade(c, r)
	return r, nil
}

// settleMade settles r unless the server surely made nothing.
func settleMade[C creation](c C, r created) {
	if r.err == nil || !definitelyNotCreated(r.err) {
		c.settle(r)
	}
}

// takeOver resumes st.out under sess, a value of the ZooKeeper session the
// create was sent in (acquireLoop settles it when the session changed). It
// waits for the create's outcome (the request fails when its connection
// drops, or is answered on the next one: one round trip), then uses the
// node it made, or, when the reply was lost, looks for the node by its
// protected prefix before creating again, with the same name. So a waiter
// whose create reply was lost keeps its node and its place in the queue, as
// Curator's protected mode does.
//
// Why the node may be kept though its session value ended: under
// SuspendedIsLost a suspension ends the value without ending the session; a
// later value with the same ID proves that the server kept the session (a
// reconnection that ZooKeeper accepted in that session), and an ephemeral
// node lives as long as its session, not its value. What the value's end
// does forbid is trusting the node as a lease: that is granted only under
// a value whose Err is nil (queue.own), as for a node kept across values
// while it waited. A node made by the create is taken only while sess is
// trusted: go-zookeeper reports a new session, which ends sess, before it
// sends anything on it, so a create answered while sess is trusted ran in
// sess's session (a request queued during a disconnection can land in a
// new session). A node found by its prefix is taken only if its
// ephemeralOwner is sess.ID() (findProtected).
func takeOver(ctx context.Context, sess Session, st *acquireState) (created, error) {
	o := st.out
	var r created
	select {
	case r = <-o.res:
	case <-sess.Done():
		return created{}, errCreateCut // still out: o waits for the next value
	case <-ctx.Done():
		return created{}, recipes.NotAcquired(ctx) // acquireLoop settles o
	}
	st.out = nil
	c := o.c.under(sess)
	switch {
	case r.err == nil:
		if sess.Err() != nil {
			st.handOver(c, sess.ID(), resolved(r))
			return created{}, errCreateCut
		}
		st.drops.Store(0)
		r.children = nil // a listing of an earlier value: the wait lists again
		return r, nil
	case definitelyNotCreated(r.err):
		return runCreate(ctx, sess, st, c, false) // refused, nothing made: create again
	default:
		return runCreate(ctx, sess, st, c, true)
	}
}

// retryCreate runs c.try until it succeeds or fails for good; with look, it
// first asks c.find for a node an earlier try made. After a lost reply (a
// retryable error: the node may exist) it asks c.find for the node the
// create may have made, and creates again only when it found none. It gives
// up when the session value ends (acquireLoop counts that drop), and after
// too many drops in a row within one session value (st).
func retryCreate[C creation](sess Session, st *acquireState, c C, look bool) created {
	for {
		if sess.Err() != nil {
			return created{err: errSessionEnded}
		}
		if look {
			f := c.find()
			if f.node != "" {
				st.drops.Store(0) // the create went through: no oversized request
			}
			if f.err != nil || f.node != "" {
				return f
			}
		}
		r := c.try()
		if r.err == nil {
			st.drops.Store(0)
			return r
		}
		if !session.IsRetryable(r.err) {
			return r
		}
		if sess.Err() != nil {
			return created{err: errSessionEnded} // the node may exist: handed over
		}
		if stop := st.noteCreateDrop(r.err); stop != nil {
			return created{err: stop} // still retryable: the node may exist, and is settled
		}
		look = true
	}
}
