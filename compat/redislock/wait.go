package redislock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/internal/grants"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// waiting is one Acquire or TryAcquire of a lock by the waiter id.
type waiting struct {
	l     *Lock
	id    string
	wait  bool // queue and wait (Acquire), or not (TryAcquire)
	a     *hold.Acquisition
	entry string // its queue entry: "" when none, "?" when unknown
}

// run tries to take the lock until it holds it or gives up; every way out
// but success leaves nothing of the waiter in Redis.
func (w *waiting) run(ctx context.Context) (*hold.Lease, error) {
	l := w.l
	// The watch is registered before the first attempt can queue us: a
	// grant may reach this client's subscription before the attempt's own
	// reply does (two connections), and a grant to an id not registered
	// yet would be dropped, leaving us asleep on our timer while the lock
	// is held in our name.
	//
	// Only that reply says whether the attempt queued us, so every waiting
	// Acquire registers, even one that finds the lock free. Registering
	// only for an attempt known to queue would need a first attempt that
	// does not queue: a fourth command for every contended acquisition.
	// The registration is a map entry under the subscriber's mutex; the
	// subscription itself is made once per Client.
	var watch *grants.Watcher
	confirmed := true
	if w.wait {
		watch = l.c.subscription(l.channel).watch(w.id)
		defer watch.Stop()
		confirmed = watch.Confirmed
	}
	backoff := retryBase
	for {
		sent := time.Now()
		got, err := l.attempt(ctx, w.id, w.wait, w.entry, sent)
		switch {
		case err != nil && w.wait:
			w.entry = "?" // it may have queued us anew
		case err == nil:
			w.entry = got.entry
		}
		if hook := testHooks.attempted.Load(); hook != nil {
			(*hook)()
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, w.giveUp(ctx, recipes.NotAcquired(ctx))
		case err != nil && (!w.wait || errors.Is(err, ttl.ErrPermanent)):
			return nil, w.giveUp(ctx, fmt.Errorf("%w: %w", recipes.ErrNotAcquired, errRedis("acquire "+l.name, err)))
		case err != nil:
			// The script may or may not have run: trying again finds out.
			if !ttl.Sleep(ctx, ttl.Jitter(backoff)) {
				return nil, w.giveUp(ctx, recipes.NotAcquired(ctx))
			}
			backoff = min(2*backoff, retryCap)
			continue
		case got.acquired:
			return l.hold(ctx, w.id, got.token, sent)
		}
		// Held by someone else, or a waiter ahead, or the server's quiet
		// period (it may have forgotten a holder): the call waits, or
		// TryAcquire is refused.
		w.a.Queued()
		switch {
		case !w.wait && got.quiet:
			return nil, fmt.Errorf("%w: %s: the server restarted less than a TTL ago and may have forgotten its holder: it grants nothing for %v",
				recipes.ErrLocked, l, got.wait)
		case !w.wait:
			return nil, fmt.Errorf("%w: %s", recipes.ErrLocked, l)
		}
		backoff = retryBase
		if !confirmed {
			// A grant published before the server took the subscription
			// was missed: once it has, look again.
			if !watch.AwaitReady(ctx) {
				return nil, w.giveUp(ctx, recipes.NotAcquired(ctx))
			}
			confirmed = true // or past grants.ReadyWait: the timer alone until it is
			continue
		}
		g, granted, ok := w.await(ctx, watch, got.wait)
		if !ok {
			return nil, w.giveUp(ctx, recipes.NotAcquired(ctx))
		}
		if granted && l.acks == 0 && grants.Fresh(g, l.terms.Valid, l.terms.Every) {
			return l.hold(ctx, w.id, g.Token, grants.Unstamp(g.Stamp))
		}
		// Woken by the timer, or by a grant too old to hold from without
		// confirming (or not known to be on enough replicas): the next
		// attempt finds out (a lock handed to us is renewed and held from
		// then).
	}
}

// testHooks, set by tests, run after each attempt and after each grant
// received.
var testHooks struct {
	attempted atomic.Pointer[func()]
	delivered atomic.Pointer[func(s *subscriber, id string)]
}

// await waits for a grant to this waiter (granted), or for the holder's
// remaining TTL (pttl; at most the lock's TTL, so that the queue entry is
// refreshed in time), with jitter; ok is false when ctx ends first.
func (w *waiting) await(ctx context.Context, watch *grants.Watcher, pttl time.Duration) (g grants.Grant, granted, ok bool) {
	if pttl <= 0 {
		pttl = w.l.ttl // no TTL on the holder's key, or it just went
	}
	t := time.NewTimer(min(ttl.Jitter(pttl), w.l.ttl))
	defer t.Stop()
	select {
	case g = <-watch.Grants:
		return g, true, true
	case <-t.C:
		return grants.Grant{}, false, true
	case <-ctx.Done():
		return grants.Grant{}, false, false
	}
}

// giveUp takes the waiter out of the queue, and releases the lock if it
// was handed to it meanwhile, before it returns err (see Lock.cancel).
func (w *waiting) giveUp(ctx context.Context, err error) error {
	w.l.cancel(ctx, w.id, w.entry)
	return err
}
