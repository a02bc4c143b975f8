package locktest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// checkReleaseTwice: a fresh lease is live; Release ends it with ErrReleased
// (Err, the cause of its context, Done closed by the time Release returns);
// a second Release is ErrNotHeld and changes nothing.
func checkReleaseTwice(ctx context.Context, t *testing.T, b Backend, name string) error {
	var held holdings
	defer held.releaseAll(ctx)
	l := b.New(t, name)

	lease, err := take(ctx, "Acquire", l.Acquire)
	if err != nil {
		return err
	}
	held.keep(lease)
	if err := checkHeld(lease, "a fresh lease"); err != nil {
		return err
	}
	if err := held.release(ctx, lease); err != nil {
		return fmt.Errorf("first Release: %w", err)
	}
	if err := checkEndedWith(lease, recipes.ErrReleased); err != nil {
		return fmt.Errorf("after Release returned nil: %w", err)
	}
	if err := lease.Release(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		return fmt.Errorf("second Release returned %v, want an error that is %q", err, recipes.ErrNotHeld)
	}
	if err := checkEndedWith(lease, recipes.ErrReleased); err != nil {
		return fmt.Errorf("after the second Release: %w", err)
	}
	return nil
}

// checkReleaseElsewhere: a lease taken in one goroutine is released from
// another, and the lock is free afterwards (for a Blocker, on a Shared
// backend).
func checkReleaseElsewhere(ctx context.Context, t *testing.T, b Backend, name string) error {
	var held holdings
	defer held.releaseAll(ctx)
	l, other := b.New(t, name), b.excluder(t, name)

	a := start(func() (recipes.Lease, error) { return l.Acquire(ctx) })
	defer a.settle(ctx)
	r, err := a.wait(ctx, "Acquire in a goroutine")
	if err != nil {
		return err
	}
	lease, err := checkTaken(ctx, "Acquire in a goroutine", r.lease, r.err)
	if err != nil {
		return err
	}
	held.keep(lease)

	released := make(chan error, 1)
	go func() { released <- lease.Release(ctx) }()
	select {
	case err := <-released:
		held.forget(lease)
		if err != nil {
			return fmt.Errorf("release from another goroutine: %w", err)
		}
	case <-ctx.Done():
		return fmt.Errorf("release from another goroutine did not return before the wait ended (%v)", context.Cause(ctx))
	}
	if err := checkEndedWith(lease, recipes.ErrReleased); err != nil {
		return fmt.Errorf("after Release from another goroutine: %w", err)
	}

	lease, err = take(ctx, "TryAcquire by "+b.other(), other.TryAcquire)
	if err != nil {
		return err
	}
	if err := lease.Release(ctx); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}
