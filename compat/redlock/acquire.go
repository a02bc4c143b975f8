package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/internal/hold"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// Acquire waits until a majority of the servers give the lock within its
// validity, ctx ends (an error that is recipes.ErrNotAcquired and ctx's),
// or no majority is possible: a server may evict the lock's keys, or too
// many servers fail in a way that trying again cannot mend (a closed
// client, a refused authentication or script), an error that is
// recipes.ErrNotAcquired and says which. Servers that do not answer are
// tried again after a random delay until ctx ends. What an attempt took
// is released everywhere before Acquire returns, even past ctx's end (a
// server timeout at most, 2 s at most in all); on servers that did not
// answer by then, in the background, which Close waits for. With a
// context from a live lease of this Lock it re-enters at once.
//
// It is NOT safe to assume the lock is held until Release: do the work
// with the lease's context, which is cancelled, with a cause that is
// recipes.ErrLockLost, before the servers can grant the lock to anyone
// else (see the package doc for what that covers).
func (l *Lock) Acquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, true) }

// TryAcquire makes one attempt. When the servers' answers rule a majority
// out (held by another, or by a holder a restarted server may have
// forgotten) it returns an error that is recipes.ErrLocked; when servers
// did not answer, one that is recipes.ErrNotAcquired (not ErrLocked) and
// says why.
func (l *Lock) TryAcquire(ctx context.Context) (recipes.Lease, error) { return l.acquire(ctx, false) }

func (l *Lock) acquire(ctx context.Context, wait bool) (recipes.Lease, error) {
	return ttl.Acquire(ctx, l, l.o.trace, locktrace.LockID{Backend: "redlock", Kind: "lock", Name: l.name}, !wait,
		func(a *hold.Acquisition) (recipes.Lease, error) {
			if err := l.checkOpen(); err != nil {
				return nil, err
			}
			return l.take(ctx, wait, a)
		})
}

// take is acquire after its checks: it tries until it holds the lock, or
// gives up.
func (l *Lock) take(ctx context.Context, wait bool, a *hold.Acquisition) (recipes.Lease, error) {
	// failed is the errors of the servers that failed the last attempt,
	// when they left no majority possible: when ctx ends, the outage is
	// the news, not a lock held.
	var failed error
	for {
		// An id of its own for each attempt: what an earlier one left may
		// still be being released in the background, which must not delete
		// this one's keys.
		id := uuid.NewString()
		start := time.Now()
		rs := l.each(ctx, l.c.members, func(ctx context.Context, m *member) reply { return l.takeOn(ctx, m, id) })
		t := count(rs, l.quorum())
		var ended error
		if ctx.Err() != nil {
			// This attempt was cut short: the one before says whether
			// the servers answered.
			ended = recipes.NotAcquiredAfter(ctx, failed)
		}
		failed = t.unanswered()
		s, err := t.next(l.String(), wait, ended)
		switch s {
		case stepHold:
			le, err := ttl.Hold(ctx, l, 0, false, start, l.terms, holding{l, id}, &l.c.bg)
			if err == nil {
				return le, nil
			}
			// Taken too late to be trusted: Hold releases it.
			if !wait {
				return nil, err
			}
		case stepGiveUp:
			if errors.Is(err, recipes.ErrLocked) {
				t.tell(a) // TryAcquire refused: held elsewhere
			}
			l.letGo(ctx, id, rs)
			return nil, redisguard.ExplainACL(err, l.needs())
		case stepRetry:
			t.tell(a) // waits for another holder, or for quiet servers
			l.letGo(ctx, id, rs)
		}
		if !ttl.Sleep(ctx, max(l.delay(), t.quietWait())) {
			return nil, fmt.Errorf("%w (%s, last attempt: %v)", recipes.NotAcquiredAfter(ctx, failed), l, t)
		}
	}
}

// delay is a random delay between attempts, from a tenth of the retry
// delay up to it.
func (l *Lock) delay() time.Duration {
	d := l.o.retryDelay
	return d/10 + time.Duration(rand.Int64N(int64(d-d/10)+1))
}

// takeOn is one attempt on m: the eviction check at the Client's first use of
// m, then the acquire script.
func (l *Lock) takeOn(ctx context.Context, m *member, id string) reply {
	if !l.c.noCheck {
		err := m.checked.Check(func() error {
			cctx, cancel := l.bounded(ctx)
			defer cancel()
			return redisguard.Check(cctx, m.r, "redlock")
		})
		if errors.Is(err, redisguard.ErrEviction) {
			return reply{err: ttl.Permanent(fmt.Errorf("%s: %s: %w", l, m.name, err))}
		}
		if err != nil {
			return m.fail(err)
		}
	}
	sctx, cancel := l.bounded(ctx)
	defer cancel()
	res, err := acquireScript.Run(sctx, m.r, l.keys, id, l.o.ttl.Milliseconds()).Int64Slice()
	switch {
	case err != nil:
		return m.fail(err)
	case len(res) != 2:
		return m.fail(ttl.Permanent(fmt.Errorf("the acquire script answered %v", res)))
	}
	return reply{code: res[0], n: res[1]}
}
