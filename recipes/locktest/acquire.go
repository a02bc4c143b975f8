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
// ErrLocked and no lease, on a held one.
func checkTryAcquire(ctx context.Context, t *testing.T, b Backend, name string) error {
	var held holdings
	defer held.releaseAll(ctx)
	first, second := b.New(t, name), b.New(t, name)

	lease, err := take(ctx, "TryAcquire on a free lock", first.TryAcquire)
	if err != nil {
		return err
	}
	held.keep(lease)
	for attempt := range 2 {
		pctx, cancel := context.WithTimeout(ctx, promptTimeout)
		err := refuse(pctx, fmt.Sprintf("TryAcquire #%d on a held lock", attempt+1), second.TryAcquire,
			recipes.ErrLocked, recipes.ErrNotAcquired)
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
	if err := held.release(ctx, lease); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// checkCancelWhileWaiting: a waiter queued behind a holder gets ErrNotAcquired
// and the context's error when its context is cancelled or its deadline
// passes, takes nothing and leaves nothing; then the lock passes on as usual.
func checkCancelWhileWaiting(ctx context.Context, t *testing.T, b Backend, name string) error {
	var held holdings
	var waits []*attempt
	defer func() {
		held.releaseAll(ctx) // frees a waiter that ignores its context
		for _, a := range waits {
			a.settle(ctx)
		}
	}()
	holder, waiter := b.New(t, name), b.New(t, name)

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
// lock or panics.
func checkBadInput(ctx context.Context, t *testing.T, b Backend, name string) error {
	l, other := b.New(t, name), b.New(t, name)
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
	lease, err := take(ctx, "TryAcquire by another contender after the bad calls", other.TryAcquire)
	if err != nil {
		return err
	}
	if err := lease.Release(ctx); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}
