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
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// A memcached that evicts (no -M) is refused at the first Acquire, at once,
// with an error that names the setting and the fix; WithoutEvictionCheck
// takes the risk.
func TestEvictionsOnIsRefused(t *testing.T) {
	m := harness.StartMemcachedEvicting(t, 64)
	markFresh(t, client(t, m.Addr()), "evicting")
	l := newLock(t, client(t, m.Addr()), "evicting", memcachedlock.WithServerAddr(m.Addr()))
	for _, acquire := range []func(context.Context) (recipes.Lease, error){l.Acquire, l.TryAcquire} {
		err := within(t, promptLimit, func() (recipes.Lease, error) { return acquire(context.Background()) })
		require.ErrorIs(t, err, recipes.ErrNotAcquired)
		require.ErrorIs(t, err, memcachedlock.ErrEvictions)
		assert.Contains(t, err.Error(), "memcached runs with evictions on")
		assert.Contains(t, err.Error(), "start it with -M")
		assert.Contains(t, err.Error(), "WithoutEvictionCheck()")
	}

	ctx := ctxT(t)
	lease, err := newLock(t, client(t, m.Addr()), "evicting", memcachedlock.WithoutEvictionCheck()).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))
}

// The check is kept once it succeeded: a Lock reads the settings once (and
// the server's start time once, to date the marker markFresh wrote as an
// earlier version would).
func TestEvictionsOffIsCheckedOnce(t *testing.T) {
	m := harness.StartMemcached(t)
	markFresh(t, client(t, m.Addr()), "checked")
	p := harness.NewProxy(t, m.Addr()) // the check's connections go through it; the lock's go straight
	l := newLock(t, client(t, m.Addr()), "checked", memcachedlock.WithServerAddr(p.Addr()))
	ctx := ctxT(t)
	for range 3 {
		lease, err := l.Acquire(ctx)
		require.NoError(t, err)
		require.NoError(t, lease.Release(ctx))
	}
	assert.Equal(t, 2, p.Accepted(), "connections to read the settings and the start time")
}

// The documented risk: a memcached of 2 MB that evicts, with the check
// skipped. Filling it evicts the held lock's item; whether another client
// is then granted the lock depends on whether the lock's marker went too
// (then the server is quiet). Nothing is asserted of safety here: the test
// shows what WithoutEvictionCheck accepts.
func TestEvictionRiskWithoutCheck(t *testing.T) {
	m := harness.StartMemcachedEvicting(t, 2)
	awaitBackground(t)
	admin := client(t, m.Addr())
	markFresh(t, admin, "risk")
	ctx := ctxT(t)
	// A TTL long enough that no renewal comes during the filling.
	opts := []any{memcachedlock.WithoutEvictionCheck(), memcachedlock.WithTTL(30 * time.Second)}
	holder, err := newLock(t, client(t, m.Addr()), "risk", opts...).Acquire(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Release(ctx) }()
	// memcached evicts within a slab class: fill the classes of items of
	// the lock's size, 6 MB through 2 MB, reading the marker now and then
	// as other clients of the lock would (memcached's LRU keeps items
	// read recently).
	filler := []byte(strings.Repeat("x", 80))
	for i := range 60000 {
		require.NoError(t, admin.Set(&memcache.Item{Key: fmt.Sprintf("f%d", i), Value: filler[:10+i%70]}))
		if i%500 == 0 {
			_, _ = admin.Get("risk:alive")
		}
	}
	_, lockErr := admin.Get("risk")
	_, markerErr := admin.Get("risk:alive")
	t.Logf("after filling: lock item evicted: %v, marker evicted: %v",
		errors.Is(lockErr, memcache.ErrCacheMiss), errors.Is(markerErr, memcache.ErrCacheMiss))
	other, err := newLock(t, client(t, m.Addr()), "risk", opts...).TryAcquire(ctx)
	if err == nil {
		t.Logf("another client was granted the lock; the holder's lease: %v (nil: live, the risk WithoutEvictionCheck documents)",
			holder.Err())
		_ = other.Release(ctx)
		return
	}
	t.Logf("another client's TryAcquire: %v", err)
}
