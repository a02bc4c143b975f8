package grants

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Queue is one waiter's side of a lock whose release hands the lock to
// the next waiter in its queue and tells it with a grant: the backend's
// requests, as Wait drives them. The waiter's identity and its queue
// entry are the Queue's own.
type Queue interface {
	// String names the lock in errors.
	String() string
	// Watch registers the waiter for its grants; nil when none can come
	// (no listener): its timer alone wakes it then. Wait calls it once,
	// before the first attempt, and stops the watcher when it returns.
	Watch() *Watcher
	// Attempt runs one attempt, sent at sent: it takes the lock when it
	// is free and no one waits ahead, and, with queue, queues the waiter
	// when it does not (or refreshes its entry). Its errors name the
	// backend; those that trying again cannot mend are ttl.ErrPermanent.
	Attempt(ctx context.Context, queue bool, sent time.Time) (Outcome, error)
	// Trusts reports whether the waiter may hold the lock from grant g
	// without confirming it with an attempt.
	Trusts(g Grant) bool
	// Hold turns the lock, taken with token by a request sent at sent,
	// into a lease.
	Hold(ctx context.Context, token int64, sent time.Time) (*hold.Lease, error)
	// GiveUp takes the waiter out of the queue, and gives the lock back
	// if it was handed to it meanwhile, before it returns, whatever ctx
	// says (bounded); what the server does not confirm in time goes on in
	// the background.
	GiveUp(ctx context.Context)
}

// Outcome is what an attempt found.
type Outcome struct {
	Acquired bool
	Token    int64 // when Acquired
	// Refresh, when not Acquired and not 0, says that a live waiter is
	// ahead of this one in the queue: that waiter watches the holder's
	// expiry (and is handed the lock first), so this one need not try
	// at Wait, only refresh its entry within Refresh (a queue entry
	// outlives it). A grant still wakes it at once.
	Refresh time.Duration
	// Wait is, when not Acquired, how long the holder's lock lives at
	// most (0: unknown): the waiter tries again by then.
	Wait time.Duration
	// Why, when not Acquired and not nil, says why a lock that may be
	// free was refused (the backend's ErrQuiet): a TryAcquire's error
	// wraps it.
	Why error
}

// Wait takes the lock through q: with wait false (TryAcquire), at once
// or not at all (an error that is recipes.ErrLocked when it is held);
// with wait true (Acquire), queued until the lock is handed to the
// waiter, or ctx ends (an error that is recipes.ErrNotAcquired and
// ctx's), or an attempt fails for good. lockTTL is the lock's TTL: the
// waiter's timer fires within it, so that its queue entry is refreshed
// in time. Every way out but a lease, and a TryAcquire found held, gives
// up through q: nothing of the waiter is left in the queue. a is told when
// the lock is found held.
func Wait(ctx context.Context, q Queue, wait bool, lockTTL time.Duration, a *hold.Acquisition) (*hold.Lease, error) {
	// The watch is registered before the first attempt can queue us: a
	// grant may reach this client before the attempt's own reply does
	// (two connections), and a grant to an id not registered yet would
	// be dropped, leaving us asleep on our timer while the lock is held
	// in our name. Only that reply says whether the attempt queued us, so
	// every waiting Acquire registers, even one that finds the lock free.
	var watch *Watcher
	if wait {
		watch = q.Watch()
	}
	if watch != nil {
		defer watch.Stop()
	}
	confirmed := watch == nil || watch.Confirmed
	var backoff ttl.Backoff
	// failed is the error of the last attempt that failed, until one is
	// answered: when ctx ends, the outage is the news, not a lock held.
	var failed error
	for {
		// From the send on, the attempt may land, even if its reply is
		// lost or ctx ends first: every way out but a lease gives up.
		sent := time.Now()
		got, err := q.Attempt(ctx, wait, sent)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, giveUp(ctx, q, recipes.NotAcquiredAfter(ctx, failed))
		case err != nil && (!wait || errors.Is(err, ttl.ErrPermanent)):
			return nil, giveUp(ctx, q, fmt.Errorf("%w: %w", recipes.ErrNotAcquired, err))
		case err != nil:
			// The attempt may or may not have run: trying again finds out.
			failed = err
			if !ttl.Sleep(ctx, ttl.Jitter(backoff.Next())) {
				return nil, giveUp(ctx, q, recipes.NotAcquiredAfter(ctx, failed))
			}
			continue
		case got.Acquired:
			return q.Hold(ctx, got.Token, sent)
		}
		// Held, or a waiter ahead, or refused for got.Why: the call waits
		// in the queue, or TryAcquire is refused (it did not queue).
		failed = nil
		if got.Why != nil {
			a.Quiet() // the lock may be free: no holder was found
		} else {
			a.Queued()
		}
		switch {
		case !wait && got.Why != nil:
			return nil, fmt.Errorf("%w: %s: %w", recipes.ErrLocked, q, got.Why)
		case !wait:
			return nil, fmt.Errorf("%w: %s", recipes.ErrLocked, q)
		}
		backoff.Reset()
		if !confirmed {
			// A grant sent before the server confirmed the subscription
			// (or LISTEN) was missed: once it has, look again.
			if !watch.AwaitReady(ctx) {
				return nil, giveUp(ctx, q, recipes.NotAcquired(ctx))
			}
			confirmed = true // or past ReadyWait: the timer alone until it is
			continue
		}
		wake, most := got.Wait, lockTTL
		if got.Refresh > 0 {
			wake, most = got.Refresh, got.Refresh
		}
		g, granted, ok := await(ctx, watch, wake, most)
		if !ok {
			return nil, giveUp(ctx, q, recipes.NotAcquired(ctx))
		}
		if granted && q.Trusts(g) {
			return q.Hold(ctx, g.Token, Unstamp(g.Stamp))
		}
		// Woken by the timer, or by a grant the waiter may not hold from
		// without confirming it: the next attempt finds out (a lock handed
		// to us is renewed and held from then).
	}
}

// await waits for a grant to the waiter (granted), or for wait (the
// holder's remaining time, or the refresh of a waiter behind another; at
// most most, so that the queue entry is refreshed in time), with jitter;
// ok is false when ctx ends first. Without a watcher, the timer alone
// wakes it.
func await(ctx context.Context, watch *Watcher, wait, most time.Duration) (g Grant, granted, ok bool) {
	if wait <= 0 {
		wait = most // unknown: no TTL on the holder's lock, or it just went
	}
	t := time.NewTimer(min(ttl.Jitter(wait), most))
	defer t.Stop()
	var grants <-chan Grant // nil, never ready, without a watcher
	if watch != nil {
		grants = watch.Grants
	}
	select {
	case g = <-grants:
		return g, true, true
	case <-t.C:
		return Grant{}, false, true
	case <-ctx.Done():
		return Grant{}, false, false
	}
}

// giveUp has q take the waiter out of the queue before it returns err.
func giveUp(ctx context.Context, q Queue, err error) error {
	q.GiveUp(ctx)
	return err
}
