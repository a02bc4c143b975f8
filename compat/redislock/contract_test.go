package redislock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	holdertest.RunIfChild(holderLock, func(l recipes.Locker, le recipes.Lease) time.Time { // a child process of TestPausedHolder
		return ttl.Deadline(le.Context(), l)
	})
	goleak.VerifyTestMain(m)
}

// holderLock is the lock a holder child process takes: "addr|name|ttl".
func holderLock(spec string) (recipes.Locker, error) {
	f := strings.Split(spec, "|")
	d, err := time.ParseDuration(f[2])
	if err != nil {
		return nil, err
	}
	c, err := redislock.NewClient(redis.NewClient(&redis.Options{Addr: f[0]}))
	if err != nil {
		return nil, err
	}
	return redislock.New(c, f[1], redislock.WithTTL(d))
}

// waitLimit bounds every wait in these tests; nothing asserts on durations.
const waitLimit = 60 * time.Second

// rdb is a go-redis client of addr, closed at t's cleanup.
func rdb(t testing.TB, addr string) *redis.Client {
	t.Helper()
	r := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// client is a lock client of its own (its own connections and
// subscription: a contender of its own), closed at t's cleanup.
func client(t testing.TB, addr string, opts ...redislock.ClientOption) *redislock.Client {
	t.Helper()
	c, err := redislock.NewClient(rdb(t, addr), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// testTTL is the TTL of the tests' locks unless they set one: short,
// because a server younger than a TTL grants nothing (it may have forgotten
// a holder), and every test starts a new server.
const testTTL = 2 * time.Second

func newLock(t testing.TB, c *redislock.Client, name string, opts ...redislock.Option) *redislock.Lock {
	t.Helper()
	l, err := redislock.New(c, name, append([]redislock.Option{redislock.WithTTL(testTTL)}, opts...)...)
	require.NoError(t, err)
	return l
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// leftovers lists the keys of lock name that a lock leaves nothing of when
// idle: a queue, or the lock held by someone. The fencing counter, the
// quiet marker and the released lock ("-", its last token and run id)
// stay, with a TTL of a day, by design.
func leftovers(t testing.TB, admin redis.Cmdable, name string) []string {
	t.Helper()
	return prefixedLeftovers(t, admin, "", name)
}

// prefixedLeftovers is leftovers for a lock with a key prefix.
func prefixedLeftovers(t testing.TB, admin redis.Cmdable, prefix, name string) []string {
	t.Helper()
	tag := prefix + "{" + name + "}"
	var left []string
	n, err := admin.Exists(ctxT(t), tag+":queue").Result()
	require.NoError(t, err)
	if n > 0 {
		left = append(left, tag+":queue")
	}
	v, err := admin.Get(ctxT(t), tag).Result()
	if !errors.Is(err, redis.Nil) {
		require.NoError(t, err)
		if !strings.HasPrefix(v, "- ") {
			left = append(left, tag+" = "+v)
		}
	}
	return left
}

func TestContract(t *testing.T) {
	r := harness.StartRedis(t)
	admin := rdb(t, r.Addr())
	locktest.Run(t, locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker {
			return newLock(t, client(t, r.Addr()), name, redislock.WithTTL(time.Second))
		},
		Lose: func(t *testing.T, name string, _ recipes.Lease) {
			require.NoError(t, admin.Del(ctxT(t), "{"+name+"}").Err()) // deleted (or evicted) under the holder
		},
		Leftovers: func(t *testing.T, name string) []string { return leftovers(t, admin, name) },
		Reentrant: true,
	})
}
