package ttl

import (
	"context"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// ErrNotOurs: the lock is gone from the server, or held by someone else.
var ErrNotOurs = locktrace.NewEndError("the lock is not ours on the server any more", locktrace.EndGone)

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

// Acquire is what every Acquire and TryAcquire of a TTL lock does around
// the backend's own take: it checks ctx, re-enters the live holding of
// owner that ctx carries, and reports the acquisition of the lock id to
// the trace ctx carries and to own (the lock's). take calls a.Queued
// when it finds the lock held (a is nil when untraced; its methods do
// nothing then).
func Acquire(ctx context.Context, owner any, own *locktrace.Trace, id locktrace.LockID, try bool,
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
