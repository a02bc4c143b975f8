package redlock_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/redisguard"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// attempt is Acquire or TryAcquire.
type attempt struct {
	name string
	call func(*redlock.Lock, context.Context) (recipes.Lease, error)
}

var attempts = []attempt{
	{"Acquire", (*redlock.Lock).Acquire},
	{"TryAcquire", (*redlock.Lock).TryAcquire},
}

// returns runs a of l with a context that does not end while it runs (it
// ends at t's cleanup), and fails t unless it returns within limit. A
// lease it gets is released.
func (a attempt) returns(t *testing.T, l *redlock.Lock, limit time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() {
		lease, err := a.call(l, ctx)
		if err == nil {
			_ = lease.Release(ctx)
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("%s did not return in %v", a.name, limit)
		return nil
	}
}

// A server that may evict the lock's keys is refused at the Lock's first
// use of it, with an error that names it, the setting and the way out,
// whatever the other servers say: here two servers out of their quiet
// period, a majority, grant it. The server timeout is near the longest
// the TTL allows: a check that does not complete in it (a first dial on
// a loaded machine can take longer than the default 10 ms) counts the
// server as down for that attempt, which is not what is tested here.
// WithoutEvictionCheck takes the risk.
func TestEvictingServerRefused(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	ctx := ctxT(t)
	settle(t, servers, time.Second)
	admin := clients(t, servers[1:2])[0].(*redis.Client)
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "2mb").Err())
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	l := lockOn(t, newClient(t, clients(t, servers), redlock.WithServerTimeout(300*time.Millisecond)), "evict", redlock.WithTTL(time.Second))
	for _, a := range attempts {
		err := a.returns(t, l, 10*time.Second)
		require.ErrorIs(t, err, recipes.ErrNotAcquired, a.name)
		assert.ErrorIs(t, err, redisguard.ErrEviction, a.name)
		assert.ErrorContains(t, err, "maxmemory-policy is allkeys-lru", a.name)
		assert.ErrorContains(t, err, servers[1].Addr(), a.name)
		assert.ErrorContains(t, err, "redlock evict", a.name)
		assert.ErrorContains(t, err, "redlock.WithoutEvictionCheck()", a.name)
		t.Logf("%s: %v", a.name, err)
	}

	lease, err := lockOn(t, newClient(t, clients(t, servers), redlock.WithoutEvictionCheck()), "evict", redlock.WithTTL(time.Second)).Acquire(ctx)
	require.NoError(t, err, "the risk taken explicitly")
	require.NoError(t, lease.Release(ctx))
}

// A Redis value that cannot be compared (a struct with a slice), and so
// is taken by identity as different from every other.
type tagged struct {
	redis.Scripter
	tags []string
}

// Constructors refuse what cannot work, naming the bad value; nothing
// panics.
func TestConstructorsRefuse(t *testing.T) {
	servers := harness.StartRedisN(t, 2)
	cs := clients(t, servers)
	twin := clients(t, servers[:1])[0] // another client of server 0
	var typedNil *redis.Client
	for _, tc := range []struct {
		servers []redlock.Redis
		copts   []redlock.ClientOption
		want    string
	}{
		{nil, nil, "no servers"},
		{[]redlock.Redis{nil}, nil, "server 0 is nil"},
		{[]redlock.Redis{cs[0], typedNil}, nil, "server 1 is nil"},
		{[]redlock.Redis{cs[0], cs[1], cs[0]}, nil, "servers 0 and 2 are the same client"},
		{[]redlock.Redis{cs[0], cs[1], twin}, nil, "servers 0 and 2 have the same address " + servers[0].Addr()},
		{cs, []redlock.ClientOption{redlock.WithServerTimeout(0)}, "server timeout 0s must be positive"},
		{cs, []redlock.ClientOption{redlock.WithKeyPrefix("a b")}, "key prefix"},
		{cs, []redlock.ClientOption{nil}, "nil ClientOption"},
	} {
		_, err := redlock.NewClient(tc.servers, tc.copts...)
		if assert.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.want) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	c := newClient(t, cs)
	slow := newClient(t, cs, redlock.WithServerTimeout(time.Second))
	for _, tc := range []struct {
		c    *redlock.Client
		name string
		opts []redlock.Option
		want string
	}{
		{nil, "x", nil, "nil Client (make one with NewClient)"},
		{c, "", nil, "empty lock name"},
		{c, "a{b}", nil, "braces"},
		{c, "x", []redlock.Option{redlock.WithTTL(0)}, "TTL 0s"},
		{c, "x", []redlock.Option{redlock.WithTTL(redlock.MinTTL - 1)}, "TTL 49.999999ms"},
		{c, "x", []redlock.Option{redlock.WithTTL(redlock.MaxTTL + time.Second)}, "TTL 720h0m1s"},
		{c, "x", []redlock.Option{redlock.WithTTL(100 * 365 * 24 * time.Hour)}, "TTL 876000h0m0s"},
		{slow, "x", []redlock.Option{redlock.WithTTL(time.Second)}, "server timeout"},
		{c, "x", []redlock.Option{redlock.WithRetryDelay(-1)}, "retry delay"},
		{c, "x", []redlock.Option{nil}, "nil Option"},
	} {
		_, err := redlock.New(tc.c, tc.name, tc.opts...)
		if assert.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.want) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	_, err := redlock.New(c, "x", redlock.WithTTL(redlock.MaxTTL))
	assert.NoError(t, err, "MaxTTL itself")
	_, err = redlock.NewClient([]redlock.Redis{tagged{cs[0], []string{"a"}}, tagged{cs[1], []string{"b"}}})
	assert.NoError(t, err, "values that cannot be compared are taken as different")
	l, err := redlock.New(c, "orders")
	require.NoError(t, err)
	assert.Equal(t, "redlock orders", l.String())
}

// Errors that trying again cannot mend end Acquire and TryAcquire at once,
// even with a context that does not end, when they leave no majority
// possible: closed clients, a refused authentication. A minority of them
// does not keep the others from taking the lock.
func TestPermanentErrorsEndAcquire(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	settle(t, servers, time.Second)

	closed := clients(t, servers)
	for _, c := range closed {
		require.NoError(t, c.(*redis.Client).Close())
	}
	l := lockOn(t, newClient(t, closed), "closed", redlock.WithTTL(time.Second))
	for _, a := range attempts {
		err := a.returns(t, l, 10*time.Second)
		require.ErrorIs(t, err, recipes.ErrNotAcquired, a.name)
		assert.ErrorIs(t, err, redis.ErrClosed, a.name)
		assert.NotErrorIs(t, err, recipes.ErrLocked, a.name)
		assert.ErrorContains(t, err, "3 of 3 servers cannot take it, 2 needed", a.name)
		t.Logf("%s: %v", a.name, err)
	}

	mixed := clients(t, servers)
	require.NoError(t, mixed[0].(*redis.Client).Close())
	l = lockOn(t, newClient(t, mixed), "mixed", redlock.WithTTL(time.Second))
	lease, err := l.Acquire(ctxT(t))
	require.NoError(t, err, "two of three are a majority")
	require.NoError(t, lease.Release(ctxT(t)))

	l = newLock(t, servers, "noauth", redlock.WithTTL(time.Second))
	for _, c := range clients(t, servers) {
		require.NoError(t, c.(*redis.Client).ConfigSet(ctxT(t), "requirepass", "secret").Err())
	}
	for _, a := range attempts {
		err := a.returns(t, l, 10*time.Second)
		require.ErrorIs(t, err, recipes.ErrNotAcquired, a.name)
		assert.ErrorContains(t, err, "NOAUTH", a.name)
		t.Logf("%s: %v", a.name, err)
	}
}

// With no server that answers (nothing listening, or a listener that
// never answers, with a server timeout longer than the caller's context)
// Acquire and TryAcquire return soon after their context's deadline:
// releases of what an attempt may have taken go on in the background.
func TestUnreachableServersReturnAtTheDeadline(t *testing.T) {
	ports, err := harness.FreePorts(3)
	require.NoError(t, err)
	var refused, mute []redlock.Redis
	for i := range 3 {
		for _, c := range []struct {
			to   *[]redlock.Redis
			addr string
		}{{&refused, "127.0.0.1:" + strconv.Itoa(ports[i])}, {&mute, harness.NewMute(t).Addr()}} {
			r := redis.NewClient(&redis.Options{Addr: c.addr, MaxRetries: -1})
			t.Cleanup(func() { _ = r.Close() })
			*c.to = append(*c.to, r)
		}
	}
	for _, set := range []struct {
		name    string
		servers []redlock.Redis
	}{{"refused", refused}, {"mute", mute}} {
		// A server timeout of 15 minutes: an attempt that waited for its
		// clean-up (or for a mute server) would not return within waitLimit.
		c, err := redlock.NewClient(set.servers, redlock.WithServerTimeout(15*time.Minute))
		require.NoError(t, err)
		l, err := redlock.New(c, "unreachable", redlock.WithTTL(time.Hour))
		require.NoError(t, err)
		for _, a := range attempts {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			start := time.Now()
			done := make(chan error, 1)
			go func() {
				lease, err := a.call(l, ctx)
				if err == nil {
					_ = lease.Release(ctx)
				}
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(waitLimit):
				t.Fatalf("%s %s: did not return within %v of a 200ms deadline", set.name, a.name, waitLimit)
			}
			cancel()
			require.ErrorIs(t, err, recipes.ErrNotAcquired, "%s %s", set.name, a.name)
			t.Logf("%s, %s: returned %v after it started (deadline 200ms): %v", set.name, a.name, time.Since(start).Round(time.Millisecond), err)
			if a.name == "Acquire" {
				assert.ErrorIs(t, err, context.DeadlineExceeded, set.name)
			}
		}
	}
}

// holdLong takes the lock name over servers with a TTL of longTTL (and
// opts): a first lock of a short TTL sets the quiet period of the new
// servers, and is over before the long one is used (a new server grants
// nothing for a TTL).
func holdLong(t *testing.T, servers []redlock.Redis, name string, opts ...redlock.ClientOption) (*redlock.Client, recipes.Lease) {
	t.Helper()
	ctx := ctxT(t)
	// The first use of the name on a server starts its quiet period, a TTL
	// of the lock that used it: a server the short lock missed would be
	// quiet for the long lock's TTL. So the short lock must have been
	// taken on every server (a server timeout a loaded machine does not
	// outlast, under the TTL's third), and released everywhere (Close
	// waits for a release a server missed).
	warm := newClient(t, servers, redlock.WithServerTimeout(300*time.Millisecond))
	short := lockOn(t, warm, name, redlock.WithTTL(time.Second))
	// A server started last may still be quiet (it grants nothing for the
	// short TTL after its start) when a majority grants: try again, for a
	// bounded time.
	deadline := time.Now().Add(waitLimit)
	for {
		first, err := short.Acquire(ctx)
		require.NoError(t, err)
		everywhere := !slices.ContainsFunc(servers, func(r redlock.Redis) bool {
			n, err := r.(*redis.Client).Exists(ctx, "{"+name+"}").Result()
			return err != nil || n == 0
		})
		require.NoError(t, first.Release(ctx))
		if everywhere {
			break
		}
		require.True(t, time.Now().Before(deadline), "the short lock never reached every server")
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, warm.Close())
	c := newClient(t, servers, opts...)
	lease, err := lockOn(t, c, name, redlock.WithTTL(longTTL)).TryAcquire(ctx)
	require.NoError(t, err)
	return c, lease
}

// longTTL is the TTL of the locks whose release is tested: the lock must
// be free long before it (takenSoon waits waitLimit at most).
const longTTL = time.Hour

// takenSoon checks that another Lock takes the lock name soon after a
// release: long before longTTL.
func takenSoon(t *testing.T, servers []*harness.Redis, name string) {
	t.Helper()
	next := newLock(t, servers, name, redlock.WithTTL(longTTL))
	start := time.Now()
	var got recipes.Lease
	require.Eventually(t, func() bool {
		var err error
		got, err = next.TryAcquire(ctxT(t))
		return err == nil
	}, waitLimit, 10*time.Millisecond, "the lock is free long before its TTL (%v)", longTTL)
	t.Logf("another Lock took it %v later", time.Since(start).Round(time.Millisecond))
	require.NoError(t, got.Release(ctxT(t)))
}

// Release with a context that has already ended does not leave the lock
// held for its TTL: the release goes on in the background.
func TestReleaseWithAnEndedContext(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	_, lease := holdLong(t, clients(t, servers), "release-ended")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	err := lease.Release(ended)
	t.Logf("Release(ended) returned %v after it started: %v", time.Since(start).Round(time.Millisecond), err)
	takenSoon(t, servers, "release-ended")
}

// Release while a majority of the servers cannot be reached (connections
// refused) is not a lost lock: it goes on in the background, and once the
// servers are back the lock is free long before its TTL. (It used to be
// reported as lost and left held for the TTL.)
func TestReleaseWhileServersAreCut(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	var proxies []*harness.Proxy
	var proxied []redlock.Redis
	for _, s := range servers {
		p := harness.NewProxy(t, s.Addr())
		r := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = r.Close() })
		proxies, proxied = append(proxies, p), append(proxied, r)
	}
	_, lease := holdLong(t, proxied, "release-cut")
	proxies[0].Cut(t)
	proxies[1].Cut(t)
	err := lease.Release(ctxT(t))
	t.Logf("Release with two of three servers cut: %v", err)
	require.Error(t, err)
	assert.NotErrorIs(t, err, recipes.ErrLockLost, "cut off is not lost")
	proxies[0].Restore(t)
	proxies[1].Restore(t)
	takenSoon(t, servers, "release-cut")
}

// Servers younger than the lock's TTL grant nothing (they may have
// forgotten a holder): TryAcquire is refused with an error that says so,
// ErrQuiet (and recipes.ErrQuiet) besides recipes.ErrLocked.
func TestTryAcquireQuiet(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	_, err := newLock(t, servers, "quiet", redlock.WithTTL(time.Hour)).TryAcquire(ctxT(t))
	require.ErrorIs(t, err, recipes.ErrLocked)
	require.ErrorIs(t, err, redlock.ErrQuiet)
	require.ErrorIs(t, err, recipes.ErrQuiet)
	t.Logf("TryAcquire in the quiet period: %v", err)
}
