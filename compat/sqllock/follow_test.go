package sqllock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// headLooks watches the PostgreSQL row of lock name for its queue head's
// calls of the function: each sets the head's entry to expire waitTTL
// (three TTLs) after the call, by the server's clock, so each new expiry
// of the first entry is one call, at that expiry less three TTLs. It
// polls until stop is closed.
type headLooks struct {
	mu    sync.Mutex
	looks []time.Time // the server's time of each call seen
	done  chan struct{}
}

func watchHead(t *testing.T, s server, name string, lockTTL time.Duration, stop <-chan struct{}) *headLooks {
	h := &headLooks{done: make(chan struct{})}
	ctx := ctxT(t)
	go func() {
		defer close(h.done)
		for {
			var at *time.Time
			err := s.admin.QueryRowContext(ctx, `SELECT waiter_expiry[1] FROM zkrecipes_locks WHERE name = $1`, name).Scan(&at)
			if err == nil && at != nil {
				look := at.Add(-3 * lockTTL)
				h.mu.Lock()
				if n := len(h.looks); n == 0 || !h.looks[n-1].Equal(look) {
					h.looks = append(h.looks, look)
				}
				h.mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return h
}

// seen is how many calls of the head were seen so far, and their times.
func (h *headLooks) seen() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.looks...)
}

// The queue's head of a PostgreSQL lock (with a listener) hears each of
// the holder's renewals, with the lock's new expiry, and sleeps through
// them: it calls the function only to refresh its queue entry, a TTL
// before it would expire (two TTLs apart, by the server's clock), not at
// each expiry it knew (every TTL at most, before).
func TestHeadSleepsThroughRenewals(t *testing.T) {
	s, _ := startPostgres(t)
	const lockTTL = time.Second
	const name = "follow"
	ctx := ctxT(t)
	held, err := newLock(t, s.client(t), name, sqllock.WithTTL(lockTTL)).Acquire(ctx)
	require.NoError(t, err)
	wctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	head := newLock(t, s.client(t), name, sqllock.WithTTL(lockTTL))
	got := make(chan error, 1)
	go func() {
		_, err := head.Acquire(wctx)
		got <- err
	}()
	stop := make(chan struct{})
	h := watchHead(t, s, name, lockTTL, stop)
	require.Eventually(t, func() bool { return len(h.seen()) >= 4 }, waitLimit, 10*time.Millisecond,
		"the head's entry was not refreshed")
	close(stop)
	<-h.done
	looks := h.seen()
	for i := 1; i < len(looks); i++ {
		gap := looks[i].Sub(looks[i-1])
		t.Logf("the head's call %d came %v after the one before", i, gap.Round(time.Millisecond))
		assert.GreaterOrEqual(t, gap, 3*lockTTL/2, "the head woke while the holder renewed")
	}
	require.NoError(t, held.Context().Err(), "the holder lost its lease")
	giveUp()
	require.ErrorIs(t, <-got, recipes.ErrNotAcquired)
	require.NoError(t, held.Release(ctx))
	require.Empty(t, s.leftovers(t, name))
}

// The window that sleeping through renewals opens: the holder vanishes
// right after a renewal, when the head has just been told the new
// expiry. The head takes the lock over with no call before that expiry
// (it slept to it, where before it looked at the expiry it knew, found
// the lock renewed, and slept again), and the holder was told first, by
// the margin.
func TestHolderGoesAfterARenewal(t *testing.T) {
	s, pg := startPostgres(t)
	const name = "after-renewal"
	ctx := ctxT(t)
	renewed := make(chan struct{}, 1)
	trace := &locktrace.Trace{Renewal: func(r locktrace.RenewalInfo) {
		if r.Err == nil {
			select {
			case renewed <- struct{}{}:
			default:
			}
		}
	}}
	cut, p := s.through(t, pg.Addr())
	defer p.Restore(t)
	holder := newLock(t, cut.client(t), name, sqllock.WithTTL(faultTTL), sqllock.WithTrace(trace))
	held, err := holder.Acquire(ctx)
	require.NoError(t, err)
	deadline := func() time.Time { return ttl.Deadline(held.Context(), holder) }

	type result struct {
		lease recipes.Lease
		err   error
		at    time.Time
	}
	head := newLock(t, s.client(t), name, sqllock.WithTTL(faultTTL))
	got := make(chan result, 1)
	go func() {
		le, err := head.Acquire(ctx)
		got <- result{le, err, time.Now()}
	}()
	stop := make(chan struct{})
	defer close(stop)
	h := watchHead(t, s, name, faultTTL, stop)
	require.Eventually(t, func() bool { return len(h.seen()) >= 1 }, waitLimit, 5*time.Millisecond)
	// A call of the head, then the holder's next renewal: the holder
	// vanishes at once, its row expiring a TTL after that renewal.
	n := len(h.seen())
	require.Eventually(t, func() bool { return len(h.seen()) > n }, waitLimit, 5*time.Millisecond)
	select {
	case <-renewed:
	default:
	}
	select {
	case <-renewed:
	case <-ctx.Done():
		t.Fatal("the holder did not renew")
	}
	p.Blackhole(t)
	last := deadline()
	n = len(h.seen())

	r := <-got
	require.NoError(t, r.err)
	assert.Len(t, h.seen(), n, "the head called before the expiry it was told")
	require.Error(t, held.Context().Err(), "the holder was not told before the head's grant")
	margin := r.at.Sub(last)
	t.Logf("the holder's deadline came %v before the head's grant", margin.Round(time.Millisecond))
	assert.GreaterOrEqual(t, margin, wantMargin)
	require.NoError(t, r.lease.Release(ctx))
	p.Restore(t)
	_ = held.Release(ctx)
}
