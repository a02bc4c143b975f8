package redlock_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
)

// traceTTL is the TTL of the traced locks, as the contract's; their
// server timeout is well above the default (10 ms at this TTL), so that
// a busy machine does not count a server as down.
const traceTTL = time.Second

// lapseTTL is the TTL of the lock whose servers are blackholed.
const lapseTTL = 2 * time.Second

// traced is the lock name of TTL d over rs, with a server timeout of a
// tenth of it.
func traced(t testing.TB, rs []redlock.Redis, name string, d time.Duration, more ...redlock.Option) *redlock.Lock {
	t.Helper()
	c := newClient(t, rs, redlock.WithServerTimeout(d/10))
	return lockOn(t, c, name, append([]redlock.Option{redlock.WithTTL(d)}, more...)...)
}

// proxied gives a holder its own clients of the servers, each through a
// fault proxy.
func proxied(t *testing.T, servers []*harness.Redis) ([]redlock.Redis, []*harness.Proxy) {
	t.Helper()
	var rs []redlock.Redis
	var ps []*harness.Proxy
	for _, s := range servers {
		p := harness.NewProxy(t, s.Addr())
		r := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = r.Close() })
		rs, ps = append(rs, r), append(ps, p)
	}
	return rs, ps
}

// traceBackend is the trace scenarios' view of servers. Redlock has no
// token, and its renewals are extensions.
func traceBackend(servers []*harness.Redis) tracetest.Backend {
	return tracetest.Backend{
		ID: func(name string) locktrace.LockID {
			return locktrace.LockID{Backend: "redlock", Kind: "lock", Name: name}
		},
		Lock: func(t *testing.T, name string, tr *locktrace.Trace) recipes.Locker {
			return traced(t, clients(t, servers), name, traceTTL, redlock.WithTrace(tr))
		},
		Contender: func(t *testing.T, name string) recipes.Locker {
			return traced(t, clients(t, servers), name, traceTTL, redlock.WithRetryDelay(10*time.Millisecond))
		},
		NoToken: true,
		Broken: func(t *testing.T, name string, tr *locktrace.Trace) recipes.Locker {
			closed := clients(t, servers)
			for _, c := range closed {
				require.NoError(t, c.(*redis.Client).Close())
			}
			return traced(t, closed, name, traceTTL, redlock.WithTrace(tr))
		},
		BrokenErr: func(t *testing.T, err error) { require.ErrorIs(t, err, redis.ErrClosed) },
		Lose: func(t *testing.T, name string) {
			for _, a := range clients(t, servers) {
				require.NoError(t, a.(*redis.Client).Del(ctxT(t), "{"+name+"}").Err())
			}
		},
		NotOurs: ttl.ErrNotOurs,
		// Every server blackholed: the extension in flight gets no answer.
		Lapse: func(t *testing.T, name string, tr *locktrace.Trace) tracetest.Cut {
			rs, proxies := proxied(t, servers)
			l := traced(t, rs, name, lapseTTL, redlock.WithTrace(tr))
			return tracetest.Cut{
				Lock: l,
				Blackhole: func() {
					for _, p := range proxies {
						p.Blackhole(t)
					}
				},
				Restore: func() {
					for _, p := range proxies {
						p.Restore(t)
					}
				},
			}
		},
		// The lease ends at its deadline, TTL − DriftMargin(TTL) after the
		// send of the last confirmed extension, and the servers' expiry is
		// the TTL after that send: the margin is DriftMargin(TTL) less how
		// late the clock woke the watchdog, which half the drift margin
		// bounds with room to spare (the faults tests allow 10 ms).
		// The lease ends at its deadline, TTL − DriftMargin(TTL) after the
		// send of the last confirmed extension, and the servers' expiry is
		// the TTL after that send: the margin is DriftMargin(TTL) less how
		// late the clock woke the watchdog, which half the drift margin
		// bounds once the scenario has discounted the process's stalls.
		LapseMargin: recipes.DriftMargin(lapseTTL) / 2,
	}
}

// The outcomes of Acquire and TryAcquire, as a Trace sees them, attached
// by the lock's option and by the context.
func TestTraceAcquisitions(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	settle(t, servers, traceTTL)
	tracetest.RunAcquisitions(t, traceBackend(servers))
}

// How a holding ends, as a Trace sees it, and its extensions (renewals).
func TestTraceLeaseEnds(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	settle(t, servers, lapseTTL)
	tracetest.RunLeaseEnds(t, traceBackend(servers))
}
