package locktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// acquireFunc is Locker.Acquire or Locker.TryAcquire.
type acquireFunc func(context.Context) (recipes.Lease, error)

// take calls acquire and checks that it took the lock.
func take(ctx context.Context, op string, acquire acquireFunc) (recipes.Lease, error) {
	lease, err := acquire(ctx)
	return checkTaken(ctx, op, lease, err)
}

// checkTaken checks that an acquisition returned a lease and no error.
func checkTaken(ctx context.Context, op string, lease recipes.Lease, err error) (recipes.Lease, error) {
	switch {
	case err != nil && lease != nil:
		releaseQuietly(ctx, lease)
		return nil, fmt.Errorf("%s returned a lease together with the error %w", op, err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", op, err)
	case lease == nil:
		return nil, fmt.Errorf("%s returned (nil, nil)", op)
	}
	return lease, nil
}

// refuse calls acquire and checks that it did not take the lock.
func refuse(ctx context.Context, op string, acquire acquireFunc, wants ...error) error {
	lease, err := acquire(ctx)
	return checkRefused(ctx, op, lease, err, wants...)
}

// checkRefused checks that an acquisition returned no lease and an error that
// is every one of wants.
func checkRefused(ctx context.Context, op string, lease recipes.Lease, err error, wants ...error) error {
	if lease != nil {
		releaseQuietly(ctx, lease)
		if err == nil {
			return fmt.Errorf("%s took the lock; want an error that is %s", op, describe(wants))
		}
		return fmt.Errorf("%s returned a lease together with the error %w", op, err)
	}
	if err == nil {
		return fmt.Errorf("%s returned (nil, nil)", op)
	}
	for _, want := range wants {
		if !errors.Is(err, want) {
			return fmt.Errorf("%s returned %q, which is not %q", op, err, want)
		}
	}
	return nil
}

// describe lists errors for a message: "a" and "b".
func describe(errs []error) string {
	var quoted []string
	for _, err := range errs {
		quoted = append(quoted, fmt.Sprintf("%q", err))
	}
	return strings.Join(quoted, " and ")
}

// guard turns a panic of acquire into an error: bad input must get an error
// value, never a panic.
func guard(op string, acquire func() (recipes.Lease, error)) (lease recipes.Lease, err error) {
	defer func() {
		if p := recover(); p != nil {
			lease, err = nil, fmt.Errorf("%s panicked: %v", op, p)
		}
	}()
	return acquire()
}

// ended reports whether lease's Done channel is closed.
func ended(lease recipes.Lease) bool {
	select {
	case <-lease.Done():
		return true
	default:
		return false
	}
}

// waitEnded waits, bounded by ctx, for lease's Done channel to close.
func waitEnded(ctx context.Context, lease recipes.Lease) error {
	select {
	case <-lease.Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the lease's Done channel did not close before the wait ended (%v)", context.Cause(ctx))
	}
}

// checkEndedWith checks that lease has ended, with want as both Err and the
// cause of its context.
func checkEndedWith(lease recipes.Lease, want error) error {
	if !ended(lease) {
		return errors.New("the lease's Done channel is not closed")
	}
	if lease.Context().Err() == nil {
		return errors.New("the lease's Done channel is closed but its context has no error")
	}
	if err := lease.Err(); !errors.Is(err, want) {
		return fmt.Errorf("the lease's Err is %v, want %q", err, want)
	}
	if cause := context.Cause(lease.Context()); !errors.Is(cause, want) {
		return fmt.Errorf("the cause of the lease's context is %v, want %q", cause, want)
	}
	return nil
}

// checkHeld checks that lease has not ended.
func checkHeld(lease recipes.Lease, what string) error {
	if ended(lease) {
		return fmt.Errorf("%s ended while it should be held (Err: %v)", what, lease.Err())
	}
	if err := lease.Err(); err != nil {
		return fmt.Errorf("%s has Err %v while its Done channel is open", what, err)
	}
	return nil
}

// cleanupContext bounds a clean-up step that must run even when ctx is done.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// releaseQuietly releases lease to clean up after a failure.
func releaseQuietly(ctx context.Context, lease recipes.Lease) {
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	_ = lease.Release(ctx)
}

// holdings keeps the leases a scenario holds, so that a scenario that fails
// half-way still releases them. Use it from one goroutine.
type holdings struct {
	leases []recipes.Lease
}

// keep adds lease to h and returns it.
func (h *holdings) keep(lease recipes.Lease) recipes.Lease {
	h.leases = append(h.leases, lease)
	return lease
}

// release removes lease from h and releases it.
func (h *holdings) release(ctx context.Context, lease recipes.Lease) error {
	h.forget(lease)
	return lease.Release(ctx)
}

// forget removes lease from h without releasing it.
func (h *holdings) forget(lease recipes.Lease) {
	h.leases = slices.DeleteFunc(h.leases, func(l recipes.Lease) bool { return l == lease })
}

// releaseAll releases what h still holds, newest first.
func (h *holdings) releaseAll(ctx context.Context) {
	for _, lease := range slices.Backward(h.leases) {
		releaseQuietly(ctx, lease)
	}
	h.leases = nil
}

// result is what an acquisition returned.
type result struct {
	lease recipes.Lease
	err   error
}

// attempt is an acquisition running in a goroutine of its own.
type attempt struct {
	done      chan result
	collected bool
}

// start runs acquire in a goroutine of its own.
func start(acquire func() (recipes.Lease, error)) *attempt {
	a := &attempt{done: make(chan result, 1)}
	go func() {
		lease, err := acquire()
		a.done <- result{lease, err}
	}()
	return a
}

// wait returns the attempt's result; the error says that ctx ended first.
func (a *attempt) wait(ctx context.Context, op string) (result, error) {
	select {
	case r := <-a.done:
		a.collected = true
		return r, nil
	case <-ctx.Done():
		return result{}, fmt.Errorf("%s did not return before the wait ended (%v)", op, context.Cause(ctx))
	}
}

// peek returns the attempt's result if it has returned, without waiting.
func (a *attempt) peek() (result, bool) {
	if a.collected {
		return result{}, false
	}
	select {
	case r := <-a.done:
		a.collected = true
		return r, true
	default:
		return result{}, false
	}
}

// settle waits, bounded, for an attempt whose result was not collected (the
// caller must have ended its context) and releases what it took.
func (a *attempt) settle(ctx context.Context) {
	if a.collected {
		return
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	select {
	case r := <-a.done:
		a.collected = true
		if r.lease != nil {
			_ = r.lease.Release(ctx)
		}
	case <-ctx.Done():
	}
}

// holdRounds acquires l rounds times, runs inside with each lease and
// releases it. A Release that reports ErrLockLost for a lease already ended
// is not an error (the loss was the lock's to report, and inside saw it).
func holdRounds(ctx context.Context, who string, l recipes.Locker, rounds int,
	inside func(recipes.Lease) error) error {
	for round := range rounds {
		op := fmt.Sprintf("%s, round %d", who, round)
		lease, err := take(ctx, op+": Acquire", l.Acquire)
		if err != nil {
			return err
		}
		err = inside(lease)
		relErr := lease.Release(ctx)
		switch {
		case err != nil:
			return err
		case relErr != nil && !(errors.Is(relErr, recipes.ErrLockLost) && ended(lease)):
			return fmt.Errorf("%s: Release: %w", op, relErr)
		}
	}
	return nil
}
