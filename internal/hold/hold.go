// Package hold is the holding machinery every lock of this module shares,
// on every backend: the leases that re-entered one holding of a lock, their
// contexts, the last Release that frees the lock, and Lose, which ends them
// all with a cause. It is internal: a backend outside this module
// implements recipes.Locker and recipes.Lease itself (see package recipes).
//
// An implementation keeps its own state of a holding in a type T (a
// pointer) that frees the lock on the server; Holding[T] gives T back
// (Impl, HeldBy) without a type assertion.
package hold

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

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

// Holding is one holding of a lock, shared by the leases that re-entered
// it: what a lock implementation keeps between Acquire and the last
// Release. Its context carries the re-entry key of the lock (HeldBy), and
// ends when the last lease is released (recipes.ErrReleased) or when the
// implementation calls Lose. impl, the implementation's own state of the
// holding, says how the lock is given up on the server (its Free); the
// implementation watches whatever can make the lock untrustworthy (a
// session, a TTL).
//
// The contexts of a holding and of its leases are made when first asked
// for: a lock taken and released without anyone looking at them costs no
// context. One made after the end is born ended, with the same cause.
type Holding[T Freer] struct {
	core
	impl T
}

// core is the part of a Holding that does not depend on its
// implementation's type: what its leases point to.
type core struct {
	owner    any
	self     any // the *Holding[T], stored under owner in the context
	token    int64
	hasToken bool
	freer    Freer // the implementation, as a Freer
	base     context.Context

	mu     sync.Mutex
	count  int   // leases not yet released
	cause  error // why the holding ended; nil while it lasts
	ctx    context.Context
	cancel context.CancelCauseFunc
	tr     *traced // the trace it reports to, once attached (trace.go); nil: none
}

// New starts the holding of the lock owner (the Locker: the key of
// re-entry, which should be a pointer) and returns it with its first lease.
// base supplies the context values (not the cancellation) of the Acquire
// call. token and hasToken are the leases' Token. impl is the
// implementation's own state of the holding (Impl returns it), which frees
// the lock.
func New[T Freer](base context.Context, owner any, token int64, hasToken bool, impl T) (*Holding[T], *Lease) {
	h, first := new(Holding[T]), new(Lease)
	h.Start(first, base, owner, token, hasToken, impl)
	return h, first
}

// Start is New for a zero Holding and a zero first Lease that the
// implementation keeps inside its own values (which saves allocating
// them); neither may be copied afterwards.
func (h *Holding[T]) Start(first *Lease, base context.Context, owner any, token int64, hasToken bool, impl T) {
	h.owner, h.self, h.token, h.hasToken, h.base, h.count = owner, h, token, hasToken, base, 1
	h.impl, h.freer = impl, impl
	first.h = &h.core
}

// HeldBy returns the live holding of owner's lock that ctx carries (ctx
// comes from one of its leases), or nil.
func HeldBy[T Freer](ctx context.Context, owner any) *Holding[T] {
	if ctx == nil {
		return nil
	}
	// The owner itself is the key: a pointer, boxing it costs nothing, and
	// what is stored under it is checked to be a Holding of that owner.
	h, _ := ctx.Value(owner).(*Holding[T])
	if h == nil || h.owner != owner || h.Err() != nil {
		return nil
	}
	return h
}

// Impl is what the implementation gave New or Start.
func (h *Holding[T]) Impl() T { return h.impl }

// Reenter adds a lease to a live holding; nil when it has ended.
func (h *Holding[T]) Reenter() *Lease {
	l := new(Lease)
	if !h.ReenterInto(l) {
		return nil
	}
	return l
}

// ReenterInto is Reenter for a zero Lease that the implementation keeps
// inside its own value: it makes l a lease of the holding, or reports false
// when the holding has ended.
func (h *Holding[T]) ReenterInto(l *Lease) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count == 0 || h.cause != nil {
		return false
	}
	h.count++
	l.h = &h.core
	return true
}

// Context ends with the holding: at the last Release, or at Lose, with
// that cause.
func (h *core) Context() context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx == nil {
		values := context.WithValue(context.WithoutCancel(h.base), h.owner, h.self)
		h.ctx, h.cancel = context.WithCancelCause(values)
		if h.cause != nil {
			h.cancel(h.cause)
		}
	}
	return h.ctx
}

// Err is why the holding ended (recipes.ErrReleased, or Lose's cause), nil
// while it lasts.
func (h *core) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cause
}

// Lose ends the holding, and every lease of it, with cause (an error that
// is recipes.ErrLockLost): the lock can no longer be trusted. Giving up
// what is left on the server is the implementation's. A holding that has
// ended keeps its first cause.
func (h *core) Lose(cause error) { h.end(cause) }

// end ends the holding with cause unless it has ended; the contexts made
// so far are cancelled before it returns.
func (h *core) end(cause error) {
	h.mu.Lock()
	if h.cause != nil {
		h.mu.Unlock()
		return
	}
	h.cause = cause
	cancel := h.cancel
	report := h.tr != nil && cause != recipes.ErrReleased
	if h.tr != nil {
		h.tr.ended, h.tr.reported = time.Now(), report
	}
	h.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
	if report {
		h.reportLoss()
	}
}

// release drops one lease; the last one ends the holding and frees the
// lock.
func (h *core) release(ctx context.Context) error {
	h.mu.Lock()
	h.count--
	last := h.count == 0
	h.mu.Unlock()
	if last {
		// The holding ends before the lock is freed: once it is, another
		// holder may start at once.
		h.end(recipes.ErrReleased)
	}
	// Lost: a Lose came first (its cause stays), before this Release or
	// racing with it; then the implementation cleans up, not Free.
	if cause := h.Err(); cause != nil && cause != recipes.ErrReleased { // ours is exactly ErrReleased
		return fmt.Errorf("%w before Release: %w", recipes.ErrLockLost, cause)
	}
	if !last {
		return nil
	}
	err := h.freer.Free(ctx)
	h.reportRelease(err)
	return err
}

// Lease is one recipes.Lease on a Holding. Its context is a child of the
// holding's: it ends with the holding or at its own Release. An
// implementation may embed it in a lease type with more methods.
type Lease struct {
	h        *core
	released atomic.Bool

	mu     sync.Mutex
	cause  error // set at Release: ErrReleased, or the holding's cause if it came first
	ctx    context.Context
	cancel context.CancelCauseFunc
}

var _ recipes.Lease = (*Lease)(nil)

// Context implements recipes.Lease.
func (l *Lease) Context() context.Context {
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

// Done implements recipes.Lease.
func (l *Lease) Done() <-chan struct{} { return l.Context().Done() }

// Token implements recipes.Lease.
func (l *Lease) Token() (int64, bool) {
	if !l.h.hasToken {
		return 0, false
	}
	return l.h.token, true
}

// Err implements recipes.Lease.
func (l *Lease) Err() error {
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

// Release implements recipes.Lease: the lease ends at once, and the last
// lease of the holding frees the lock.
func (l *Lease) Release(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", recipes.ErrInvalidArgument)
	}
	if !l.released.CompareAndSwap(false, true) {
		return recipes.ErrNotHeld
	}
	// First; when the holding already ended its cause stays.
	cause := l.h.Err()
	if cause == nil {
		cause = recipes.ErrReleased
	}
	l.mu.Lock()
	l.cause = cause
	cancel := l.cancel
	l.mu.Unlock()
	if cancel != nil {
		cancel(recipes.ErrReleased) // a no-op when the holding's end came first
	}
	return l.h.release(ctx)
}
