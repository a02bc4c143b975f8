package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// lockID is what the reports about the lock name say.
func lockID(name string) recipes.LockID {
	return recipes.LockID{Backend: "redis", Kind: "lock", Name: name}
}

// acquisition waits for the n-th acquisition (1-based) rec saw to return,
// checks it against its other reports (one AcquireStart with its ID;
// one AcquireQueued when it was contended, else none; the lock id and
// try everywhere) and returns its AcquireDone.
func acquisition(t *testing.T, rec *tracetest.Recorder, n int, id recipes.LockID, try bool) recipes.AcquireDoneInfo {
	t.Helper()
	d := rec.AwaitDone(t, n)
	assert.Equal(t, id, d.Lock)
	assert.Equal(t, try, d.Try)
	starts, queued := 0, 0
	for _, s := range rec.Starts() {
		if s.ID == d.ID {
			starts++
			assert.Equal(t, id, s.Lock)
			assert.Equal(t, try, s.Try)
		}
	}
	for _, q := range rec.Queued() {
		if q.ID == d.ID {
			queued++
			assert.Equal(t, id, q.Lock)
			assert.Equal(t, try, q.Try)
		}
	}
	assert.Equal(t, 1, starts, "AcquireStart reports of acquisition %d", d.ID)
	if d.Contended {
		assert.Equal(t, 1, queued, "AcquireQueued reports of contended acquisition %d", d.ID)
	} else {
		assert.Zero(t, queued, "AcquireQueued reports of uncontended acquisition %d", d.ID)
	}
	return d
}

// outOfQuiet waits until a new server grants locks of TTL d at once: it
// grants nothing for a TTL after it started (it may have forgotten a
// holder), so that the first acquisition of a test would be contended.
func outOfQuiet(t *testing.T, addr string, d time.Duration) {
	t.Helper()
	lease, err := newLock(t, client(t, addr), "out-of-quiet", redislock.WithTTL(d)).Acquire(ctxT(t))
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctxT(t)))
}

// The outcomes of Acquire and TryAcquire, as a Trace sees them, attached
// by the lock's option and by the context.
func TestTraceAcquisitions(t *testing.T) {
	r := harness.StartRedis(t)
	outOfQuiet(t, r.Addr(), testTTL)
	ctx := ctxT(t)

	t.Run("free, re-entered, released", func(t *testing.T) {
		id := lockID("free")
		own, byCtx := tracetest.New(), tracetest.New()
		l := newLock(t, client(t, r.Addr()), "free", redislock.WithTrace(own.Trace()))
		lease, err := l.Acquire(recipes.WithTrace(ctx, byCtx.Trace()))
		require.NoError(t, err)
		token, _ := lease.Token()
		for _, rec := range []*tracetest.Recorder{own, byCtx} {
			d := acquisition(t, rec, 1, id, false)
			assert.Equal(t, recipes.OutcomeAcquired, d.Outcome)
			assert.NoError(t, d.Err)
			assert.False(t, d.Contended)
			assert.False(t, d.Reentered)
			assert.True(t, d.HasToken)
			assert.Equal(t, token, d.Token)
		}
		assert.Equal(t, own.Dones()[0].ID, byCtx.Dones()[0].ID, "one acquisition, reported to both traces")

		// Re-entered twice with the lease's context, which carries the
		// context's trace: both traces see it.
		again, err := l.Acquire(lease.Context())
		require.NoError(t, err)
		third, err := l.TryAcquire(again.Context())
		require.NoError(t, err)
		for _, rec := range []*tracetest.Recorder{own, byCtx} {
			for n, try := range map[int]bool{2: false, 3: true} {
				d := acquisition(t, rec, n, id, try)
				assert.Equal(t, recipes.OutcomeAcquired, d.Outcome)
				assert.True(t, d.Reentered)
				assert.False(t, d.Contended)
				assert.Equal(t, token, d.Token)
			}
		}
		require.NoError(t, third.Release(ctx))
		require.NoError(t, again.Release(ctx))
		assert.Empty(t, own.Ends(), "a holding ends at its last Release")
		require.NoError(t, lease.Release(ctx))
		for _, rec := range []*tracetest.Recorder{own, byCtx} {
			end := rec.AwaitEnd(t, 1)
			assert.Equal(t, recipes.EndReleased, end.Cause)
			assert.Equal(t, recipes.ErrReleased, end.Err)
			assert.Equal(t, id, end.Lock)
			assert.Positive(t, end.Held)
			assert.False(t, end.HasMargin)
			assert.True(t, end.HasToken)
			assert.Equal(t, token, end.Token)
			assert.Len(t, rec.Ends(), 1, "one LeaseEnd for the holding and its re-entries")
		}
	})

	// The lock is held by another client from here on.
	holder := newLock(t, client(t, r.Addr()), "held")
	held, err := holder.Acquire(ctx)
	require.NoError(t, err)
	id := lockID("held")
	contender := newLock(t, client(t, r.Addr()), "held")

	t.Run("TryAcquire on a held lock", func(t *testing.T) {
		rec := tracetest.New()
		_, err := contender.TryAcquire(recipes.WithTrace(ctx, rec.Trace()))
		require.ErrorIs(t, err, recipes.ErrLocked)
		d := acquisition(t, rec, 1, id, true)
		assert.Equal(t, recipes.OutcomeLocked, d.Outcome)
		assert.ErrorIs(t, d.Err, recipes.ErrLocked)
		assert.True(t, d.Contended)
		assert.False(t, d.HasToken)
		require.Len(t, rec.Queued(), 1)
		assert.Equal(t, rec.Starts()[0].ID, rec.Queued()[0].ID)
	})

	t.Run("deadline while waiting", func(t *testing.T) {
		rec := tracetest.New()
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		_, err := contender.Acquire(recipes.WithTrace(short, rec.Trace()))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		d := acquisition(t, rec, 1, id, false)
		assert.Equal(t, recipes.OutcomeTimeout, d.Outcome)
		assert.True(t, d.Contended, "the first attempt found the lock held")
	})

	t.Run("cancelled while waiting", func(t *testing.T) {
		rec := tracetest.New()
		cctx, cancel := context.WithCancel(recipes.WithTrace(ctx, rec.Trace()))
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := contender.Acquire(cctx)
			done <- err
		}()
		rec.Await(t, "AcquireQueued", func(r *tracetest.Recorder) bool { return len(r.Queued()) > 0 })
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		d := acquisition(t, rec, 1, id, false)
		assert.Equal(t, recipes.OutcomeCanceled, d.Outcome)
		assert.True(t, d.Contended)
	})

	t.Run("acquired behind a holder", func(t *testing.T) {
		rec := tracetest.New()
		got := make(chan recipes.Lease, 1)
		go func() {
			lease, err := contender.Acquire(recipes.WithTrace(ctx, rec.Trace()))
			assert.NoError(t, err)
			got <- lease
		}()
		rec.Await(t, "AcquireQueued", func(r *tracetest.Recorder) bool { return len(r.Queued()) > 0 })
		require.NoError(t, held.Release(ctx))
		lease := <-got
		require.NotNil(t, lease)
		d := acquisition(t, rec, 1, id, false)
		assert.Equal(t, recipes.OutcomeAcquired, d.Outcome)
		assert.True(t, d.Contended)
		assert.True(t, d.HasToken)
		token, _ := lease.Token()
		assert.Equal(t, token, d.Token)
		require.NoError(t, lease.Release(ctx))
	})

	t.Run("server error", func(t *testing.T) {
		closed := redis.NewClient(&redis.Options{Addr: r.Addr()})
		require.NoError(t, closed.Close())
		c, err := redislock.NewClient(closed)
		require.NoError(t, err)
		defer c.Close()
		rec := tracetest.New()
		_, err = newLock(t, c, "closed", redislock.WithTrace(rec.Trace())).Acquire(ctx)
		require.ErrorIs(t, err, redis.ErrClosed)
		d := acquisition(t, rec, 1, lockID("closed"), false)
		assert.Equal(t, recipes.OutcomeError, d.Outcome)
		assert.ErrorIs(t, d.Err, recipes.ErrNotAcquired)
		assert.False(t, d.Contended)
		assert.False(t, d.HasToken)
	})
}

// How a holding ends, as a Trace sees it, and its renewals.
func TestTraceLeaseEnds(t *testing.T) {
	r := harness.StartRedis(t)
	outOfQuiet(t, r.Addr(), faultTTL)
	admin := rdb(t, r.Addr())
	ctx := ctxT(t)

	// The key deleted (evicted, an operator) under the holder: its next
	// renewal finds it gone, and the holder is told then, before the TTL
	// counted from the last confirmed request would have run out.
	t.Run("gone at a renewal", func(t *testing.T) {
		rec := tracetest.New()
		l := newLock(t, client(t, r.Addr()), "deleted", redislock.WithTrace(rec.Trace()))
		lease, err := l.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, admin.Del(ctx, "{deleted}").Err())
		end := rec.AwaitEnd(t, 1)
		t.Logf("gone at a renewal: told %v before the server-side expiry", end.Margin)
		assert.Equal(t, recipes.EndGone, end.Cause)
		assert.ErrorIs(t, end.Err, recipes.ErrLockLost)
		assert.ErrorIs(t, end.Err, ttl.ErrNotOurs)
		assert.Equal(t, lockID("deleted"), end.Lock)
		assert.Positive(t, end.Held)
		assert.True(t, end.HasMargin)
		assert.Positive(t, end.Margin, "the holder is told before the server may let the lock go")
		renewals := rec.Renewals()
		require.NotEmpty(t, renewals)
		assert.ErrorIs(t, renewals[len(renewals)-1].Err, ttl.ErrNotOurs, "the renewal that found it gone")
		assert.ErrorIs(t, lease.Release(ctx), recipes.ErrLockLost)
		assert.Len(t, rec.Ends(), 1, "the Release of a lost holding is no second end")
	})

	// The key deleted, and Release comes before a renewal notices (one is
	// due a third of the TTL after the grant): Release finds it gone.
	t.Run("gone at Release", func(t *testing.T) {
		rec := tracetest.New()
		l := newLock(t, client(t, r.Addr()), "gone-at-release")
		lease, err := l.Acquire(recipes.WithTrace(ctx, rec.Trace()))
		require.NoError(t, err)
		require.NoError(t, admin.Del(ctx, "{gone-at-release}").Err())
		err = lease.Release(ctx)
		require.ErrorIs(t, err, recipes.ErrLockLost)
		end := rec.AwaitEnd(t, 1)
		assert.Equal(t, recipes.EndGone, end.Cause)
		assert.ErrorIs(t, end.Err, recipes.ErrLockLost)
		assert.False(t, end.HasMargin, "found at Release, not told ahead of an expiry")
		assert.Positive(t, end.Held)
		assert.Len(t, rec.Ends(), 1)
	})

	// Renewals confirmed while the connection works; then a blackhole: the
	// renewal in flight gets no answer, and the lease ends at its deadline.
	t.Run("renewals, then TTL lapse", func(t *testing.T) {
		p := harness.NewProxy(t, r.Addr())
		// A client that bounds a request by its context, as the renewal's
		// ends at the lease's deadline: the renewal the blackhole swallows
		// fails then, not at the read timeout (3 s, then retried).
		bounded := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = bounded.Close() })
		c, err := redislock.NewClient(bounded)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		rec := tracetest.New()
		id := lockID("lapse")
		l := newLock(t, c, "lapse", redislock.WithTTL(faultTTL), redislock.WithTrace(rec.Trace()))
		lease, err := l.Acquire(ctx)
		require.NoError(t, err)
		rec.Await(t, "a confirmed renewal", func(r *tracetest.Recorder) bool { return len(r.Renewals()) > 0 })
		first := rec.Renewals()[0]
		assert.NoError(t, first.Err)
		assert.Equal(t, id, first.Lock)
		assert.Positive(t, first.Latency)
		require.NoError(t, lease.Err())

		p.Blackhole(t)
		end := rec.AwaitEnd(t, 1)
		t.Logf("TTL lapse: told %v before the server-side expiry (drift margin %v)", end.Margin, recipes.DriftMargin(faultTTL))
		assert.Equal(t, recipes.EndTTLLapsed, end.Cause)
		assert.ErrorIs(t, end.Err, recipes.ErrLockLost)
		assert.Equal(t, id, end.Lock)
		assert.True(t, end.HasMargin)
		// The lease ends at its deadline, TTL − DriftMargin(TTL) after the
		// send of the last confirmed request, and the server's expiry is
		// the TTL after that send: the margin is DriftMargin(TTL) less how
		// late the clock woke the watchdog, which half the drift margin
		// bounds with room to spare (as faultTTL's wantMargin does).
		assert.GreaterOrEqual(t, end.Margin, recipes.DriftMargin(faultTTL)/2)
		rec.Await(t, "a failed renewal", func(r *tracetest.Recorder) bool {
			for _, rn := range r.Renewals() {
				if rn.Err != nil {
					return true
				}
			}
			return false
		})
		for _, rn := range rec.Renewals() {
			assert.Equal(t, id, rn.Lock)
		}
		p.Restore(t)
		assert.ErrorIs(t, lease.Release(ctx), recipes.ErrLockLost)
		assert.Len(t, rec.Ends(), 1)
	})
}
