package recipes

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Locker is a lock on one named resource.
type Locker interface {
	// Acquire waits until the lock is held, ctx is done, or an error occurs.
	// When ctx ends first it returns an error that is both ErrNotAcquired and
	// ctx's error, and what it created on the server is removed: at once, or
	// in the background while the connection is down (until the session
	// that owns it ends).
	Acquire(ctx context.Context) (Lease, error)
	// TryAcquire takes the lock if it is free now; if another holder has it,
	// it returns an error that is ErrLocked (and ErrNotAcquired) at once.
	TryAcquire(ctx context.Context) (Lease, error)
}

// Lease is one holding of a lock. A Lease may be released from any goroutine.
type Lease interface {
	// Context is cancelled when the lease ends for any reason: Release, or the
	// lock can no longer be trusted (session lost or suspended, TTL lapsed).
	// context.Cause gives the reason, as Err does. A ZooKeeper lock node
	// deleted by a third party (an operator breaking the lock) is not
	// watched for: Release reports it as ErrLockLost.
	Context() context.Context
	// Done is Context().Done().
	Done() <-chan struct{}
	// Err is nil while the lease is held; afterwards it is ErrReleased, or an
	// error that is ErrLockLost and says why.
	Err() error
	// Token is the lease's fencing token, when the backend has one: strictly
	// greater than the token of every earlier holder of the same lock. ok is
	// false, and token 0, when the backend cannot give one (Redlock over
	// independent servers has no single order of writes); never a made-up
	// number. Fence writes with it where ok is true (session.FencedResource
	// keeps one in ZooKeeper); where it is false, do the work with Context
	// and accept that a paused holder may write late.
	Token() (token int64, ok bool)
	// Release gives up the lock. It returns ErrNotHeld when the lease was
	// already released, and an error that is ErrLockLost when the lock had
	// been lost before Release, or its node was found already deleted (the
	// work done under it may not have been exclusive). Nothing of the lease
	// is left on the server once Release returns, or, when the connection is
	// down, once the background clean-up succeeds or the session ends.
	Release(ctx context.Context) error
}

// The errors of every lock in the module. Each package wraps them with %w;
// test them with errors.Is.
var (
	// ErrNotAcquired: Acquire or TryAcquire did not take the lock.
	ErrNotAcquired = errors.New("recipes: lock not acquired")
	// ErrLocked: TryAcquire found the lock held by someone else.
	ErrLocked = fmt.Errorf("%w: held by another holder", ErrNotAcquired)
	// ErrNotHeld: Release of a lease that is no longer held.
	ErrNotHeld = errors.New("recipes: lock not held")
	// ErrReleased is the cause of a lease's context after Release.
	ErrReleased = errors.New("recipes: lease released")
	// ErrLockLost is the cause of a lease's context when the lock can no
	// longer be trusted; the wrapping error says why.
	ErrLockLost = errors.New("recipes: lock lost")
	// ErrNotReentrant: a lock that is not reentrant was asked for again in
	// a call chain that already holds it (its lease's context). It fails at
	// once, where waiting would deadlock.
	ErrNotReentrant = fmt.Errorf("%w: already held in this call chain, and the lock is not reentrant", ErrNotAcquired)
	// ErrInvalidArgument: bad input (nil context, invalid path, ...).
	ErrInvalidArgument = errors.New("recipes: invalid argument")
	// ErrQuiet: the lock may be free, but its server restarted (or lost
	// its data) so recently that it may have forgotten a holder, and it
	// grants the lock to no one until the holder's TTL has passed: its
	// quiet period. TryAcquire's error is then ErrLocked and ErrQuiet;
	// Acquire waits it out. Each TTL backend's own ErrQuiet wraps it
	// (redislock, redlock, memcachedlock), so errors.Is(err, ErrQuiet)
	// tells it on any of them.
	ErrQuiet = errors.New("recipes: quiet period after a server restart")
	// ErrRefused: a server refused the client (credentials, a permission, a TLS certificate) as it will again.
	ErrRefused = errors.New("recipes: refused by the server")
	// ErrUnreachable: the lock's servers did not answer the last attempt
	// (down, or the network between): an Acquire that ran out of time
	// then returns an error that is ErrNotAcquired, ctx's and
	// ErrUnreachable, and names that attempt's error. Whether the lock is
	// held is not known: an outage, never a lock found held.
	ErrUnreachable = errors.New("recipes: the servers did not answer")
)

// NotAcquired returns the error Acquire gives when ctx ended while waiting:
// it is both ErrNotAcquired and context.Cause(ctx) (so also ctx.Err() for a
// plain cancel or deadline).
func NotAcquired(ctx context.Context) error {
	cause := context.Cause(ctx)
	if err := ctx.Err(); err != nil && !errors.Is(cause, err) {
		return fmt.Errorf("%w: %w (%w)", ErrNotAcquired, err, cause)
	}
	return fmt.Errorf("%w: %w", ErrNotAcquired, cause)
}

// NotAcquiredAfter is the error of an Acquire whose ctx ended after its
// last attempt failed with last (nil when it did not: NotAcquired(ctx)):
// NotAcquired(ctx), ErrUnreachable and last, so that an outage is told
// from a lock that stayed held.
func NotAcquiredAfter(ctx context.Context, last error) error {
	if last == nil {
		return NotAcquired(ctx)
	}
	return fmt.Errorf("%w; last attempt: %w: %w", NotAcquired(ctx), ErrUnreachable, last)
}

// CheckContext returns an ErrInvalidArgument error for a nil ctx and the
// NotAcquired error for a ctx that is already done.
func CheckContext(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	if ctx.Err() != nil {
		return NotAcquired(ctx)
	}
	return nil
}

// DriftMargin is what a lock keeps back from the moment its server may
// let the lock go (a session expired, a TTL lapsed): 1% of that time t for
// the difference between the client's and the server's clock rates, plus
// 10ms for the client's own timer and scheduling delays. Every backend
// ends a lease that much before the earliest moment anyone else could be
// granted its lock.
func DriftMargin(t time.Duration) time.Duration { return t/100 + 10*time.Millisecond }
