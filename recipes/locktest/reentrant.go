package locktest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// checkReentrant: on a reentrant Locker, Acquire with a holding lease's
// context (or one derived from it) re-enters at once with a lease of its
// own; the lock stays held until every lease is released; and goroutines
// that share the Locker with contexts of their own exclude each other.
//
// On a Shared backend the lock is held against a Blocker, and the re-entry
// is made with a Blocker queued behind the sharer's lease: a new share may
// have to wait behind that Blocker, but a re-entry must not (else the
// holder waits for a Blocker that waits for it). The queued Blocker gets
// the lock once every lease is released. Goroutines sharing the sharer with
// contexts of their own must all hold it together instead.
func checkReentrant(ctx context.Context, t *testing.T, b Backend, name string) error {
	r := &reentrant{ctx: ctx, t: t, b: b, name: name}
	// The queued Blocker waits until the scenario is over, not only until
	// ctx ends: it must still be queued when a stuck re-entry gives up.
	var stopQueued context.CancelFunc
	r.qctx, stopQueued = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		stopQueued()
		r.held.releaseAll(ctx) // ends the context a stuck re-entry waits with
		if r.reentry != nil {
			r.reentry.settle(ctx)
		}
		if r.queued != nil {
			r.queued.settle(ctx)
		}
	}()
	r.l, r.other = b.New(t, name), b.excluder(t, name)

	outer, err := take(ctx, "Acquire", r.l.Acquire)
	if err != nil {
		return err
	}
	r.held.keep(outer)
	if b.Shared {
		r.queueBlocker()
	}
	inner, nested, err := r.reenter(outer)
	if err != nil {
		return err
	}
	if err := r.checkHeldWhileReentered(); err != nil {
		return err
	}
	if err := r.releaseInsideOut(outer, inner, nested); err != nil {
		return err
	}
	if err := r.checkFreeAfterRelease(); err != nil {
		return err
	}
	if b.Shared {
		return checkHoldTogether(ctx, t, b, name, r.l, max(2, b.contenders()))
	}
	// Goroutines sharing l, each with a context that carries no lease.
	shared := make([]recipes.Locker, max(2, b.contenders()))
	for i := range shared {
		shared[i] = r.l
	}
	if _, err := Contention(ctx, shared, b.rounds()); err != nil {
		return fmt.Errorf("goroutines sharing one Locker: %w", err)
	}
	return nil
}

// reentrant is one run of checkReentrant: the Locker under test, the one
// it must exclude, and what is still out when the scenario ends.
type reentrant struct {
	ctx   context.Context
	t     *testing.T
	b     Backend
	name  string
	l     recipes.Locker
	other recipes.Locker // b.excluder
	held  holdings
	// reentry is the Acquire(lease.Context()) run apart; queued the Blocker
	// queued behind the sharer (Shared only), under qctx.
	reentry, queued *attempt
	qctx            context.Context
}

// queueBlocker queues a Blocker behind the sharer's lease and lets it
// queue: re-entering earlier must give the same result.
func (r *reentrant) queueBlocker() {
	qb := r.b.Blocker(r.t, r.name)
	r.queued = start(func() (recipes.Lease, error) { return qb.Acquire(r.qctx) })
	select {
	case <-time.After(waitBeforeCancel):
	case <-r.ctx.Done():
	}
}

// reenter acquires again with outer's context, which must return at once
// (exactly Acquire(lease.Context()), which has no deadline: run apart and
// the wait bounded), and then with a context derived from that re-entered
// lease's.
func (r *reentrant) reenter(outer recipes.Lease) (inner, nested recipes.Lease, err error) {
	const reenter = "Acquire(lease.Context()) on the holding Locker"
	r.reentry = start(func() (recipes.Lease, error) { return r.l.Acquire(outer.Context()) })
	pctx, cancel := context.WithTimeout(r.ctx, promptTimeout)
	res, err := r.reentry.wait(pctx, reenter)
	cancel()
	if err != nil {
		return nil, nil, err
	}
	inner, err = checkTaken(r.ctx, reenter, res.lease, res.err)
	if err != nil {
		return nil, nil, err
	}
	r.held.keep(inner)

	const nest = "Acquire with a context derived from a re-entered lease's"
	dctx, cancel := context.WithTimeout(inner.Context(), promptTimeout)
	nested, err = take(dctx, nest, r.l.Acquire)
	cancel()
	if err != nil {
		return nil, nil, err
	}
	r.held.keep(nested)
	return inner, nested, nil
}

// checkHeldWhileReentered checks that the re-entered lock is held against
// the other Locker and, unless shared, against the holding Locker under an
// unrelated context, and that the queued Blocker still waits.
func (r *reentrant) checkHeldWhileReentered() error {
	if err := r.lockedFor(r.other, "TryAcquire by "+r.b.other()+" while re-entered"); err != nil {
		return err
	}
	if !r.b.Shared {
		if err := r.lockedFor(r.l, "TryAcquire on the holding Locker with an unrelated context"); err != nil {
			return err
		}
	}
	return r.stillQueued("while the sharer held it, re-entered")
}

// releaseInsideOut releases the leases from the inside out: each ends with
// ErrReleased, and the lock is held until the last one.
func (r *reentrant) releaseInsideOut(outer, inner, nested recipes.Lease) error {
	for _, step := range []struct {
		what  string
		lease recipes.Lease
		live  []recipes.Lease
	}{
		{"the nested lease", nested, []recipes.Lease{inner, outer}},
		{"the re-entered lease", inner, []recipes.Lease{outer}},
		{"the first lease", outer, nil},
	} {
		if err := r.held.release(r.ctx, step.lease); err != nil {
			return fmt.Errorf("release of %s: %w", step.what, err)
		}
		if err := checkEndedWith(step.lease, recipes.ErrReleased); err != nil {
			return fmt.Errorf("after Release of %s: %w", step.what, err)
		}
		if len(step.live) == 0 {
			break
		}
		for _, live := range step.live {
			if err := checkHeld(live, "an outer lease"); err != nil {
				return fmt.Errorf("after Release of %s: %w", step.what, err)
			}
		}
		if err := r.lockedFor(r.other, "TryAcquire by "+r.b.other()+" after Release of "+step.what); err != nil {
			return err
		}
		if err := r.stillQueued("after Release of " + step.what); err != nil {
			return err
		}
	}
	return nil
}

// checkFreeAfterRelease checks that, once every lease is released, the
// queued Blocker (if any) gets the lock, and then the other Locker.
func (r *reentrant) checkFreeAfterRelease() error {
	if r.queued != nil {
		const op = "Acquire by the Blocker queued behind the sharer, after every lease was released"
		res, err := r.queued.wait(r.ctx, op)
		if err != nil {
			return err
		}
		lease, err := checkTaken(r.ctx, op, res.lease, res.err)
		if err != nil {
			return err
		}
		if err := lease.Release(r.ctx); err != nil {
			return fmt.Errorf("release by the queued Blocker: %w", err)
		}
	}
	lease, err := take(r.ctx, "TryAcquire by "+r.b.other()+" after every lease was released", r.other.TryAcquire)
	if err != nil {
		return err
	}
	if err := lease.Release(r.ctx); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// lockedFor checks that l's lock is held against acquirer.
func (r *reentrant) lockedFor(acquirer recipes.Locker, op string) error {
	pctx, cancel := context.WithTimeout(r.ctx, promptTimeout)
	defer cancel()
	return refuse(pctx, op, acquirer.TryAcquire, recipes.ErrLocked, recipes.ErrNotAcquired)
}

// stillQueued checks that the queued Blocker (if any) has not returned.
func (r *reentrant) stillQueued(when string) error {
	if r.queued == nil {
		return nil
	}
	res, done := r.queued.peek()
	switch {
	case !done:
		return nil
	case res.lease != nil:
		releaseQuietly(r.ctx, res.lease)
		return fmt.Errorf("the Blocker queued behind the sharer took the lock %s", when)
	default:
		return fmt.Errorf("the Blocker queued behind the sharer stopped waiting %s: %v", when, res.err)
	}
}
