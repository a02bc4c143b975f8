// Package ttl is what the TTL-based locks of compat share: a lease whose
// context ends, with a cause that is recipes.ErrLockLost, before the
// server may let the lock go. The lease keeps a local deadline on the
// monotonic clock: the send time of the request that took or last renewed
// the lock, plus the TTL, less a margin. A watchdog renews the lock every
// third of the TTL, and the lease ends when the deadline passes
// unrenewed (whatever the network does), when a renewal finds the lock
// gone or someone else's, or on any renewal error.
package ttl

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/recipes"
)

// ErrNotOurs: the lock is gone from the server, or held by someone else.
var ErrNotOurs = errors.New("the lock is not ours on the server any more")

// Server is one holding's lock on its server(s).
type Server interface {
	// Renew extends the lock by its TTL if it is still ours; ErrNotOurs if
	// it is not.
	Renew(ctx context.Context) error
	// Free gives the lock up if it is still ours (compare and delete), and
	// wakes the next waiter where the backend can.
	Free(ctx context.Context) error
}

// Terms are how long a holding is trusted and how often it is renewed.
type Terms struct {
	// Valid is how long after the send time of the request that took (or
	// last renewed) the lock the lease is trusted: the TTL less the margin.
	Valid time.Duration
	// Every is how often the watchdog renews.
	Every time.Duration
	// What names the lock in causes ("redis lock orders").
	What string
}

// RenewEvery is the watchdog's period for a lease trusted for valid after
// each confirmed request: a third of it, so that two renewals can fail
// before the lease ends.
func RenewEvery(valid time.Duration) time.Duration { return valid / 3 }

// watchdog renews one holding and ends it when its deadline passes.
type watchdog struct {
	rh     *recipes.Holding
	srv    Server
	terms  Terms
	cancel context.CancelFunc // stops the renewals
	done   chan struct{}      // closed when the renewal loop is over

	mu       sync.Mutex
	deadline time.Time // monotonic
	timer    *time.Timer
}

// Hold starts holding the lock owner took with a request sent at sent, and
// returns the holding's first lease. base supplies the context values (not
// the cancellation) of the Acquire call. The lease is refused (an error
// that is recipes.ErrNotAcquired, the lock freed) when its deadline has
// already passed.
func Hold(base context.Context, owner any, token int64, hasToken bool, sent time.Time,
	terms Terms, srv Server) (*recipes.HeldLease, error) {
	deadline := sent.Add(terms.Valid)
	if !time.Now().Before(deadline) {
		freeQuietly(base, srv)
		return nil, fmt.Errorf("%w: %s: taken too late to be trusted (the request took longer than the TTL less the margin)",
			recipes.ErrNotAcquired, terms.What)
	}
	w := &watchdog{srv: srv, terms: terms, done: make(chan struct{}), deadline: deadline}
	rh, first := recipes.NewHolding(base, owner, token, hasToken, w)
	w.rh = rh
	ctx, cancel := context.WithCancel(context.WithoutCancel(base))
	w.cancel = cancel
	w.mu.Lock()
	w.timer = time.AfterFunc(time.Until(deadline), w.expire)
	w.mu.Unlock()
	go w.renewals(ctx)
	return first, nil
}

// Deadline is when the holding stops being trusted unless renewed.
func Deadline(h *recipes.Holding) time.Time {
	w := h.Impl().(*watchdog)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deadline
}

// expire ends the holding if its deadline has passed (a renewal may have
// moved it meanwhile: then the timer is set again).
func (w *watchdog) expire() {
	w.mu.Lock()
	left := time.Until(w.deadline)
	if left > 0 {
		w.timer.Reset(left)
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	w.lose(w.lapsed())
}

// lapsed is the cause of a lease whose deadline passed unrenewed.
func (w *watchdog) lapsed() error {
	return fmt.Errorf("%w: %s: no renewal confirmed within the TTL less the margin", recipes.ErrLockLost, w.terms.What)
}

// renewals renews every terms.Every until ctx ends.
func (w *watchdog) renewals(ctx context.Context) {
	defer close(w.done)
	tick := time.NewTicker(w.terms.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.rh.Context().Done():
			return
		case <-tick.C:
		}
		sent := time.Now()
		w.mu.Lock()
		rctx, cancel := context.WithDeadline(ctx, w.deadline) // a renewal later than that is no use
		w.mu.Unlock()
		err := w.srv.Renew(rctx)
		late := rctx.Err() == context.DeadlineExceeded
		cancel()
		switch {
		case ctx.Err() != nil:
			return // released meanwhile
		case err != nil && late:
			w.end(w.lapsed())
			return
		case errors.Is(err, ErrNotOurs):
			w.end(fmt.Errorf("%w: %s: %w", recipes.ErrLockLost, w.terms.What, err))
			return
		case err != nil:
			w.end(fmt.Errorf("%w: %s: renewal failed: %w", recipes.ErrLockLost, w.terms.What, err))
			return
		}
		w.mu.Lock()
		if d := sent.Add(w.terms.Valid); d.After(w.deadline) {
			w.deadline = d
		}
		w.mu.Unlock()
	}
}

// lose ends the holding with cause (from outside the renewal loop), stops
// renewing and frees what may be left of the lock on the server.
func (w *watchdog) lose(cause error) {
	w.end(cause)
	<-w.done
}

// end ends the holding with cause and frees what may be left of the lock on
// the server, in the background; the renewal loop stops.
func (w *watchdog) end(cause error) {
	w.rh.Lose(cause)
	w.halt()
	go freeQuietly(context.Background(), w.srv)
}

// halt stops the renewals and the deadline timer.
func (w *watchdog) halt() {
	w.cancel()
	w.mu.Lock()
	w.timer.Stop()
	w.mu.Unlock()
}

// stop halts the watchdog and waits for its loop.
func (w *watchdog) stop() {
	w.halt()
	<-w.done
}

// Free gives the lock up at the last Release.
func (w *watchdog) Free(ctx context.Context) error {
	w.stop()
	if err := w.srv.Free(ctx); err != nil {
		if errors.Is(err, ErrNotOurs) {
			return fmt.Errorf("%w: %s: %w", recipes.ErrLockLost, w.terms.What, err)
		}
		return fmt.Errorf("%s: release: %w", w.terms.What, err)
	}
	return nil
}

// freeTimeout bounds a release made in the background.
const freeTimeout = 5 * time.Second

// freeQuietly frees the lock, bounded, ignoring failures: the TTL ends it
// anyway.
func freeQuietly(base context.Context, srv Server) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(base), freeTimeout)
	defer cancel()
	_ = srv.Free(ctx)
}

// Jitter returns d plus up to a tenth of it, and at least a millisecond more.
func Jitter(d time.Duration) time.Duration {
	return d + time.Millisecond + time.Duration(rand.Int64N(int64(max(d, 0)/10)+1))
}

// Sleep waits d or until ctx ends; false when ctx ended.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
