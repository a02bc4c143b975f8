package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// keyOn reports whether server s has the lock's key.
func keyOn(t *testing.T, s *harness.Redis, name string) bool {
	t.Helper()
	n, err := clients(t, []*harness.Redis{s})[0].(*redis.Client).Exists(ctxT(t), "{"+name+"}").Result()
	require.NoError(t, err)
	return n > 0
}

// A release that a server missed goes on in the background, and Close
// waits for it: here until the server can be reached again, so that the
// key is gone there when Close returns; or, when it never can, for
// ttl.CloseWait, after which Close stops it and says so.
func TestCloseWaitsForBackgroundReleases(t *testing.T) {
	for _, back := range []bool{true, false} {
		t.Run(map[bool]string{true: "reached again", false: "never reached"}[back], func(t *testing.T) {
			const name = "close-waits"
			servers := harness.StartRedisN(t, 3)
			rs, ps := proxied(t, servers)
			// A generous server timeout: the key on every server, on a
			// loaded machine too.
			c, lease := holdLong(t, rs, name, redlock.WithServerTimeout(10*time.Second))
			for i, s := range servers {
				require.True(t, keyOn(t, s, name), "server %d has the key", i)
			}
			ps[2].Cut(t)
			require.NoError(t, lease.Release(ctxT(t)), "released on a majority")
			require.True(t, keyOn(t, servers[2], name), "the cut server still has the key")
			restore := func() { ps[2].Restore(t) }
			if !back {
				restore = nil
			}
			err := holdertest.CloseDuring(t, c.Close, restore)
			if !back {
				assert.ErrorContains(t, err, "1 clean-up(s) stopped unfinished")
				return
			}
			require.NoError(t, err)
			assert.False(t, keyOn(t, servers[2], name), "when Close returned")
		})
	}
}

// A closed Client's locks take the lock no more; Close again is harmless.
func TestAcquireAfterClose(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	c := newClient(t, clients(t, servers))
	l := lockOn(t, c, "closed", redlock.WithTTL(time.Second))
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	for _, a := range attempts {
		_, err := a.call(l, ctxT(t))
		assert.ErrorIs(t, err, recipes.ErrNotAcquired, a.name)
		assert.ErrorIs(t, err, redlock.ErrClosed, a.name)
	}
}

// An Acquire whose context ends while its attempt waits for a slow server
// has released what that attempt took there by the time it returns. It
// used to leave the release to the background when the context had
// ended, so that a process that exited then left the key behind for a
// TTL.
func TestGivingUpReleasesBeforeReturning(t *testing.T) {
	const name = "give-up"
	servers := harness.StartRedisN(t, 3)
	// Servers 0 and 1 held by another (a majority): server 2 gives the
	// waiter its key, which it must give back.
	_, held := holdLong(t, clients(t, servers), name)
	require.NoError(t, clients(t, servers[2:])[0].(*redis.Client).Del(ctxT(t), "{"+name+"}").Err())

	rs, ps := proxied(t, servers)
	// A server timeout that outlasts the slow server's round trip; the
	// eviction check is off so that the attempt is one request per server.
	c := newClient(t, rs, redlock.WithServerTimeout(600*time.Millisecond), redlock.WithoutEvictionCheck())
	l := lockOn(t, c, name, redlock.WithTTL(2*time.Second))
	for _, r := range rs {
		warm(t, r.(*redis.Client), 4) // a new connection would cost round trips of its own under the delay
	}
	// The key reaches server 2 300 ms after the attempt starts; its reply,
	// and the release's arrival, 300 ms after that: the caller's context
	// ends in between.
	ps[2].Latency(t, 300*time.Millisecond)
	ctx, cancel := context.WithTimeout(ctxT(t), 450*time.Millisecond)
	defer cancel()
	_, err := l.Acquire(ctx)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	assert.False(t, keyOn(t, servers[2], name), "what the attempt took is released when Acquire returns")
	ps[2].Restore(t)
	require.NoError(t, c.Close())
	require.NoError(t, held.Release(ctxT(t)))
}

// warm opens n connections of r's pool: n requests that each hold one a
// moment.
func warm(t *testing.T, r *redis.Client, n int) {
	t.Helper()
	errs := make(chan error, n)
	for range n {
		go func() { errs <- r.BLPop(ctxT(t), 100*time.Millisecond, "{warm}").Err() }()
	}
	for range n {
		require.ErrorIs(t, <-errs, redis.Nil)
	}
}
