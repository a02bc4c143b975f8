package locktest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// recorder is a Locker that hands the leases its Acquire takes to the
// scenario, which recipes.WithLock keeps to itself.
type recorder struct {
	recipes.Locker
	leases chan recipes.Lease
}

func (r *recorder) Acquire(ctx context.Context) (recipes.Lease, error) {
	lease, err := r.Locker.Acquire(ctx)
	if lease != nil {
		select {
		case r.leases <- lease:
		default:
		}
	}
	return lease, err
}

// checkWithLock: recipes.WithLock holds the lock while fn runs and releases
// it after; when the lock is lost during fn, fn's context ends with a cause
// that is ErrLockLost and WithLock returns an error that is ErrLockLost. On
// a Shared backend fn holds a share, and a Blocker is the one kept out.
func checkWithLock(ctx context.Context, t *testing.T, b Backend, name string) error {
	l, other := b.New(t, name), b.excluder(t, name)

	ran := false
	err := recipes.WithLock(ctx, l, func(ctx context.Context) error {
		ran = true
		return refuse(ctx, "TryAcquire by "+b.other()+" while fn runs", other.TryAcquire,
			recipes.ErrLocked)
	})
	switch {
	case err != nil:
		return fmt.Errorf("WithLock: %w", err)
	case !ran:
		return errors.New("WithLock returned nil without running fn")
	}
	lease, err := take(ctx, "TryAcquire by "+b.other()+" after WithLock", other.TryAcquire)
	if err != nil {
		return err
	}
	if err := lease.Release(ctx); err != nil {
		return fmt.Errorf("release: %w", err)
	}

	rec := &recorder{Locker: l, leases: make(chan recipes.Lease, 1)}
	var fnErr error
	ran = false
	err = recipes.WithLock(ctx, rec, func(fnCtx context.Context) error {
		ran = true
		var lease recipes.Lease
		select {
		case lease = <-rec.leases:
		default:
			fnErr = errors.New("fn ran but WithLock's Acquire gave no lease")
			return nil
		}
		b.Lose(t, name, lease)
		<-fnCtx.Done() // bounded: WithLock ends fnCtx when ctx ends
		if cause := context.Cause(fnCtx); !errors.Is(cause, recipes.ErrLockLost) {
			fnErr = fmt.Errorf("after Lose, fn's context ended with cause %v, want an error that is %q",
				cause, recipes.ErrLockLost)
		}
		return nil
	})
	switch {
	case !ran:
		return fmt.Errorf("WithLock did not run fn: %w", err)
	case fnErr != nil:
		return fnErr
	}
	if !errors.Is(err, recipes.ErrLockLost) {
		return fmt.Errorf("WithLock returned %v after the lock was lost during fn, want an error that is %q",
			err, recipes.ErrLockLost)
	}
	lease, err = take(ctx, "Acquire by "+b.other()+" after the loss", other.Acquire)
	if err != nil {
		return err
	}
	if err := lease.Release(ctx); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// panicked is what checkWithLockPanic's fn panics with.
type panicked struct{}

// checkWithLockPanic: when fn panics, recipes.WithLock releases the lock
// before the panic goes on up the stack (a server that recovers from a
// handler's panic must not keep the lock), and the panic reaches the caller
// unchanged.
func checkWithLockPanic(ctx context.Context, t *testing.T, b Backend, name string) error {
	l, other := b.New(t, name), b.excluder(t, name)
	var got any
	func() {
		defer func() { got = recover() }()
		_ = recipes.WithLock(ctx, l, func(context.Context) error { panic(panicked{}) })
	}()
	if _, ok := got.(panicked); !ok {
		return fmt.Errorf("WithLock with a panicking fn: recovered %v, want fn's panic", got)
	}
	lease, err := take(ctx, "TryAcquire by "+b.other()+" after WithLock's fn panicked", other.TryAcquire)
	if err != nil {
		return fmt.Errorf("the lock was kept after fn panicked: %w", err)
	}
	if err := lease.Release(ctx); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}
