package memcachedlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Bounds of the clean-ups.
const (
	// giveUpTimeout bounds how long an Acquire whose context ended waits
	// for its attempt in flight, and then deletes the lock item that
	// attempt added, before it returns; what is left goes on in the
	// background (abandon).
	giveUpTimeout = 2 * time.Second
	// abandonTimeout bounds a clean-up in the background; the item
	// expires at its TTL if that fails.
	abandonTimeout = 5 * time.Second
)

// take is acquire after its checks: it adds the item, polling while it
// is held, until it holds the lock or gives up.
func (l *Lock) take(ctx context.Context, wait bool, a *hold.Acquisition) (recipes.Lease, error) {
	if l.c.closed.Load() {
		return nil, fmt.Errorf("%w: %s: %w", recipes.ErrNotAcquired, l, ErrClosed)
	}
	// failed is the error of the last attempt, when it failed: when ctx
	// ends, the outage is the news, not a lock held.
	var failed error
	for poll := firstPoll; ; poll = min(2*poll, MaxPoll) {
		err := l.c.checkServer(ctx)
		if err == nil {
			id := []byte(uuid.NewString()) // one per attempt: a clean-up never deletes a later attempt's item
			sent := time.Now()
			var g grant
			if g, err = l.add(ctx, id); err == nil {
				le, err := ttl.Hold(ctx, l, g.token, g.hasToken, sent, l.terms, &server{l: l, id: id, cas: g.cas}, &l.c.bg)
				if err != nil {
					return nil, err
				}
				return le, nil
			}
		}
		switch {
		case errors.Is(err, memcache.ErrNotStored):
			// Held (the item exists): the call polls, or TryAcquire is
			// refused.
			a.Queued()
		case errors.Is(err, ErrQuiet):
			// The server may have forgotten a holder: the same, but no
			// holder was found.
			a.Quiet()
		}
		switch {
		case ctx.Err() != nil:
			return nil, recipes.NotAcquiredAfter(ctx, failed)
		case errors.Is(err, ttl.ErrPermanent):
			return nil, fmt.Errorf("%w: %s: %w", recipes.ErrNotAcquired, l, err)
		case wait:
		case errors.Is(err, ErrQuiet):
			return nil, fmt.Errorf("%w: %s: %w", recipes.ErrLocked, l, err)
		case errors.Is(err, memcache.ErrNotStored):
			return nil, fmt.Errorf("%w: %s", recipes.ErrLocked, l)
		default:
			return nil, fmt.Errorf("%w: %s: %w", recipes.ErrNotAcquired, l, err)
		}
		failed = nil
		if !errors.Is(err, memcache.ErrNotStored) && !errors.Is(err, ErrQuiet) {
			failed = err
		}
		if !ttl.Sleep(ctx, ttl.Jitter(poll)) {
			return nil, recipes.NotAcquiredAfter(ctx, failed)
		}
	}
}

// grant is what an attempt that took the lock gives: the lock item's CAS
// and the lease's token.
type grant struct {
	cas      uint64
	token    int64
	hasToken bool
}

// add runs one attempt (try). memcache.ErrNotStored: someone holds it;
// ErrQuiet: the server may have forgotten a holder. An item an attempt
// may have added, when it fails or ctx ends first, is deleted before add
// returns (bounded by giveUpTimeout), and in the background if that
// fails.
func (l *Lock) add(ctx context.Context, id []byte) (grant, error) {
	type result struct {
		g   grant
		err error
	}
	res := make(chan result, 1)
	l.c.bg.Go(ctx, func(context.Context) {
		g, err := l.try(id)
		res <- result{g, err}
	})
	select {
	case r := <-res:
		if r.err != nil && mayHaveAdded(r.err) {
			within, cancel := cleanUpContext(ctx)
			defer cancel()
			l.cleanUp(within, id, 0)
		}
		return r.g, r.err
	case <-ctx.Done():
	}
	within, cancel := cleanUpContext(ctx)
	defer cancel()
	select {
	case r := <-res:
		if r.err == nil || mayHaveAdded(r.err) {
			l.cleanUp(within, id, r.g.cas)
		}
	case <-within.Done():
		// The attempt has not answered yet: its clean-up waits for it in
		// the background.
		l.c.bg.Go(ctx, func(bg context.Context) {
			select {
			case r := <-res:
				if r.err == nil || mayHaveAdded(r.err) {
					l.abandon(bg, id)
				}
			case <-bg.Done():
			}
		})
	}
	return grant{}, ctx.Err()
}

// cleanUpContext is the context of a clean-up made before add returns:
// ctx's values, not its end, for giveUpTimeout.
func cleanUpContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), giveUpTimeout)
}

// mayHaveAdded reports whether an attempt that failed with err may have
// left its lock item behind: it was not refused (memcache.ErrNotStored),
// did not delete it itself (ErrQuiet), and reached the server.
func mayHaveAdded(err error) bool {
	return !errors.Is(err, memcache.ErrNotStored) && !errors.Is(err, ErrQuiet) && !unsent(err)
}

// try adds the lock item with value id and, when that worked, reads it
// back for its CAS with the marker and the quiet item, in one round trip.
// While the server is quiet it deletes the item again and returns
// ErrQuiet.
func (l *Lock) try(id []byte) (grant, error) {
	err := l.c.mc.Add(&memcache.Item{Key: l.key, Value: id, Expiration: l.seconds()})
	if err != nil {
		return grant{}, permanent(err)
	}
	items, err := l.c.mc.GetMulti([]string{l.key, l.aliveKey, l.quietKey})
	if err != nil {
		return grant{}, fmt.Errorf("read back after add: %w", permanent(err))
	}
	it := items[l.key]
	if it == nil || string(it.Value) != string(id) {
		// Expired and taken already, or forgotten at once (a restart).
		return grant{}, fmt.Errorf("read back after add: %w", memcache.ErrNotStored)
	}
	quiet, start, err := l.state(items)
	switch {
	case err != nil:
		return grant{}, err
	case quiet:
		if err := l.deleteOurs(id, it.CasID); err != nil && !errors.Is(err, ttl.ErrNotOurs) {
			return grant{}, fmt.Errorf("delete the lock item added while the server is quiet: %w", err)
		}
		return grant{}, ErrQuiet
	case l.c.addr == "":
		return grant{cas: it.CasID}, nil // no token without the server's clock
	}
	token, err := fence(start, it.CasID)
	return grant{cas: it.CasID, token: token, hasToken: true}, err
}

// cleanUp deletes the lock item an attempt added (value id; cas, when
// known, is its CAS), within ctx; when that fails for a reason that
// trying again may mend, it goes on in the background (abandon).
func (l *Lock) cleanUp(ctx context.Context, id []byte, cas uint64) {
	err := l.call(ctx, func() error { return l.deleteOurs(id, cas) })
	if err != nil && !errors.Is(err, ttl.ErrNotOurs) && !errors.Is(err, ttl.ErrPermanent) {
		l.c.bg.Go(ctx, func(bg context.Context) { l.abandon(bg, id) })
	}
}

// abandon deletes the lock item if its value is id (see deleteOurs),
// trying again after transient errors until ctx ends, for abandonTimeout
// at most, less than the TTL: it is the clean-up of an attempt whose
// answer was lost or came too late, and the item expires at its TTL
// anyway.
func (l *Lock) abandon(ctx context.Context, id []byte) {
	deadline := time.Now().Add(min(abandonTimeout, l.ttl))
	for pause := firstPoll; ; pause = min(2*pause, MaxPoll) {
		err := l.deleteOurs(id, 0)
		if err == nil || errors.Is(err, ttl.ErrNotOurs) || errors.Is(err, ttl.ErrPermanent) ||
			!time.Now().Add(pause).Before(deadline) || !ttl.Sleep(ctx, pause) {
			return
		}
	}
}

// call runs op, which takes no context, on the Lock's background work
// (so that Close waits for it), and returns ctx's error when ctx ends
// first (op goes on, and its result is dropped).
func (l *Lock) call(ctx context.Context, op func() error) error {
	res := make(chan error, 1)
	l.c.bg.Go(ctx, func(context.Context) { res <- op() })
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
