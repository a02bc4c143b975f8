package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/internal/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitLimit = 60 * time.Second

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// clients gives a contender its own clients of the servers.
func clients(t testing.TB, servers []*harness.Redis) []redlock.Redis {
	t.Helper()
	out := make([]redlock.Redis, len(servers))
	for i, s := range servers {
		r := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = r.Close() })
		out[i] = r
	}
	return out
}

func newLock(t testing.TB, servers []*harness.Redis, name string, opts ...redlock.Option) *redlock.Lock {
	t.Helper()
	l, err := redlock.New(clients(t, servers), name, opts...)
	require.NoError(t, err)
	return l
}

func TestContract(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	admins := clients(t, servers)
	locktest.Run(t, locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker {
			return newLock(t, servers, name, redlock.WithTTL(time.Second))
		},
		Lose: func(t *testing.T, name string, _ recipes.Lease) {
			for _, a := range admins[:2] { // a majority no longer has it
				require.NoError(t, a.(*redis.Client).Del(ctxT(t), "{"+name+"}").Err())
			}
		},
		Leftovers: func(t *testing.T, name string) []string {
			var left []string
			for i, a := range admins {
				if n, _ := a.(*redis.Client).Exists(ctxT(t), "{"+name+"}").Result(); n > 0 {
					left = append(left, servers[i].Addr())
				}
			}
			return left
		},
		Reentrant: true,
		NoTokens:  true,
	})
}

// One server of three down: the lock works on the other two. Two down: no
// majority, nothing is acquired, and what one server gave is released.
func TestServersDown(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	l := newLock(t, servers, "down", redlock.WithTTL(time.Second))
	ctx := ctxT(t)

	servers[0].Stop(t)
	lease, err := l.Acquire(ctx)
	require.NoError(t, err, "two of three are a majority")
	_, ok := lease.Token()
	assert.False(t, ok, "Redlock has no fencing token")
	require.NoError(t, lease.Release(ctx))

	servers[1].Stop(t)
	_, err = l.TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrLocked)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = l.Acquire(short)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.True(t, errors.Is(err, context.DeadlineExceeded))
	n, err := redis.NewClient(&redis.Options{Addr: servers[2].Addr()}).Exists(ctx, "{down}").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the one server that gave it was released")
}

func TestBadInput(t *testing.T) {
	servers := harness.StartRedisN(t, 1)
	cs := clients(t, servers)
	for _, tc := range []struct {
		servers []redlock.Redis
		name    string
		opts    []redlock.Option
		want    string
	}{
		{nil, "x", nil, "no servers"},
		{[]redlock.Redis{nil}, "x", nil, "server 0 is nil"},
		{cs, "", nil, "empty lock name"},
		{cs, "a{b}", nil, "braces"},
		{cs, "x", []redlock.Option{redlock.WithTTL(0)}, "TTL 0s"},
		{cs, "x", []redlock.Option{redlock.WithTTL(time.Second), redlock.WithServerTimeout(time.Second)}, "server timeout"},
		{cs, "x", []redlock.Option{nil}, "nil Option"},
	} {
		_, err := redlock.New(tc.servers, tc.name, tc.opts...)
		require.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}
