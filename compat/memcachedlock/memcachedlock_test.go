package memcachedlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
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

func client(t testing.TB, addr string) *memcache.Client {
	t.Helper()
	mc := memcache.New(addr)
	t.Cleanup(func() { _ = mc.Close() })
	return mc
}

func newLock(t testing.TB, mc memcachedlock.Memcached, key string, opts ...memcachedlock.Option) *memcachedlock.Lock {
	t.Helper()
	l, err := memcachedlock.New(mc, key, opts...)
	require.NoError(t, err)
	return l
}

func TestContract(t *testing.T) {
	m := harness.StartMemcached(t)
	admin := client(t, m.Addr())
	locktest.Run(t, locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker {
			return newLock(t, client(t, m.Addr()), name, memcachedlock.WithTTL(2*time.Second))
		},
		Lose: func(t *testing.T, name string, _ recipes.Lease) {
			require.NoError(t, admin.Delete(name)) // deleted (or evicted) under the holder
		},
		Leftovers: func(t *testing.T, name string) []string {
			if _, err := admin.Get(name); err == nil {
				return []string{name}
			}
			return nil
		},
		Reentrant: true,
	})
}

// Tokens (CAS values) keep growing across keys: memcached's CAS counter is
// one per server.
func TestTokensAcrossKeys(t *testing.T) {
	m := harness.StartMemcached(t)
	ctx := ctxT(t)
	var last int64
	for _, key := range []string{"a", "b", "a", "c"} {
		lease, err := newLock(t, client(t, m.Addr()), key, memcachedlock.WithTTL(2*time.Second)).Acquire(ctx)
		require.NoError(t, err)
		token, ok := lease.Token()
		require.True(t, ok)
		assert.Greater(t, token, last, "key %s", key)
		last = token
		require.NoError(t, lease.Release(ctx))
	}
}

func TestBadInput(t *testing.T) {
	mc := memcache.New("127.0.0.1:1")
	for _, tc := range []struct {
		mc   memcachedlock.Memcached
		key  string
		opts []memcachedlock.Option
		want string
	}{
		{nil, "k", nil, "nil memcached client"},
		{mc, "", nil, "must be 1 to 250 bytes"},
		{mc, "a b", nil, "no spaces"},
		{mc, "k", []memcachedlock.Option{memcachedlock.WithTTL(500 * time.Millisecond)}, "must be at least 2s"},
		{mc, "k", []memcachedlock.Option{memcachedlock.WithTTL(2500 * time.Millisecond)}, "whole seconds"},
		{mc, "k", []memcachedlock.Option{nil}, "nil Option"},
	} {
		_, err := memcachedlock.New(tc.mc, tc.key, tc.opts...)
		require.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
}
