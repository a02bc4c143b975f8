package locktest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

const (
	// waitBeforeCancel lets a waiter queue behind the holder before its
	// context is cancelled. Cancelling earlier must give the same result;
	// waiting only makes it likelier that the cancel finds it queued.
	waitBeforeCancel = 50 * time.Millisecond
	// waitDeadline is the deadline of a waiter that must run out.
	waitDeadline = 100 * time.Millisecond
)

// checkTryAcquire: TryAcquire takes a free lock and is refused at once, with
// ErrLocked and no lease, on a held one. On a Shared backend the holder that
// refuses a sharer is a Blocker, and a sharer's TryAcquire also succeeds on a
// lock another sharer holds, which still keeps a Blocker out.
func checkTryAcquire(ctx context.Context, t *testing.T, b Backend, name string) error {
	var held holdings
	defer held.releaseAll(ctx)
	first, second := b.excluder(t, name), b.New(t, name)

	lease, err := take(ctx, "TryAcquire on a free lock", first.TryAcquire)
	if err != nil {
		return err
	}
	held.keep(lease)
	for attempt := range 2 {
		op := fmt.Sprintf("TryAcquire #%d on a held lock", attempt+1)
		if b.Shared {
			op = fmt.Sprintf("TryAcquire #%d by a sharer on a lock a Blocker holds", attempt+1)
		}
		pctx, cancel := context.WithTimeout(ctx, promptTimeout)
		err := refuse(pctx, op, second.TryAcquire, recipes.ErrLocked, recipes.ErrNotAcquired)
		cancel()
		if err != nil {
			return err
		}
	}
	if err := checkHeld(lease, "the holder's lease"); err != nil {
		return err
	}
	if err := held.release(ctx, lease); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	lease, err = take(ctx, "TryAcquire after the holder released", second.TryAcquire)
	if err != nil {
		return err
	}
	held.keep(lease)
	if b.Shared {
		if lease, err = checkSharedTry(ctx, t, b, name, &held, lease, first); err != nil {
			return err
		}
	}
	if err := held.release(ctx, lease); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// checkSharedTry is the Shared part of checkTryAcquire: with a sharer holding
// lease (kept in held), another sharer's TryAcquire succeeds, a Blocker's is
// refused while either share lives, and the Blocker's succeeds once both are
// released. It returns the Blocker's lease, kept in held, for the caller to
// release.
func checkSharedTry(ctx context.Context, t *testing.T, b Backend, name string, held *holdings,
	lease recipes.Lease, blocker recipes.Locker) (recipes.Lease, error) {
	pctx, cancel := context.WithTimeout(ctx, promptTimeout)
	defer cancel()
	other, err := take(pctx, "TryAcquire by a sharer on a lock another sharer holds", b.New(t, name).TryAcquire)
	if err != nil {
		return nil, err
	}
	held.keep(other)
	if err := checkHeld(lease, "the first sharer's lease"); err != nil {
		return nil, fmt.Errorf("after a second sharer came in: %w", err)
	}
	for _, step := range []struct {
		what string
		left recipes.Lease
	}{{"while two sharers hold", other}, {"while one sharer holds", nil}} {
		if err := refuse(pctx, "TryAcquire by a Blocker "+step.what, blocker.TryAcquire,
			recipes.ErrLocked, recipes.ErrNotAcquired); err != nil {
			return nil, err
		}
		if step.left != nil {
			if err := held.release(ctx, step.left); err != nil {
				return nil, fmt.Errorf("release by the second sharer: %w", err)
			}
		}
	}
	if err := checkHeld(lease, "the first sharer's lease"); err != nil {
		return nil, fmt.Errorf("after the second sharer released: %w", err)
	}
	if err := held.release(ctx, lease); err != nil {
		return nil, fmt.Errorf("release by the first sharer: %w", err)
	}
	excl, err := take(ctx, "TryAcquire by a Blocker after every sharer released", blocker.TryAcquire)
	if err != nil {
		return nil, err
	}
	return held.keep(excl), nil
}

// checkCancelWhileWaiting: a waiter queued behind a holder gets ErrNotAcquired
// and the context's error when its context is cancelled or its deadline
// passes, takes nothing and leaves nothing; then the lock passes on as usual.
// On a Shared backend the holder is a Blocker and the waiter a sharer.
func checkCancelWhileWaiting(ctx context.Context, t *testing.T, b Backend, name string) error {
	var held holdings
	var waits []*attempt
	defer func() {
		held.releaseAll(ctx) // frees a waiter that ignores its context
		for _, a := range waits {
			a.settle(ctx)
		}
	}()
	holder, waiter := b.excluder(t, name), b.New(t, name)

	lease, err := take(ctx, "holder's Acquire", holder.Acquire)
	if err != nil {
		return err
	}
	held.keep(lease)

	cases := []struct {
		how  string
		want error
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"cancelled", context.Canceled, func() (context.Context, context.CancelFunc) {
			wctx, cancel := context.WithCancel(ctx)
			timer := time.AfterFunc(waitBeforeCancel, cancel)
			return wctx, func() { timer.Stop(); cancel() }
		}},
		{"past its deadline", context.DeadlineExceeded, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, waitDeadline)
		}},
	}
	for _, c := range cases {
		op := "Acquire " + c.how + " while waiting"
		wctx, cancel := c.ctx()
		a := start(func() (recipes.Lease, error) { return waiter.Acquire(wctx) })
		waits = append(waits, a)
		r, err := a.wait(ctx, op)
		cancel()
		if err != nil {
			return err
		}
		if err := checkRefused(ctx, op, r.lease, r.err, recipes.ErrNotAcquired, c.want); err != nil {
			return err
		}
		if err := checkHeld(lease, "the holder's lease"); err != nil {
			return fmt.Errorf("after the %s: %w", op, err)
		}
	}

	if err := held.release(ctx, lease); err != nil {
		return fmt.Errorf("holder's Release: %w", err)
	}
	if err := checkLeftovers(ctx, t, b, name); err != nil {
		return fmt.Errorf("after the cancelled waits and the holder's release: %w", err)
	}
	for _, c := range []struct {
		who string
		l   recipes.Locker
	}{{"a new contender", b.New(t, name)}, {"the cancelled waiter", waiter}} {
		lease, err := take(ctx, "Acquire by "+c.who, c.l.Acquire)
		if err != nil {
			return err
		}
		if err := lease.Release(ctx); err != nil {
			return fmt.Errorf("release by %s: %w", c.who, err)
		}
	}
	return nil
}

// checkBadInput: a nil context is ErrInvalidArgument and a done one is
// ErrNotAcquired, for Acquire and TryAcquire alike, and neither takes the
// lock or panics. On a Shared backend a Blocker checks that the lock is
// free afterwards (another sharer would get in past a leaked share).
func checkBadInput(ctx context.Context, t *testing.T, b Backend, name string) error {
	l, other := b.New(t, name), b.excluder(t, name)
	var nilCtx context.Context
	done, cancel := context.WithCancel(ctx)
	cancel()

	for _, m := range []struct {
		op      string
		acquire acquireFunc
	}{{"Acquire", l.Acquire}, {"TryAcquire", l.TryAcquire}} {
		op := m.op + "(nil context)"
		lease, err := guard(op, func() (recipes.Lease, error) { return m.acquire(nilCtx) })
		if err := checkRefused(ctx, op, lease, err, recipes.ErrInvalidArgument); err != nil {
			return err
		}
		op = m.op + "(cancelled context)"
		lease, err = guard(op, func() (recipes.Lease, error) { return m.acquire(done) })
		if err := checkRefused(ctx, op, lease, err, recipes.ErrNotAcquired, context.Canceled); err != nil {
			return err
		}
	}
	lease, err := take(ctx, "TryAcquire by "+b.other()+" after the bad calls", other.TryAcquire)
	if err != nil {
		return err
	}
	if err := lease.Release(ctx); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}
