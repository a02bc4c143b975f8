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
// up on the server (its Free), and watches whatever can make the lock
// untrustworthy (a session, a TTL).
//
// The contexts of a holding and of its leases are made when first asked
// for: a lock taken and released without anyone looking at them costs no
// context. One made after the end is born ended, with the same cause.
type Holding struct {
	owner    any
	token    int64
	hasToken bool
	impl     Freer
	base     context.Context // supplies the values of the holding's context

	mu     sync.Mutex
	count  int   // leases not yet released
	cause  error // why the holding ended; nil while it lasts
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// Freer is the implementation's side of a Holding: Free gives the lock up
// on the server. The last Release calls it once, after the holding has
// ended, unless the holding was lost before.
type Freer interface {
	Free(ctx context.Context) error
}

// FreeFunc is a Freer made of a function.
type FreeFunc func(ctx context.Context) error

// Free implements Freer.
func (f FreeFunc) Free(ctx context.Context) error { return f(ctx) }

// NewHolding starts the holding of the lock owner (the Locker: the key of
// re-entry, which should be a pointer) and returns it with its first lease.
// base supplies the context values (not the cancellation) of the Acquire
// call. token and hasToken are the leases' Token. impl is the
// implementation's own state of the holding (Impl returns it), which frees
// the lock.
func NewHolding(base context.Context, owner any, token int64, hasToken bool, impl Freer) (*Holding, *HeldLease) {
	h, first := new(Holding), new(HeldLease)
	h.Start(first, base, owner, token, hasToken, impl)
	return h, first
}

// Start is NewHolding for a zero Holding and a zero first HeldLease that
// the implementation keeps inside its own values (which saves allocating
// them); neither may be copied afterwards.
func (h *Holding) Start(first *HeldLease, base context.Context, owner any, token int64, hasToken bool, impl Freer) {
	h.owner, h.token, h.hasToken, h.impl, h.base, h.count = owner, token, hasToken, impl, base, 1
	first.h = h
}

// HeldBy returns the live holding of owner's lock that ctx carries (ctx
// comes from one of its leases), or nil.
func HeldBy(ctx context.Context, owner any) *Holding {
	if ctx == nil {
		return nil
	}
	// The owner itself is the key: a pointer, boxing it costs nothing, and
	// what is stored under it is checked to be a Holding of that owner.
	h, _ := ctx.Value(owner).(*Holding)
	if h == nil || h.owner != owner || h.Err() != nil {
		return nil
	}
	return h
}

// Reenter adds a lease to a live holding; nil when it has ended.
func (h *Holding) Reenter() *HeldLease {
	l := new(HeldLease)
	if !h.ReenterInto(l) {
		return nil
	}
	return l
}

// ReenterInto is Reenter for a zero HeldLease that the implementation keeps
// inside its own value: it makes l a lease of the holding, or reports false
// when the holding has ended.
func (h *Holding) ReenterInto(l *HeldLease) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count == 0 || h.cause != nil {
		return false
	}
	h.count++
	l.h = h
	return true
}

// Impl is what the implementation gave NewHolding.
func (h *Holding) Impl() Freer { return h.impl }

// Context ends with the holding: at the last Release, or at Lose, with
// that cause.
func (h *Holding) Context() context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx == nil {
		values := context.WithValue(context.WithoutCancel(h.base), h.owner, h)
		h.ctx, h.cancel = context.WithCancelCause(values)
		if h.cause != nil {
			h.cancel(h.cause)
		}
	}
	return h.ctx
}

// Err is why the holding ended (ErrReleased, or Lose's cause), nil while
// it lasts.
func (h *Holding) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cause
}

// Lose ends the holding, and every lease of it, with cause (an error that
// is ErrLockLost): the lock can no longer be trusted. Giving up what is
// left on the server is the implementation's. A holding that has ended
// keeps its first cause.
func (h *Holding) Lose(cause error) { h.end(cause) }

// end ends the holding with cause unless it has ended; the contexts made
// so far are cancelled before it returns.
func (h *Holding) end(cause error) {
	h.mu.Lock()
	if h.cause != nil {
		h.mu.Unlock()
		return
	}
	h.cause = cause
	cancel := h.cancel
	h.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

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
		h.end(ErrReleased)
	}
	// Lost: a Lose came first (its cause stays), before this Release or
	// racing with it; then the implementation cleans up, not Free.
	if cause := h.Err(); cause != nil && cause != ErrReleased { // ours is exactly ErrReleased
		return fmt.Errorf("%w before Release: %w", ErrLockLost, cause)
	}
	if !last {
		return nil
	}
	return h.impl.Free(ctx)
}

// HeldLease is one Lease on a Holding. Its context is a child of the
// holding's: it ends with the holding or at its own Release. An
// implementation may embed it in a Lease type with more methods.
type HeldLease struct {
	h        *Holding
	released atomic.Bool

	mu     sync.Mutex
	cause  error // set at Release: ErrReleased, or the holding's cause if it came first
	ctx    context.Context
	cancel context.CancelCauseFunc
}

var _ Lease = (*HeldLease)(nil)

// Context implements Lease.
func (l *HeldLease) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancelCause(l.h.Context())
		if l.cause != nil {
			l.cancel(l.cause)
		}
	}
	return l.ctx
}

// Done implements Lease.
func (l *HeldLease) Done() <-chan struct{} { return l.Context().Done() }

// Token implements Lease.
func (l *HeldLease) Token() (int64, bool) {
	if !l.h.hasToken {
		return 0, false
	}
	return l.h.token, true
}

// Err implements Lease.
func (l *HeldLease) Err() error {
	l.mu.Lock()
	ctx, cause := l.ctx, l.cause
	l.mu.Unlock()
	switch {
	case ctx != nil:
		if ctx.Err() == nil {
			return nil
		}
		return context.Cause(ctx)
	case cause != nil:
		return cause
	}
	return l.h.Err()
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
	// First; when the holding already ended its cause stays.
	cause := l.h.Err()
	if cause == nil {
		cause = ErrReleased
	}
	l.mu.Lock()
	l.cause = cause
	cancel := l.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel(ErrReleased) // a no-op when the holding's end came first
	}
	return l.h.release(ctx)
}
