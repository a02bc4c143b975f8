package memcachedlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
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

// newLock is the lock key over a Client of mc of its own; opts are the
// Client's options (ClientOption) and the lock's (Option), in any order.
func newLock(t testing.TB, mc memcachedlock.Memcached, key string, opts ...any) *memcachedlock.Lock {
	t.Helper()
	_, l := newClientLock(t, mc, key, opts...)
	return l
}

// newClientLock is newLock, and its Client.
func newClientLock(t testing.TB, mc memcachedlock.Memcached, key string, opts ...any) (*memcachedlock.Client, *memcachedlock.Lock) {
	t.Helper()
	c, l, err := openLock(mc, key, opts...)
	require.NoError(t, err)
	return c, l
}

// openLock is NewClient and New, each with its options of opts.
func openLock(mc memcachedlock.Memcached, key string, opts ...any) (*memcachedlock.Client, *memcachedlock.Lock, error) {
	var copts []memcachedlock.ClientOption
	var lopts []memcachedlock.Option
	for _, o := range opts {
		switch o := o.(type) {
		case memcachedlock.ClientOption:
			copts = append(copts, o)
		case memcachedlock.Option:
			lopts = append(lopts, o)
		default:
			return nil, nil, fmt.Errorf("test: %T is no option", o)
		}
	}
	c, err := memcachedlock.NewClient(mc, copts...)
	if err != nil {
		return nil, nil, err
	}
	l, err := memcachedlock.New(c, key, lopts...)
	return c, l, err
}

// markFresh writes the markers of keys on a server the test has just
// started: it has forgotten no holder, so their first use need not wait
// out the quiet period (the marker is key+":alive", see the package doc).
func markFresh(t testing.TB, admin *memcache.Client, keys ...string) {
	t.Helper()
	for _, key := range keys {
		err := admin.Add(&memcache.Item{Key: key + ":alive", Value: []byte("1")})
		if err != nil && !errors.Is(err, memcache.ErrNotStored) {
			t.Fatalf("mark %s fresh: %v", key, err)
		}
	}
}

func TestContract(t *testing.T) {
	m := harness.StartMemcached(t)
	awaitBackground(t)
	admin := client(t, m.Addr())
	locktest.Run(t, locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker {
			markFresh(t, admin, name)
			return newLock(t, client(t, m.Addr()), name, memcachedlock.WithServerAddr(m.Addr()),
				memcachedlock.WithTTL(memcachedlock.MinTTL))
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
	markFresh(t, client(t, m.Addr()), "a", "b", "c")
	var last int64
	for _, key := range []string{"a", "b", "a", "c"} {
		lease, err := newLock(t, client(t, m.Addr()), key, memcachedlock.WithServerAddr(m.Addr())).Acquire(ctx)
		require.NoError(t, err)
		token, ok := lease.Token()
		require.True(t, ok)
		assert.Greater(t, token, last, "key %s", key)
		last = token
		require.NoError(t, lease.Release(ctx))
	}
}

// The first use of a key on a new server waits out the quiet period: the
// server cannot tell a new key from one it forgot.
func TestFirstUseIsQuiet(t *testing.T) {
	m := harness.StartMemcached(t)
	ctx := ctxT(t)
	opts := []any{memcachedlock.WithServerAddr(m.Addr()), memcachedlock.WithTTL(memcachedlock.MinTTL)}
	_, err := newLock(t, client(t, m.Addr()), "first", opts...).TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrLocked)
	require.ErrorIs(t, err, memcachedlock.ErrQuiet)
	require.ErrorIs(t, err, recipes.ErrQuiet, "the shared sentinel")
	t.Logf("TryAcquire at the first use: %v", err)
	start := time.Now()
	lease, err := newLock(t, client(t, m.Addr()), "first", opts...).Acquire(ctx)
	require.NoError(t, err)
	t.Logf("granted %v after the first use (TTL %v; the quiet item expires at TTL + 2 s, up to 2 s early)",
		time.Since(start).Round(time.Millisecond), memcachedlock.MinTTL)
	require.NoError(t, lease.Release(ctx))
	admin := client(t, m.Addr())
	_, err = admin.Get("first")
	require.ErrorIs(t, err, memcache.ErrCacheMiss, "the lock item is left behind")
	_, err = admin.Get("first:alive")
	require.NoError(t, err, "the marker stays (documented)")
}

// On a server that has run for longer than the TTL + 3 s, a key's first use
// waits for nothing: with the address, the lock reads the server's uptime.
func TestFirstUseOnAnOldServer(t *testing.T) {
	m := harness.StartMemcached(t)
	ctx := ctxT(t)
	ttl := memcachedlock.MinTTL
	time.Sleep(ttl + 4*time.Second) // uptime counts whole seconds
	lease, err := newLock(t, client(t, m.Addr()), "old-server", memcachedlock.WithServerAddr(m.Addr()),
		memcachedlock.WithTTL(ttl)).TryAcquire(ctx)
	require.NoError(t, err, "no quiet period on a server older than the TTL")
	require.NoError(t, lease.Release(ctx))
	_, err = newLock(t, client(t, m.Addr()), "old-server-no-addr", memcachedlock.WithoutEvictionCheck(),
		memcachedlock.WithTTL(ttl)).TryAcquire(ctx)
	require.ErrorIs(t, err, memcachedlock.ErrQuiet, "without the address, a first use is quiet")
}

func TestBadInput(t *testing.T) {
	mc := memcache.New("127.0.0.1:1")
	addr := memcachedlock.WithServerAddr("127.0.0.1:1")
	for _, tc := range []struct {
		mc   memcachedlock.Memcached
		key  string
		opts []any
		want string
	}{
		{nil, "k", []any{addr}, "nil memcached client"},
		{(*memcache.Client)(nil), "k", []any{addr}, "nil memcached client"},
		{mc, "", []any{addr}, "must be 1 to 244 bytes"},
		{mc, strings.Repeat("k", 245), []any{addr}, "must be 1 to 244 bytes"},
		{mc, "k:alive", []any{addr}, "name a lock's own items"},
		{mc, "k:quiet", []any{addr}, "name a lock's own items"},
		{mc, "a b", []any{addr}, "no spaces"},
		{mc, "k", []any{addr, memcachedlock.WithTTL(500 * time.Millisecond)}, "TTL 500ms: must be from 3s"},
		{mc, "k", []any{addr, memcachedlock.WithTTL(2 * time.Second)}, "TTL 2s: must be from 3s"},
		{mc, "k", []any{addr, memcachedlock.WithTTL(-time.Second)}, "TTL -1s: must be from 3s"},
		{mc, "k", []any{addr, memcachedlock.WithTTL(ttl.MaxTTL)}, "TTL 720h0m0s: must be from 3s"},
		{mc, "k", []any{addr, memcachedlock.WithTTL(3500 * time.Millisecond)}, "whole seconds"},
		{mc, "k", []any{addr, memcachedlock.Option(nil)}, "nil Option"},
		{mc, "k", []any{addr, memcachedlock.ClientOption(nil)}, "nil ClientOption"},
		{mc, "k", nil, "pass WithServerAddr"},
		{mc, "k", []any{memcachedlock.WithServerAddr("")}, `WithServerAddr(""): not a host:port`},
		{mc, "k", []any{memcachedlock.WithServerAddr("localhost")}, `WithServerAddr("localhost"): not a host:port`},
		{mc, "k", []any{addr, memcachedlock.WithKeyPrefix("my app:")}, `key prefix "my app:": no spaces`},
		{mc, strings.Repeat("k", 240), []any{addr, memcachedlock.WithKeyPrefix("app:0")}, `with its prefix "app:0", must be 1 to 244 bytes`},
	} {
		_, _, err := openLock(tc.mc, tc.key, tc.opts...)
		require.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.want)
		assert.Contains(t, err.Error(), tc.want)
	}
	_, err := memcachedlock.New(nil, "orders")
	require.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "nil Client (make one with NewClient)")
	l := newLock(t, mc, "orders", memcachedlock.WithoutEvictionCheck())
	assert.Equal(t, "memcachedlock orders", l.String())
	l = newLock(t, mc, "orders", memcachedlock.WithoutEvictionCheck(), memcachedlock.WithKeyPrefix("app:"))
	assert.Equal(t, "app:orders", l.Key())
	assert.Equal(t, "memcachedlock app:orders", l.String())
	for _, opts := range [][]any{
		{addr, memcachedlock.WithTTL(memcachedlock.MinTTL)},
		{addr, memcachedlock.WithTTL(memcachedlock.MaxTTL)},
		{memcachedlock.WithoutEvictionCheck()},
		{addr, memcachedlock.WithoutEvictionCheck()},
		{memcachedlock.WithServerAddr("/run/memcached/memcached.sock")}, // a unix socket, as gomemcache takes it
	} {
		_, _, err := openLock(mc, strings.Repeat("k", memcachedlock.MaxKeyLen), opts...)
		require.NoError(t, err)
	}
}
