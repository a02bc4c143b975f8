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
	var held holdings
	var reentry, queued *attempt
	// The queued Blocker waits until the scenario is over, not only until
	// ctx ends: it must still be queued when a stuck re-entry gives up.
	qctx, stopQueued := context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		stopQueued()
		held.releaseAll(ctx) // ends the context a stuck re-entry waits with
		if reentry != nil {
			reentry.settle(ctx)
		}
		if queued != nil {
			queued.settle(ctx)
		}
	}()
	l, other := b.New(t, name), b.excluder(t, name)

	// lockedFor checks that l's lock is held against acquirer.
	lockedFor := func(acquirer recipes.Locker, op string) error {
		pctx, cancel := context.WithTimeout(ctx, promptTimeout)
		defer cancel()
		return refuse(pctx, op, acquirer.TryAcquire, recipes.ErrLocked, recipes.ErrNotAcquired)
	}

	// stillQueued checks that the queued Blocker (if any) has not returned.
	stillQueued := func(when string) error {
		if queued == nil {
			return nil
		}
		r, done := queued.peek()
		switch {
		case !done:
			return nil
		case r.lease != nil:
			releaseQuietly(ctx, r.lease)
			return fmt.Errorf("the Blocker queued behind the sharer took the lock %s", when)
		default:
			return fmt.Errorf("the Blocker queued behind the sharer stopped waiting %s: %v", when, r.err)
		}
	}

	outer, err := take(ctx, "Acquire", l.Acquire)
	if err != nil {
		return err
	}
	held.keep(outer)

	if b.Shared {
		qb := b.Blocker(t, name)
		queued = start(func() (recipes.Lease, error) { return qb.Acquire(qctx) })
		// Let it queue; re-entering earlier must give the same result.
		select {
		case <-time.After(waitBeforeCancel):
		case <-ctx.Done():
		}
	}

	// Exactly Acquire(lease.Context()), which has no deadline: run it apart
	// and bound the wait.
	const reenter = "Acquire(lease.Context()) on the holding Locker"
	reentry = start(func() (recipes.Lease, error) { return l.Acquire(outer.Context()) })
	pctx, cancel := context.WithTimeout(ctx, promptTimeout)
	r, err := reentry.wait(pctx, reenter)
	cancel()
	if err != nil {
		return err
	}
	inner, err := checkTaken(ctx, reenter, r.lease, r.err)
	if err != nil {
		return err
	}
	held.keep(inner)

	const nest = "Acquire with a context derived from a re-entered lease's"
	dctx, cancel := context.WithTimeout(inner.Context(), promptTimeout)
	nested, err := take(dctx, nest, l.Acquire)
	cancel()
	if err != nil {
		return err
	}
	held.keep(nested)

	if err := lockedFor(other, "TryAcquire by "+b.other()+" while re-entered"); err != nil {
		return err
	}
	if !b.Shared {
		if err := lockedFor(l, "TryAcquire on the holding Locker with an unrelated context"); err != nil {
			return err
		}
	}
	if err := stillQueued("while the sharer held it, re-entered"); err != nil {
		return err
	}

	// Release from the inside out; the lock is held until the last one.
	for _, step := range []struct {
		what  string
		lease recipes.Lease
		live  []recipes.Lease
	}{
		{"the nested lease", nested, []recipes.Lease{inner, outer}},
		{"the re-entered lease", inner, []recipes.Lease{outer}},
		{"the first lease", outer, nil},
	} {
		if err := held.release(ctx, step.lease); err != nil {
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
		if err := lockedFor(other, "TryAcquire by "+b.other()+" after Release of "+step.what); err != nil {
			return err
		}
		if err := stillQueued("after Release of " + step.what); err != nil {
			return err
		}
	}
	if queued != nil {
		const op = "Acquire by the Blocker queued behind the sharer, after every lease was released"
		r, err := queued.wait(ctx, op)
		if err != nil {
			return err
		}
		lease, err := checkTaken(ctx, op, r.lease, r.err)
		if err != nil {
			return err
		}
		if err := lease.Release(ctx); err != nil {
			return fmt.Errorf("release by the queued Blocker: %w", err)
		}
	}
	lease, err := take(ctx, "TryAcquire by "+b.other()+" after every lease was released", other.TryAcquire)
	if err != nil {
		return err
	}
	if err := lease.Release(ctx); err != nil {
		return fmt.Errorf("release: %w", err)
	}

	if b.Shared {
		return checkHoldTogether(ctx, t, b, name, l, max(2, b.contenders()))
	}

	// Goroutines sharing l, each with a context that carries no lease.
	shared := make([]recipes.Locker, max(2, b.contenders()))
	for i := range shared {
		shared[i] = l
	}
	if _, err := Contention(ctx, shared, b.rounds()); err != nil {
		return fmt.Errorf("goroutines sharing one Locker: %w", err)
	}
	return nil
}
