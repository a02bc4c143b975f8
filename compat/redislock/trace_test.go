package redislock_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// outOfQuiet waits until a new server grants locks of TTL d at once: it
// grants nothing for a TTL after it started (it may have forgotten a
// holder), so that the first acquisition of a test would be contended.
func outOfQuiet(t *testing.T, addr string, d time.Duration) {
	t.Helper()
	lease, err := newLock(t, client(t, addr), "out-of-quiet", redislock.WithTTL(d)).Acquire(ctxT(t))
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctxT(t)))
}

// traceBackend is the trace scenarios' view of the server r.
func traceBackend(r *harness.Redis) tracetest.Backend {
	return tracetest.Backend{
		ID: func(name string) locktrace.LockID {
			return locktrace.LockID{Backend: "redis", Kind: "lock", Name: name}
		},
		Lock: func(t *testing.T, name string, tr *locktrace.Trace) recipes.Locker {
			return newLock(t, client(t, r.Addr()), name, redislock.WithTrace(tr))
		},
		Broken: func(t *testing.T, name string, tr *locktrace.Trace) recipes.Locker {
			closed := redis.NewClient(&redis.Options{Addr: r.Addr()})
			require.NoError(t, closed.Close())
			c, err := redislock.NewClient(closed)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			return newLock(t, c, name, redislock.WithTrace(tr))
		},
		BrokenErr: func(t *testing.T, err error) { require.ErrorIs(t, err, redis.ErrClosed) },
		Lose: func(t *testing.T, name string) {
			require.NoError(t, rdb(t, r.Addr()).Del(ctxT(t), "{"+name+"}").Err())
		},
		NotOurs: ttl.ErrNotOurs,
		Lapse: func(t *testing.T, name string, tr *locktrace.Trace) tracetest.Cut {
			p := harness.NewProxy(t, r.Addr())
			// A client that bounds a request by its context, as the
			// renewal's ends at the lease's deadline: the renewal the
			// blackhole swallows fails then, not at the read timeout (3 s,
			// then retried).
			bounded := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = bounded.Close() })
			c, err := redislock.NewClient(bounded)
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			l := newLock(t, c, name, redislock.WithTTL(faultTTL), redislock.WithTrace(tr))
			return tracetest.Cut{Lock: l, Blackhole: func() { p.Blackhole(t) }, Restore: func() { p.Restore(t) }}
		},
		// The lease ends at its deadline, TTL − DriftMargin(TTL) after the
		// send of the last confirmed request, and the server's expiry is
		// the TTL after that send: the margin is DriftMargin(TTL) less how
		// late the clock woke the watchdog, which half the drift margin
		// bounds with room to spare (as faultTTL's wantMargin does).
		// The lease ends at its deadline, TTL − DriftMargin(TTL) after the
		// send of the last confirmed request, and the server's expiry is
		// the TTL after that send: the margin is DriftMargin(TTL) less how
		// late the clock woke the watchdog, which half the drift margin
		// bounds once the scenario has discounted the process's stalls.
		LapseMargin: recipes.DriftMargin(faultTTL) / 2,
	}
}

// The outcomes of Acquire and TryAcquire, as a Trace sees them, attached
// by the lock's option and by the context.
func TestTraceAcquisitions(t *testing.T) {
	r := harness.StartRedis(t)
	outOfQuiet(t, r.Addr(), testTTL)
	tracetest.RunAcquisitions(t, traceBackend(r))
}

// How a holding ends, as a Trace sees it, and its renewals.
func TestTraceLeaseEnds(t *testing.T) {
	r := harness.StartRedis(t)
	outOfQuiet(t, r.Addr(), faultTTL)
	tracetest.RunLeaseEnds(t, traceBackend(r))
}
