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
}

// createSettled runs c (retryCreate) on its own goroutine, since a create
// cannot be abandoned half-way (it may land on the server after we stopped
// waiting), and returns its outcome while ctx and the session value allow.
// Whatever the create may have made and will not be used is handed to
// c.settle: the node of a create that finished after ctx or the session
// ended, or after a lost reply, or that succeeded in a session value that
// has ended. A create the server refused (r.err set, and nothing made) is
// returned for the caller to handle. When nothing can cancel ctx, c runs on
// this goroutine: no hop.
func createSettled[C creation](ctx context.Context, sess Session, st *acquireState, c C) (created, error) {
	if ctx.Done() == nil {
		return settled(sess, c, retryCreate(sess, st, c))
	}
	res := make(chan created, 1)
	go func() { res <- retryCreate(sess, st, c) }()
	select {
	case r := <-res:
		return settled(sess, c, r)
	case <-sess.Done():
		go func() { settleMade(c, <-res) }()
		return created{}, errCreateCut
	case <-ctx.Done():
		go func() { settleMade(c, <-res) }()
		return created{}, recipes.NotAcquired(ctx)
	}
}

// settled is createSettled's outcome of r.
func settled[C creation](sess Session, c C, r created) (created, error) {
	if r.err == nil && sess.Err() == nil {
		return r, nil
	}
	settleMade(c, r)
	if sess.Err() != nil {
		return created{}, errCreateCut
	}
	return r, nil
}

// settleMade settles r unless the server surely made nothing.
func settleMade[C creation](c C, r created) {
	if r.err == nil || !definitelyNotCreated(r.err) {
		c.settle(r)
	}
}

// retryCreate runs c.try until it succeeds or fails for good. After a lost
// reply (a retryable error: the node may exist) it asks c.find for the node
// the create may have made, and creates again only when it found none.
// It gives up when the session value ends (acquireLoop counts that drop),
// and after too many drops in a row within one session value (st).
func retryCreate[C creation](sess Session, st *acquireState, c C) created {
	for {
		if sess.Err() != nil {
			return created{err: errSessionEnded}
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
			return created{err: errSessionEnded} // the node may exist, and is settled
		}
		if stop := st.noteCreateDrop(r.err); stop != nil {
			return created{err: stop} // still retryable: the node may exist, and is settled
		}
		if f := c.find(); f.err != nil || f.node != "" {
			return f
		}
	}
}
