// Package ttl is what the TTL-based locks of compat share: a lease whose
// context ends, with a cause that is recipes.ErrLockLost, before the
// server may let the lock go. The lease keeps a local deadline on the
// monotonic clock: the send time of the request that took or last renewed
// the lock, plus the TTL, less a margin. A watchdog renews the lock every
// third of the TTL, and the lease ends when the deadline passes
// unrenewed (whatever the network does), when a renewal finds the lock
// gone or someone else's, or when it fails with an error that trying
// again cannot mend (Permanent). A renewal that fails otherwise (a
// connection reset by a failover, a slot migration's TRYAGAIN, a
// certificate refused to a new connection: Refused) is tried again until
// the deadline. One timer for the whole process wakes the watchdogs
// (clock.go): a lease costs no goroutine and no timer of its own until a
// renewal is due.
package ttl

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// ErrNotOurs: the lock is gone from the server, or held by someone else.
var ErrNotOurs = recipes.NewEndError("the lock is not ours on the server any more", recipes.EndGone)

// The causes of a lease's end the watchdog gives, besides ErrNotOurs.
var (
	errLapsed        = recipes.NewEndError("no renewal confirmed within the TTL less the margin", recipes.EndTTLLapsed)
	errRenewalFailed = recipes.NewEndError("renewal failed", recipes.EndRenewalFailed)
)

// ErrPermanent marks an error that trying again cannot mend (a closed
// client, a refused authentication, a script the server rejects, a
// certificate refused): Acquire returns it at once, and a background
// release gives up. A renewal stops at it too, unless it is only Refused.
// Backends wrap such errors with Permanent or Refused; every other error
// is taken as transient (an unreachable server) and retried within the
// caller's context.
var ErrPermanent = errors.New("permanent")

// Permanent marks err as permanent (nil stays nil): an acquisition, a
// renewal and a release all give up at it.
func Permanent(err error) error {
	if err == nil || markOf(err) == forGood {
		return err
	}
	return permanentError{err, forGood}
}

// Refused marks err as a new connection's refusal that trying again meets
// again, a certificate refused (package refusal's rule) (nil stays nil). It is
// ErrPermanent, so an acquisition returns it at once and a release gives
// up; but a renewal tries again, as after a transient error, until the
// lease's deadline: a connection the client already holds may still work
// (a pool's, made before a certificate was rotated), and a holder gains
// nothing by ending its lease before then.
func Refused(err error) error {
	if err == nil || markOf(err) == refused {
		return err
	}
	return permanentError{err, refused}
}

// Transient marks err as one that trying again may mend (nil stays nil):
// it is not ErrPermanent, whatever it wraps, and errors.Is and errors.As
// see through it to everything else. Redlock's renewal uses it for a
// server's permanent error while a majority of the servers may still
// answer.
func Transient(err error) error {
	if err == nil || markOf(err) == transient {
		return err
	}
	return transientError{err}
}

// EndsRenewal reports whether a renewal that failed with err is not tried
// again: err is marked Permanent, and its outermost mark is not Refused
// or Transient.
func EndsRenewal(err error) bool { return markOf(err) == forGood }

// mark is how an error is marked for trying again.
type mark int

const (
	unmarked  mark = iota // transient: not ErrPermanent
	forGood               // Permanent
	refused               // Refused: permanent, but a renewal tries again
	transient             // Transient: not ErrPermanent, whatever it wraps
)

// marked is the type of the marks' errors.
type marked interface{ mark() mark }

// markOf is err's outermost mark (the first found as errors.As searches),
// or unmarked.
func markOf(err error) mark {
	var m marked
	if errors.As(err, &m) {
		return m.mark()
	}
	return unmarked
}

type permanentError struct {
	err  error
	kind mark // forGood or refused
}

func (e permanentError) Error() string        { return e.err.Error() }
func (e permanentError) Unwrap() error        { return e.err }
func (e permanentError) Is(target error) bool { return target == ErrPermanent }
func (e permanentError) mark() mark           { return e.kind }

// transientError hides the marks of the error it wraps: it has no Unwrap,
// and answers errors.Is and errors.As for it, but never for ErrPermanent
// or a mark.
type transientError struct{ err error }

func (e transientError) Error() string { return e.err.Error() }
func (e transientError) mark() mark    { return transient }

func (e transientError) Is(target error) bool {
	return target != ErrPermanent && errors.Is(e.err, target)
}

func (e transientError) As(target any) bool {
	switch target.(type) {
	case *marked, *permanentError:
		return false // the marks inside stay hidden
	}
	return errors.As(e.err, target)
}

// Server is one holding's lock on its server(s).
type Server interface {
	// Renew tries once to extend the lock by its TTL if it is still ours;
	// ErrNotOurs if it is not. The watchdog tries again after any other
	// error not marked Permanent (one marked Refused or Transient too),
	// until ctx (which ends at the lease's deadline) ends.
	Renew(ctx context.Context) error
	// Free gives the lock up if it is still ours (compare and delete), and
	// wakes the next waiter where the backend can.
	Free(ctx context.Context) error
}

// MaxTTL is the longest TTL every TTL lock accepts: 30 days (memcached
// takes a longer expiry as a date, and a waiter's timers are TTL multiples).
const MaxTTL = 30 * 24 * time.Hour

// IsNil reports whether v is nil, or an interface holding a nil pointer
// (a typed nil: var c *redis.Client; New(c)), which constructors refuse:
// its first use would panic, perhaps inside a library goroutine.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// Terms are how long a holding is trusted and how often it is renewed.
type Terms struct {
	// TTL is how long after the send time of the request that took (or
	// last renewed) the lock the server may keep it at most: a release
	// that could not complete is retried in the background until then.
	TTL time.Duration
	// Valid is how long after the send time of the request that took (or
	// last renewed) the lock the lease is trusted: the TTL less the margin.
	Valid time.Duration
	// Every is how often the watchdog renews.
	Every time.Duration
	// What names the lock in causes ("redislock orders").
	What string
}

// NewTerms are the terms of a lease on a lock of TTL ttl trusted for valid
// after each confirmed request, named what: renewed every third of valid,
// so that two renewals can fail before the lease ends.
func NewTerms(ttl, valid time.Duration, what string) Terms {
	return Terms{TTL: ttl, Valid: valid, Every: valid / 3, What: what}
}

// Acquire is what every Acquire and TryAcquire of a TTL lock does around
// the backend's own take: it checks ctx, re-enters the live holding of
// owner that ctx carries, and reports the acquisition of the lock id to
// the trace ctx carries and to own (the lock's). take calls a.Queued
// when it finds the lock held (a is nil when untraced; its methods do
// nothing then).
func Acquire(ctx context.Context, owner any, own *recipes.Trace, id recipes.LockID, try bool,
	take func(a *hold.Acquisition) (recipes.Lease, error)) (recipes.Lease, error) {
	if err := recipes.CheckContext(ctx); err != nil {
		return nil, err
	}
	a := hold.Begin(ctx, own, id, try)
	if h := hold.HeldBy[*watchdog](ctx, owner); h != nil {
		if le := h.Reenter(); le != nil { // nil once the holding has just ended
			a.Done(le, nil, true)
			return le, nil
		}
	}
	le, err := take(a)
	if err != nil {
		le = nil // not a typed nil in the interface
	}
	a.Done(le, err, false)
	return le, err
}

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

// Hold starts holding the lock owner took with a request sent at sent, and
// returns the holding's first lease. base supplies the context values (not
// the cancellation) of the Acquire call; bg counts the releases it retries
// in the background, for the client's Close. The lease is refused (an
// error that is recipes.ErrNotAcquired, the lock freed) when its deadline
// has already passed.
func Hold(base context.Context, owner any, token int64, hasToken bool, sent time.Time,
	terms Terms, srv Server, bg *Pending) (*hold.Lease, error) {
	deadline := sent.Add(terms.Valid)
	if !time.Now().Before(deadline) {
		FreeInBackground(bg, base, srv, sent.Add(terms.TTL))
		return nil, fmt.Errorf("%w: %s: taken too late to be trusted (the request took longer than the TTL less the margin)",
			recipes.ErrNotAcquired, terms.What)
	}
	w := &watchdog{srv: srv, terms: terms, base: base, bg: bg, deadline: deadline, renewAt: sent.Add(terms.Every), index: -1}
	rh, first := hold.New(base, owner, token, hasToken, w)
	w.rh = rh
	w.mu.Lock()
	w.schedule()
	w.mu.Unlock()
	return first, nil
}

// Deadline is when the live holding of owner that ctx carries (a lease's
// context) stops being trusted unless renewed; zero when ctx carries none.
func Deadline(ctx context.Context, owner any) time.Time {
	h := hold.HeldBy[*watchdog](ctx, owner)
	if h == nil {
		return time.Time{}
	}
	w := h.Impl()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deadline
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
		t.Renewal(recipes.RenewalInfo{Lock: id, Latency: time.Since(sent), Err: err})
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

// Free gives the lock up at the last Release, once no renewal is in
// flight. A loss that came first (racing the Release) is reported as such;
// what is left of the lock is freed in the background then.
func (w *watchdog) Free(ctx context.Context) error {
	if !w.halt(nil) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.lost
	}
	w.renewing.Wait()
	err := w.srv.Free(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotOurs):
		return fmt.Errorf("%w: %s: %w", recipes.ErrLockLost, w.terms.What, err)
	case errors.Is(err, ErrPermanent):
		return fmt.Errorf("%s: release: %w", w.terms.What, err)
	}
	// Ctx ended, or the server did not answer: the lock must not stay
	// held for the rest of its TTL, so the release goes on.
	FreeInBackground(w.bg, w.base, w.srv, w.expiry())
	return fmt.Errorf("%s: release: %w (retried in the background until the lock would expire)", w.terms.What, err)
}

// Bounds of a release made in the background.
const (
	// freeTimeout bounds one attempt.
	freeTimeout = 5 * time.Second
	// freeRetry is the first pause between attempts, doubled up to
	// freeRetryCap.
	freeRetry    = 20 * time.Millisecond
	freeRetryCap = time.Second
)

// FreeInBackground frees the lock on a clean-up of bg, trying again after
// transient errors until it is freed, found not ours, or the server would
// have let it go anyway (until): the lock is never left held for its
// whole TTL by a release that failed once. It tries once even past until:
// a backend may hold more than the lock (sqllock's MySQL wake-up holds a
// connection). base supplies the context values.
func FreeInBackground(bg *Pending, base context.Context, srv Server, until time.Time) {
	bg.Go(base, func(bg context.Context) {
		pause := freeRetry
		for first := true; ; first = false {
			left := time.Until(until)
			if left <= 0 {
				if !first {
					return
				}
				left = freeTimeout
			}
			ctx, cancel := context.WithTimeout(bg, min(freeTimeout, left))
			err := srv.Free(ctx)
			cancel()
			if err == nil || errors.Is(err, ErrNotOurs) || errors.Is(err, ErrPermanent) {
				return
			}
			if !Sleep(bg, min(pause, time.Until(until))) {
				return
			}
			pause = min(2*pause, freeRetryCap)
		}
	})
}

// Retry runs op until it succeeds, finds the lock not ours, fails for
// good (ErrPermanent), ctx ends, or it was tried tries times (0: no
// limit), pausing between tries: 5 ms, doubled up to 200 ms, with jitter.
// It returns op's last error.
func Retry(ctx context.Context, tries int, op func() error) error {
	return retry(ctx, tries, func(err error) bool { return errors.Is(err, ErrPermanent) }, op)
}

// retry is Retry, giving up at the errors for which final is true (and
// at ErrNotOurs).
func retry(ctx context.Context, tries int, final func(error) bool, op func() error) error {
	for try, pause := 1, retryPause; ; try, pause = try+1, min(2*pause, retryPauseCap) {
		err := op()
		if err == nil || errors.Is(err, ErrNotOurs) || final(err) || ctx.Err() != nil || try == tries {
			return err
		}
		if !Sleep(ctx, Jitter(pause)) {
			return err
		}
	}
}

// Pauses of Retry.
const (
	retryPause    = 5 * time.Millisecond
	retryPauseCap = 200 * time.Millisecond
)

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
