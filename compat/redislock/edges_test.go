package redislock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// A server that may evict the lock's keys is refused at the first use,
// with an error naming the setting and the fix, unless the risk is taken
// explicitly.
func TestEvictingServerRefused(t *testing.T) {
	r := harness.StartRedis(t)
	ctx := ctxT(t)
	admin := rdb(t, r.Addr())
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "64mb").Err())
	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	_, err := newLock(t, client(t, r.Addr()), "evict").Acquire(context.Background())
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	assert.ErrorContains(t, err, "maxmemory-policy is allkeys-lru")
	assert.ErrorContains(t, err, "noeviction")
	assert.ErrorContains(t, err, "WithoutEvictionCheck")

	lease, err := newLock(t, client(t, r.Addr(), redislock.WithoutEvictionCheck()), "evict").Acquire(ctx)
	require.NoError(t, err, "the risk taken explicitly")
	require.NoError(t, lease.Release(ctx))

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	lease, err = newLock(t, client(t, r.Addr()), "evict").Acquire(ctx)
	require.NoError(t, err, "noeviction is safe")
	require.NoError(t, lease.Release(ctx))
}

// Release with an ended context, or one that fails on the network, does
// not leave the lock held for its TTL: it goes on in the background.
func TestReleaseWithAnEndedContext(t *testing.T) {
	r := harness.StartRedis(t)
	ctx := ctxT(t)
	const longTTL = 20 * time.Second
	// A new server grants nothing for its first TTL (it may have forgotten
	// a holder): a first lock of the test's short TTL sets the quiet
	// period, and is over before the long one is used.
	first, err := newLock(t, client(t, r.Addr()), "release-ended").Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, first.Release(ctx))
	lease, err := newLock(t, client(t, r.Addr()), "release-ended", redislock.WithTTL(longTTL)).Acquire(ctx)
	require.NoError(t, err)
	ended, cancel := context.WithCancel(ctx)
	cancel()
	assert.Error(t, lease.Release(ended))
	next := newLock(t, client(t, r.Addr()), "release-ended", redislock.WithTTL(longTTL))
	var got recipes.Lease
	require.Eventually(t, func() bool {
		got, err = next.TryAcquire(ctx)
		return err == nil
	}, longTTL/4, 10*time.Millisecond, "the lock is free long before its TTL")
	require.NoError(t, got.Release(ctx))
}

// A closed go-redis client is a permanent error: Acquire returns at once,
// even with a context that never ends.
func TestClosedRedisClient(t *testing.T) {
	r := harness.StartRedis(t)
	closed := redis.NewClient(&redis.Options{Addr: r.Addr()})
	require.NoError(t, closed.Close())
	c, err := redislock.NewClient(closed)
	require.NoError(t, err)
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		_, err := newLock(t, c, "closed-client").Acquire(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, recipes.ErrNotAcquired)
		assert.ErrorIs(t, err, redis.ErrClosed)
	case <-time.After(waitLimit):
		t.Fatal("Acquire over a closed client did not return")
	}
}

// With no Redis reachable, Acquire and TryAcquire return after their
// context's deadline without waiting for their clean-ups, which run in the
// background: the clean-up of a lock with a TTL of an hour is retried for
// up to that hour, so returning within waitLimit shows it was not waited for.
func TestUnreachableRedisReturnsAtTheDeadline(t *testing.T) {
	ports, err := harness.FreePorts(1)
	require.NoError(t, err)
	c := client(t, "127.0.0.1:"+strconv.Itoa(ports[0]))
	l := newLock(t, c, "unreachable", redislock.WithTTL(time.Hour))
	for _, try := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			var err error
			if try {
				_, err = l.TryAcquire(ctx)
			} else {
				_, err = l.Acquire(ctx)
			}
			done <- err
		}()
		select {
		case err = <-done:
		case <-time.After(waitLimit):
			t.Fatalf("try %v: did not return within %v of a 100ms deadline", try, waitLimit)
		}
		cancel()
		require.ErrorIs(t, err, recipes.ErrNotAcquired)
		t.Logf("try %v: returned after %v", try, time.Since(start).Round(time.Millisecond))
	}
}

// Constructors refuse what cannot work.
func TestConstructorsRefuse(t *testing.T) {
	var typedNil *redis.Client
	_, err := redislock.NewClient(typedNil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	_, err = redislock.NewClient(nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	c, err := redislock.NewClient(rdb(t, "127.0.0.1:1"))
	require.NoError(t, err)
	for _, tc := range []struct {
		c    *redislock.Client
		name string
		opts []redislock.Option
		want string
	}{
		{nil, "x", nil, "nil Client"},
		{c, "", nil, "empty lock name"},
		{c, "a{b}", nil, "braces"},
		{c, "x", []redislock.Option{nil}, "nil Option"},
		{c, "x", []redislock.Option{redislock.WithTTL(0)}, "TTL 0s"},
		{c, "x", []redislock.Option{redislock.WithTTL(redislock.MinTTL - 1)}, "TTL 49.999999ms"},
		{c, "x", []redislock.Option{redislock.WithTTL(redislock.MaxTTL + time.Second)}, "TTL 720h0m1s"},
		{c, "x", []redislock.Option{redislock.WithTTL(100 * 365 * 24 * time.Hour)}, "TTL 876000h0m0s"},
	} {
		_, err = redislock.New(tc.c, tc.name, tc.opts...)
		if assert.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.want) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	for _, tc := range []struct {
		opt  redislock.ClientOption
		want string
	}{
		{nil, "nil ClientOption"},
		{redislock.WithKeyPrefix("app{1}:"), `key prefix "app{1}:": no braces`},
		{redislock.WithKeyPrefix("app}"), "no braces"},
		{redislock.WithKeyPrefix("my app:"), "no spaces"},
		{redislock.WithKeyPrefix("app*"), "glob characters"},
	} {
		_, err = redislock.NewClient(rdb(t, "127.0.0.1:1"), tc.opt)
		if assert.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.want) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
}

func TestString(t *testing.T) {
	c, err := redislock.NewClient(rdb(t, "127.0.0.1:1"))
	require.NoError(t, err)
	l, err := redislock.New(c, "orders")
	require.NoError(t, err)
	assert.Equal(t, "redislock orders", l.String())
}

// A server younger than the lock's TTL grants nothing (it may have
// forgotten a holder): TryAcquire is refused with an error that says so,
// ErrQuiet (and recipes.ErrQuiet) besides recipes.ErrLocked, so that a
// caller can tell it from a lock someone holds.
func TestTryAcquireQuiet(t *testing.T) {
	r := harness.StartRedis(t)
	ctx := ctxT(t)
	// A TTL the test cannot outlast: the server is quiet throughout.
	_, err := newLock(t, client(t, r.Addr()), "quiet", redislock.WithTTL(time.Hour)).TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrLocked)
	require.ErrorIs(t, err, redislock.ErrQuiet)
	require.ErrorIs(t, err, recipes.ErrQuiet)
	t.Logf("TryAcquire in the quiet period: %v", err)
}
