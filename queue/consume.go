package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Handler handles one item. Its context ends when Consume's does and,
// with a lock path, when the session under which the item's lock node was
// made can no longer be trusted (context.Cause: session.ErrSuspended or
// session.ErrSessionLost): from then on another consumer may be handed
// the same item. Its error, with a lock path, puts the item back or drops
// it (ErrorMode); without one it is logged and the item is gone.
type Handler func(ctx context.Context, item []byte) error

// Retry pacing of Consume after a failed listing: from retryFloor,
// doubled up to retryCeiling, or at once on a change of connection state.
const (
	retryFloor   = 50 * time.Millisecond
	retryCeiling = time.Second
)

// Consume takes the queue's items in its Kind's order, one node at a
// time, and calls fn with each item, one at a time, until ctx ends; it
// then returns context.Cause(ctx) (session.ErrClosed when the client was
// closed). Several consumers, in this process or others, Go or Java, may
// consume one queue: each node goes to one of them (with a lock path, to
// one at a time).
//
// Session loss. Consume goes on through suspensions, lost sessions and
// long disconnections: it waits for the client's next trusted session
// and lists the queue again (Curator's consumers stalled after a long
// disconnect, CURATOR-623). With a lock path, fn's context is cancelled
// when the item's session ends; if fn then returns an error the item is
// left in place, and in any case an item is deleted only while that
// session is still trusted, so an item whose consumer lost its session
// stays queued for the next one (delivered again). Without a lock path
// the item was deleted before fn was called: fn's context ends with ctx
// only, and an item in hand when the process dies is lost.
func (q *Queue) Consume(ctx context.Context, fn Handler) error {
	if err := recipes.CheckContext(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidArgument, err)
	}
	if fn == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalidArgument)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	states, err := q.c.Subscribe(ctx)
	if err != nil {
		return err
	}
	wake := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for st := range states {
			if q.opts.onState != nil {
				q.opts.onState(st)
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	defer wg.Wait()
	defer cancel()

	backoff := retryFloor
	for {
		sess, err := q.c.Session(ctx)
		if err != nil {
			return q.stopped(ctx, err)
		}
		r, err := q.round(ctx, sess, fn)
		if err != nil {
			if errors.Is(err, session.ErrClosed) || ctx.Err() != nil {
				r.stop()
				return q.stopped(ctx, err)
			}
			q.c.Logger().Warn("queue: listing failed; trying again", "path", q.path, "err", err)
		}
		switch {
		case r.progressed:
			backoff = retryFloor
		case err != nil || r.failed:
			if r.wait < 0 || r.wait > backoff {
				r.wait = backoff
			}
			backoff = min(2*backoff, retryCeiling)
			q.idle(ctx, r, wake)
		default:
			backoff = retryFloor
			q.idle(ctx, r, wake)
		}
		r.stop()
	}
}

// stopped is Consume's error once it cannot go on.
func (q *Queue) stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// idle waits for the children watch, another consumer's lock node, a
// change of connection state, r.wait (when not negative: the next due
// item, or a retry) or the end of ctx.
func (q *Queue) idle(ctx context.Context, r roundResult, wake <-chan struct{}) {
	var timer <-chan time.Time
	if r.wait >= 0 {
		t := time.NewTimer(r.wait)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-r.watch:
	case <-r.lockWatch:
	case <-wake:
	case <-timer:
	case <-ctx.Done():
	}
}

// round lists the queue with a watch and takes the items that are due.
// Its result says what to wait for before the next round.
func (q *Queue) round(ctx context.Context, sess *session.Session, fn Handler) (r roundResult, err error) {
	r = roundResult{wait: -1, stop: func() {}}
	if err := q.ensure(ctx); err != nil {
		return r, err
	}
	wctx, cancel := context.WithCancel(ctx)
	r.stop = cancel
	kids, _, watch, err := q.c.ChildrenW(wctx, q.path)
	if err != nil {
		if errors.Is(err, session.ErrNoNode) { // deleted meanwhile: make it again
			q.mu.Lock()
			q.ensured = false
			q.mu.Unlock()
		}
		return r, err
	}
	r.watch = watch
	for _, name := range ordered(q.opts.kind, kids) {
		if ctx.Err() != nil || sess.Err() != nil {
			break
		}
		if q.opts.kind == Delay {
			// Sorted by due time: the first not due says when to look
			// again, and none after it is due either.
			if d := time.Until(time.UnixMilli(dueOf(name))); d > 0 {
				r.wait = d
				break
			}
		}
		switch q.take(ctx, sess, name, fn) {
		case taken:
			r.progressed = true
		case locked:
			// Another consumer has it. Its lock node's deletion changes
			// nothing in the queue's children (a consumer that died or
			// stopped leaves the item there): watch the lock node too.
			if r.lockWatch == nil {
				ok, _, ch, err := q.c.ExistsW(wctx, session.JoinPath(q.opts.lockPath, name))
				switch {
				case err != nil:
					r.failed = true
				case !ok:
					r.progressed = true
				default:
					r.lockWatch = ch
				}
			}
		case failed:
			r.failed = true
		}
	}
	return r, nil
}

// roundResult is what a round saw.
type roundResult struct {
	progressed bool // an item was taken or found gone: list again at once
	failed     bool // an item could not be taken for a transient fault
	// wait is how long until the next item is due (-1: none).
	wait      time.Duration
	watch     <-chan session.Event // the queue's children watch
	lockWatch <-chan session.Event // another consumer's lock node, when one held an item
	stop      func()               // releases the watches' waits
}

// outcome is what take did with an item.
type outcome int

const (
	taken  outcome = iota // handled, put back, or found gone
	locked                // another consumer holds its lock node
	failed                // not taken for a fault; still queued (or, without a lock path, maybe gone)
)

// take hands one item node to fn, under its lock node when the queue has
// a lock path. Failures that mean another consumer got it are silent;
// others are logged: the item is then still queued, or (without a lock
// path) gone, as Curator's consumers leave it.
func (q *Queue) take(ctx context.Context, sess *session.Session, name string, fn Handler) outcome {
	item := session.JoinPath(q.path, name)
	if q.opts.lockPath == "" {
		data, st, err := q.c.Get(ctx, item)
		if err != nil {
			return q.missed(item, err)
		}
		// Deleted first, at its version, so that no other consumer gets
		// it too; a connection loss here may have deleted it, so the item
		// is not handled then (at most once).
		if err := q.c.Delete(ctx, item, st.Version); err != nil {
			return q.missed(item, err)
		}
		items, err := decodeItems(data)
		if err != nil {
			q.c.Logger().Error("queue: dropped", "path", item, "err", err)
			return taken
		}
		for _, it := range items {
			if err := fn(ctx, it); err != nil {
				q.c.Logger().Warn("queue: handler failed; the item is gone (no lock path)", "path", item, "err", err)
			}
		}
		return taken
	}

	lock := session.JoinPath(q.opts.lockPath, name)
	release, err := q.acquire(ctx, sess, lock)
	switch {
	case errors.Is(err, session.ErrNodeExists):
		return locked
	case errors.Is(err, session.ErrNoNode):
		// The lock path was deleted (or the lock node meanwhile): make
		// it again next round.
		q.mu.Lock()
		q.ensured = false
		q.mu.Unlock()
		return failed
	case err != nil:
		return q.missed(lock, err)
	}
	defer q.unlock(ctx, lock, release)
	data, _, err := q.c.Get(ctx, item)
	if err != nil {
		return q.missed(item, err)
	}
	items, err := decodeItems(data)
	if err != nil {
		q.c.Logger().Error("queue: dropped", "path", item, "err", err)
		return q.settle(ctx, sess, lock, item, nil)
	}
	ictx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(sess.Context(), func() { cancel(context.Cause(sess.Context())) })
	defer stop()
	var requeue []byte
	for _, it := range items {
		if err := fn(ictx, it); err != nil {
			if ictx.Err() != nil {
				// Stopped or told of the session's end: the item stays
				// where it is, for this consumer's next round or another.
				return failed
			}
			q.c.Logger().Warn("queue: handler failed", "path", item, "err", err, "mode", q.opts.errorMode)
			if q.opts.errorMode == Requeue {
				requeue = data
				break
			}
		}
	}
	return q.settle(ctx, sess, lock, item, requeue)
}

// settle deletes a handled item, or puts it back as a new node (requeue:
// its data) in the same multi, on condition that the lock node is still
// there and its session still trusted: an item whose lock may have gone
// to another consumer is left alone.
func (q *Queue) settle(ctx context.Context, sess *session.Session, lock, item string, requeue []byte) outcome {
	if err := sess.Err(); err != nil {
		q.c.Logger().Warn("queue: the session ended while the item was in hand; it stays queued", "path", item, "err", err)
		return failed
	}
	ops := []session.Op{session.CheckOp(lock, -1), session.DeleteOp(item, -1)}
	if requeue != nil {
		again := session.JoinPath(q.path, requeueName(session.BaseName(item)))
		ops = append(ops, session.CreateOp(again, requeue, session.PersistentSequential))
	}
	// Not cut short by ctx: the item was handled.
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
	defer cancel()
	if _, err := q.c.Multi(mctx, ops...); err != nil {
		return q.missed(item, err)
	}
	return taken
}

// missed is the outcome of an operation on an item that failed: taken
// when another consumer got the item first (it is gone), failed (and
// logged) otherwise.
func (q *Queue) missed(p string, err error) outcome {
	if errors.Is(err, session.ErrNoNode) || errors.Is(err, session.ErrBadVersion) {
		return taken
	}
	q.c.Logger().Warn("queue: item not taken this round", "path", p, "err", err)
	return failed
}
