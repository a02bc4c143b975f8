package sqllock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/compat/internal/grants"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The operations of the PostgreSQL function.
const (
	opAcquire = "acquire" // take it if free, never queue (TryAcquire)
	opQueue   = "queue"   // take it if free, or queue
	opRelease = "release" // leave the queue, and release if held
)

// pgWaiting is one Acquire or TryAcquire of a PostgreSQL lock by the
// waiter me ("channel/id").
type pgWaiting struct {
	l    *Lock
	id   string
	me   string
	wait bool
	a    *hold.Acquisition
}

// waiterSeq numbers the waiters of the process: with a listener, a
// waiter's id is its number (base 36), unique in its Client's channel,
// which is unique itself; short ids keep the row's queue small (every
// operation writes the row anew).
var waiterSeq atomic.Uint64

func (l *Lock) acquirePostgres(ctx context.Context, wait bool, a *hold.Acquisition) (*hold.Lease, error) {
	id := uuid.NewString() // no listener: the channel is empty, the id unique alone
	if l.c.channel != "" {
		id = strconv.FormatUint(waiterSeq.Add(1), 36)
	}
	w := pgWaiting{l: l, id: id, me: l.c.channel + "/" + id, wait: wait, a: a}
	return w.run(ctx)
}

// call runs op for the waiter me: code 1 and the token when it holds the
// lock, code 0 and the holder's remaining TTL otherwise.
func (l *Lock) call(ctx context.Context, op, me string, sent time.Time) (code int, n int64, err error) {
	if err := l.c.check(ctx); err != nil {
		return 0, 0, err
	}
	err = l.c.db.QueryRowContext(ctx, l.c.sql.call, op, l.name, me, l.ttl.Microseconds(),
		l.waitTTL().Microseconds(), grants.Stamp(sent)).Scan(&code, &n)
	return code, n, permanent(err)
}

// waitTTL is how long a waiter's queue entry lives without a refresh: a
// waiter refreshes it at least every TTL (its timer), so a waiter that
// crashed is skipped after three.
func (l *Lock) waitTTL() time.Duration { return 3 * l.ttl }

// run tries to take the lock until it holds it or gives up; every way out
// but success takes the waiter out of the table.
func (w pgWaiting) run(ctx context.Context) (*hold.Lease, error) {
	l := w.l
	// The watch is registered before the first attempt can queue us: a
	// notification may arrive before the attempt's own reply.
	var watch *grants.Watcher
	confirmed := true
	if w.wait && l.c.board != nil {
		watch = l.c.board.Watch(w.id)
		defer watch.Stop()
		confirmed = watch.Confirmed
	}
	op := opAcquire
	if w.wait {
		op = opQueue
	}
	backoff := retryBase
	queued := false
	for {
		sent := time.Now()
		// From now on the statement may land, even if its reply is lost
		// or ctx ends first: every way out releases what it may have done.
		queued = true
		code, n, err := l.call(ctx, op, w.me, sent)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, w.giveUp(ctx, queued, sent, recipes.NotAcquired(ctx))
		case err != nil && (!w.wait || errors.Is(err, ttl.ErrPermanent)):
			return nil, w.giveUp(ctx, queued, sent, fmt.Errorf("%w: %w", recipes.ErrNotAcquired, errDB("acquire "+l.name, err)))
		case err != nil:
			// The statement may or may not have run: trying again finds out.
			if !ttl.Sleep(ctx, ttl.Jitter(backoff)) {
				return nil, w.giveUp(ctx, queued, sent, recipes.NotAcquired(ctx))
			}
			backoff = min(2*backoff, retryCap)
			continue
		case code == 1:
			return l.hold(ctx, w.me, n, sent)
		}
		// Held, or a waiter ahead: the call waits in the queue, or
		// TryAcquire is refused.
		w.a.Queued()
		if !w.wait {
			return nil, fmt.Errorf("%w: %s", recipes.ErrLocked, l)
		}
		backoff = retryBase
		if !confirmed {
			// A grant notified before the LISTEN held was missed: once it
			// holds, look again.
			if !watch.AwaitReady(ctx) {
				return nil, w.giveUp(ctx, queued, sent, recipes.NotAcquired(ctx))
			}
			confirmed = true
			continue
		}
		g, granted, ok := w.await(ctx, watch, time.Duration(n)*time.Microsecond)
		if !ok {
			return nil, w.giveUp(ctx, queued, sent, recipes.NotAcquired(ctx))
		}
		if granted && grants.Fresh(g, l.terms.Valid, l.terms.Every) {
			return l.hold(ctx, w.me, g.Token, grants.Unstamp(g.Stamp))
		}
		// Woken by the timer, or by a grant too old to hold from without
		// confirming it: the next attempt finds out (a lock handed to us
		// is renewed and held from then, with a new token).
	}
}

// await waits for a grant to this waiter (granted), or for the holder's
// remaining TTL (at most the lock's TTL, so that the queue entry is
// refreshed in time), with jitter; ok is false when ctx ends first.
func (w pgWaiting) await(ctx context.Context, watch *grants.Watcher, remaining time.Duration) (g grants.Grant, granted, ok bool) {
	if remaining <= 0 {
		remaining = w.l.ttl
	}
	t := time.NewTimer(min(ttl.Jitter(remaining), w.l.ttl))
	defer t.Stop()
	var grant <-chan grants.Grant
	if watch != nil {
		grant = watch.Grants
	}
	select {
	case g = <-grant:
		return g, true, true
	case <-t.C:
		return grants.Grant{}, false, true
	case <-ctx.Done():
		return grants.Grant{}, false, false
	}
}

// giveUp returns err after taking the waiter out of the queue, and
// releasing the lock if it was handed to it meanwhile (sent is the send
// time of its last attempt). At once, bounded by cancelTimeout whatever
// ctx says: nothing of the waiter is left in the row when Acquire
// returns. If the database does not answer in time, the removal goes on
// in the background, on the Client's clean-ups (Close waits for them),
// until the entry would have expired anyway (a lock handed to it expires
// a TTL after the grant, before that).
func (w pgWaiting) giveUp(ctx context.Context, queued bool, sent time.Time, err error) error {
	if !queued {
		return err
	}
	srv := pgServer{w.l, w.me}
	lctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer stop()
	switch ferr := srv.Free(lctx); {
	case ferr == nil, errors.Is(ferr, ttl.ErrNotOurs):
		// Out of the queue (ErrNotOurs: it did not hold the lock).
	case errors.Is(ferr, ttl.ErrPermanent):
		// The database refuses it (closed, a password refused): the entry
		// expires by itself.
	default:
		ttl.FreeInBackground(&w.l.c.bg, ctx, srv, sent.Add(w.l.waitTTL()+w.l.ttl))
	}
	return err
}
