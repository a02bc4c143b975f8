package recipes

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Helpers for implementations of the contract, on any backend.

// DriftMargin is what a lock keeps back from the moment its server may
// let the lock go (a session expired, a TTL lapsed): 1% of that time t for
// the difference between the client's and the server's clock rates, plus
// 10ms for the client's own timer and scheduling delays. Every backend
// ends a lease that much before the earliest moment anyone else could be
// granted its lock.
func DriftMargin(t time.Duration) time.Duration { return t/100 + 10*time.Millisecond }

// Holding is one holding of a lock, shared by the leases that re-entered
// it: what a lock implementation keeps between Acquire and the last
// Release. Its context carries the re-entry key of the lock (HeldBy), and
// ends when the last lease is released (ErrReleased) or when the
// implementation calls Lose. The implementation says how the lock is given
// up on the server (free), and watches whatever can make the lock
// untrustworthy (a session, a TTL).
type Holding struct {
	owner    any
	token    int64
	hasToken bool
	free     func(ctx context.Context) error
	impl     any
	ctx      context.Context
	cancel   context.CancelCauseFunc

	mu    sync.Mutex
	count int // leases not yet released
}

type holdingKey struct{ owner any }

// NewHolding starts the holding of the lock owner (the Locker: the key of
// re-entry) and returns it with its first lease. base supplies the context
// values (not the cancellation) of the Acquire call. free gives the lock up
// on the server; the last Release calls it once, after the holding's
// context has ended, unless the holding was lost before. token and
// hasToken are the leases' Token. impl is the implementation's own state
// of the holding (Impl returns it).
func NewHolding(base context.Context, owner any, token int64, hasToken bool,
	free func(ctx context.Context) error, impl any) (*Holding, *HeldLease) {
	h := &Holding{owner: owner, token: token, hasToken: hasToken, free: free, impl: impl, count: 1}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(base))
	h.ctx, h.cancel = context.WithValue(ctx, holdingKey{owner}, h), cancel
	return h, newHeldLease(h)
}

// HeldBy returns the live holding of owner's lock that ctx carries (ctx
// comes from one of its leases), or nil.
func HeldBy(ctx context.Context, owner any) *Holding {
	if ctx == nil {
		return nil
	}
	h, _ := ctx.Value(holdingKey{owner}).(*Holding)
	if h == nil || h.ctx.Err() != nil {
		return nil
	}
	return h
}

// Reenter adds a lease to a live holding; nil when it has ended.
func (h *Holding) Reenter() *HeldLease {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count == 0 || h.ctx.Err() != nil {
		return nil
	}
	h.count++
	return newHeldLease(h)
}

// Impl is what the implementation gave NewHolding.
func (h *Holding) Impl() any { return h.impl }

// Context ends with the holding: at the last Release, or at Lose.
func (h *Holding) Context() context.Context { return h.ctx }

// Lose ends the holding, and every lease of it, with cause (an error that
// is ErrLockLost): the lock can no longer be trusted. Giving up what is
// left on the server is the implementation's. A holding that has ended
// keeps its first cause.
func (h *Holding) Lose(cause error) { h.cancel(cause) }

// release drops one lease; the last one ends the holding and frees the
// lock.
func (h *Holding) release(ctx context.Context) error {
	h.mu.Lock()
	h.count--
	last := h.count == 0
	h.mu.Unlock()
	if last {
		// The holding ends before the lock is freed: once it is, another
		// holder may start at once.
		h.cancel(ErrReleased)
	}
	// Lost: a Lose came first (its cause stays), before this Release or
	// racing with it; then the implementation cleans up, not free.
	if cause := context.Cause(h.ctx); h.ctx.Err() != nil && cause != ErrReleased { // ours is exactly ErrReleased
		return fmt.Errorf("%w before Release: %w", ErrLockLost, cause)
	}
	if !last {
		return nil
	}
	return h.free(ctx)
}

// HeldLease is one Lease on a Holding. Its context is a child of the
// holding's: it ends with the holding or at its own Release. An
// implementation may embed it in a Lease type with more methods.
type HeldLease struct {
	h        *Holding
	ctx      context.Context
	cancel   context.CancelCauseFunc
	released atomic.Bool
}

func newHeldLease(h *Holding) *HeldLease {
	ctx, cancel := context.WithCancelCause(h.ctx)
	return &HeldLease{h: h, ctx: ctx, cancel: cancel}
}

var _ Lease = (*HeldLease)(nil)

// Context implements Lease.
func (l *HeldLease) Context() context.Context { return l.ctx }

// Done implements Lease.
func (l *HeldLease) Done() <-chan struct{} { return l.ctx.Done() }

// Token implements Lease.
func (l *HeldLease) Token() (int64, bool) {
	if !l.h.hasToken {
		return 0, false
	}
	return l.h.token, true
}

// Err implements Lease.
func (l *HeldLease) Err() error {
	if l.ctx.Err() == nil {
		return nil
	}
	return context.Cause(l.ctx)
}

// Release implements Lease: the lease ends at once, and the last lease of
// the holding frees the lock.
func (l *HeldLease) Release(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	if !l.released.CompareAndSwap(false, true) {
		return ErrNotHeld
	}
	l.cancel(ErrReleased) // first; a no-op when the holding already ended: its cause stays
	return l.h.release(ctx)
}
