package recipes

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultReleaseTimeout bounds the Release that WithLock makes after fn
// returns, since the caller's ctx may be done by then.
const DefaultReleaseTimeout = 10 * time.Second

// WithLock acquires l, runs fn while holding it and releases it. fn's context
// is cancelled when ctx is, and at once when the lock is lost; in that case
// context.Cause of fn's context is an error that is ErrLockLost. WithLock
// returns fn's error joined with Release's: when the lock was lost while fn
// ran, the result is ErrLockLost even if fn returned nil, because fn's work
// may not have been exclusive. The lock is released on every exit: when fn
// panics, it is released and the panic goes on up the stack.
func WithLock(ctx context.Context, l Locker, fn func(ctx context.Context) error) (err error) {
	if l == nil {
		return fmt.Errorf("%w: nil Locker", ErrInvalidArgument)
	}
	if fn == nil {
		return fmt.Errorf("%w: nil function", ErrInvalidArgument)
	}
	lease, err := l.Acquire(ctx)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancelCause(lease.Context())
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer func() {
		// Runs when fn returns and when it panics (then the panic goes on).
		stop()
		cancel(nil)
		relCtx, relCancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultReleaseTimeout)
		defer relCancel()
		err = errors.Join(err, lease.Release(relCtx))
	}()
	return fn(runCtx)
}
