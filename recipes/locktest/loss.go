package locktest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// checkLoss: after Backend.Lose the holder's lease ends with ErrLockLost,
// Release reports an error, and a contender queued meanwhile gets the lock
// with a higher token. It does not check that the new holder came in only
// after the old lease ended: a real fault (a deleted node, an expired
// session) may reach the next holder first, which is what tokens are for.
// On a Shared backend the lost holder is a sharer and the queued contender
// a Blocker, which only the loss can let in.
func checkLoss(ctx context.Context, t *testing.T, b Backend, name string) error {
	var held holdings
	var queued *attempt
	wctx, stopWaiting := context.WithCancel(ctx)
	defer func() {
		stopWaiting()
		held.releaseAll(ctx)
		if queued != nil {
			queued.settle(ctx)
		}
	}()
	holder, waiter := b.New(t, name), b.excluder(t, name)

	lease, err := take(ctx, "holder's Acquire", holder.Acquire)
	if err != nil {
		return err
	}
	held.keep(lease)
	queued = start(func() (recipes.Lease, error) { return waiter.Acquire(wctx) })

	b.Lose(t, name, lease)
	if err := waitEnded(ctx, lease); err != nil {
		return fmt.Errorf("after Lose: %w", err)
	}
	if err := checkEndedWith(lease, recipes.ErrLockLost); err != nil {
		return fmt.Errorf("after Lose: %w", err)
	}
	relErr := held.release(ctx, lease)
	if !errors.Is(relErr, recipes.ErrLockLost) {
		return fmt.Errorf("release of a lost lease returned %v, want an error that is %q (the contract)",
			relErr, recipes.ErrLockLost)
	}
	if err := checkEndedWith(lease, recipes.ErrLockLost); err != nil {
		return fmt.Errorf("after Release of the lost lease: %w", err)
	}

	r, err := queued.wait(ctx, "Acquire queued behind the lost holder")
	if err != nil {
		return err
	}
	next, err := checkTaken(ctx, "Acquire queued behind the lost holder", r.lease, r.err)
	if err != nil {
		return err
	}
	held.keep(next)
	nt, nok := next.Token()
	lt, lok := lease.Token()
	if !b.NoTokens && (!nok || !lok || nt <= lt) {
		return fmt.Errorf("the holder after the loss has %s, not above the lost lease's %s", tokenOf(next), tokenOf(lease))
	}
	if err := held.release(ctx, next); err != nil {
		return fmt.Errorf("release by the holder after the loss: %w", err)
	}
	return nil
}
