package ttl

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// The causes of a lease's end the watchdog gives, besides ErrNotOurs.
var (
	errLapsed        = locktrace.NewEndError("no renewal confirmed within the TTL less the margin", locktrace.EndTTLLapsed)
	errRenewalFailed = locktrace.NewEndError("renewal failed", locktrace.EndRenewalFailed)
)

// watchdog renews one holding and ends it when its deadline passes. It
// has no goroutine of its own: the clock wakes it at its deadline or when
// a renewal is due, and a renewal runs in a goroutine of its own.
type watchdog struct {
	rh    *hold.Holding[*watchdog]
	srv   Server
	terms Terms
	base  context.Context // supplies the values of the renewals' contexts
	bg    *Pending        // the client's clean-ups: a release retried in the background

	renewing sync.WaitGroup // the renewal in flight, if any

	mu            sync.Mutex
	deadline      time.Time          // monotonic
	renewAt       time.Time          // when the next renewal is due
	cancelRenewal context.CancelFunc // of the renewal in flight; nil when none is
	over          bool               // released or lost: no more renewals
	lost          error              // why it was lost; nil when released

	// The clock's, under its mutex.
	at    time.Time // when the clock wakes it
	index int       // in the clock's heap; -1 when not in it
}

// schedule has the clock wake w at its deadline, or sooner when a renewal
// is due and none is in flight. w.mu is held.
func (w *watchdog) schedule() {
	at := w.deadline
	if w.cancelRenewal == nil && w.renewAt.Before(at) {
		at = w.renewAt
	}
	theClock.set(w, at)
}

// wake is the clock's call: it ends the holding once its deadline has
// passed, and starts a renewal when one is due.
func (w *watchdog) wake() {
	now := time.Now()
	w.mu.Lock()
	switch {
	case w.over:
		w.mu.Unlock()
		return
	case !now.Before(w.deadline):
		w.mu.Unlock()
		w.lose(w.lapsed())
		return
	case w.cancelRenewal == nil && !now.Before(w.renewAt):
		// A renewal confirmed after the deadline is no use.
		ctx, cancel := context.WithDeadline(context.WithoutCancel(w.base), w.deadline)
		w.cancelRenewal = cancel
		w.renewing.Add(1) // under mu: Free waits for it only once over is set
		go w.renew(ctx, now)
	}
	w.schedule()
	w.mu.Unlock()
}

// lapsed is the cause of a lease whose deadline passed unrenewed.
func (w *watchdog) lapsed() error {
	return fmt.Errorf("%w: %s: %w", recipes.ErrLockLost, w.terms.What, errLapsed)
}

// ServerDeadline implements hold.ServerDeadliner: the server-side expiry.
func (w *watchdog) ServerDeadline() (time.Time, bool) { return w.expiry(), true }

// reportRenewal tells the holding's trace of a renewal sent at sent.
func (w *watchdog) reportRenewal(sent time.Time, err error) {
	if t, id := w.rh.Traced(); t != nil && t.Renewal != nil {
		t.Renewal(locktrace.RenewalInfo{Lock: id, Latency: time.Since(sent), Err: err})
	}
}

// renew renews the lock, in ctx, trying again after errors that do not
// end a renewal (transient, or Refused: the deadline bounds them), and
// moves the deadline to sent plus the validity when it is confirmed; a
// failure ends the holding.
func (w *watchdog) renew(ctx context.Context, sent time.Time) {
	defer w.renewing.Done()
	err := retry(ctx, 0, EndsRenewal, func() error { return w.srv.Renew(ctx) })
	late := ctx.Err() == context.DeadlineExceeded
	w.reportRenewal(sent, err)
	w.mu.Lock()
	w.cancelRenewal()
	w.cancelRenewal = nil
	if w.over { // released or lost meanwhile
		w.mu.Unlock()
		return
	}
	if err == nil {
		if d := sent.Add(w.terms.Valid); d.After(w.deadline) {
			w.deadline = d
		}
		w.renewAt = sent.Add(w.terms.Every)
		w.schedule()
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	switch {
	case late:
		w.lose(w.lapsed())
	case errors.Is(err, ErrNotOurs):
		w.lose(fmt.Errorf("%w: %s: %w", recipes.ErrLockLost, w.terms.What, err))
	default:
		w.lose(fmt.Errorf("%w: %s: %w: %w", recipes.ErrLockLost, w.terms.What, errRenewalFailed, err))
	}
}

// halt stops the wake-ups and the renewal in flight, once: false when the
// holding was already released or lost. cause is why (nil: released).
func (w *watchdog) halt(cause error) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return false
	}
	w.over, w.lost = true, cause
	theClock.remove(w)
	if w.cancelRenewal != nil {
		w.cancelRenewal()
	}
	return true
}

// lose ends the holding with cause, stops renewing and frees what may be
// left of the lock on the server, in the background; it does nothing once
// the holding was released or lost.
func (w *watchdog) lose(cause error) {
	w.rh.Lose(cause) // first; it does nothing once the holding has ended
	if w.halt(cause) {
		FreeInBackground(w.bg, w.base, w.srv, w.expiry())
	}
}

// expiry is when the server lets the lock go at the latest: the TTL after
// the send time of the last confirmed request (the deadline is that send
// time plus the validity).
func (w *watchdog) expiry() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deadline.Add(w.terms.TTL - w.terms.Valid)
}
