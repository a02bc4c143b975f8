package memcachedlock_test

import (
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// traceBackend is the trace scenarios' view of the server m; the locks
// of Lapse go through p, a proxy of m. Lose deletes the item (evicted, an
// operator).
func traceBackend(m *harness.Memcached, p *harness.Proxy) tracetest.Backend {
	return tracetest.Backend{
		ID: func(key string) locktrace.LockID {
			return locktrace.LockID{Backend: "memcached", Kind: "lock", Name: key}
		},
		Lock: func(t *testing.T, key string, tr *locktrace.Trace) recipes.Locker {
			return newLock(t, client(t, m.Addr()), key, append(withServer(m, faultTTL), memcachedlock.WithTrace(tr))...)
		},
		Broken: func(t *testing.T, key string, tr *locktrace.Trace) recipes.Locker {
			return newLock(t, memcache.New(), key, memcachedlock.WithoutEvictionCheck(), memcachedlock.WithTrace(tr))
		},
		BrokenErr: func(t *testing.T, err error) { require.ErrorIs(t, err, memcache.ErrNoServers) },
		Lose: func(t *testing.T, key string) {
			require.NoError(t, client(t, m.Addr()).Delete(key))
		},
		NotOurs: ttl.ErrNotOurs,
		// The renewal the blackhole swallows is retried until the lease's
		// deadline.
		Lapse: func(t *testing.T, key string, tr *locktrace.Trace) tracetest.Cut {
			l := newLock(t, client(t, p.Addr()), key, append(withServer(m, faultTTL), memcachedlock.WithTrace(tr))...)
			return tracetest.Cut{Lock: l, Blackhole: func() { p.Blackhole(t) }, Restore: func() { p.Restore(t) }}
		},
		// The lease ends at its deadline, TTL − 2 s − DriftMargin(TTL)
		// after the send of the last confirmed request (memcached may
		// expire an item up to 2 s early), and the margin is counted to
		// the TTL after that send: it is 2 s + DriftMargin(TTL) less how
		// late the clock woke the watchdog, which half the drift margin
		// bounds once the scenario has discounted the process's stalls.
		LapseMargin: 2*time.Second + recipes.DriftMargin(faultTTL)/2,
	}
}

// The outcomes of Acquire and TryAcquire, as a Trace sees them, attached
// by the lock's option and by the context.
func TestTraceAcquisitions(t *testing.T) {
	m := harness.StartMemcached(t)
	awaitBackground(t)
	markFresh(t, client(t, m.Addr()), tracetest.AcquisitionLocks...)
	tracetest.RunAcquisitions(t, traceBackend(m, nil))
}

// How a holding ends, as a Trace sees it, and its renewals.
func TestTraceLeaseEnds(t *testing.T) {
	m := harness.StartMemcached(t)
	p := harness.NewProxy(t, m.Addr())
	awaitBackground(t)
	markFresh(t, client(t, m.Addr()), tracetest.LeaseEndLocks...)
	tracetest.RunLeaseEnds(t, traceBackend(m, p))
}
