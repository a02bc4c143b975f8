package memcachedlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// Locks of one key with different TTLs never give two holders: a
// short-TTL holder releases to a long-TTL waiter, which holds for longer
// than two short TTLs (its item must live by its own TTL, renewed, not
// by the releaser's or the next contender's), while a short-TTL contender
// polls; the contender is granted only after the long-TTL holder's
// release. memcached has no hand-off: each holder's item is its own add.
func TestMixedTTLs(t *testing.T) {
	const short, long = memcachedlock.MinTTL, 12 * time.Second
	m := harness.StartMemcached(t)
	markFresh(t, client(t, m.Addr()), "mixed")
	awaitBackground(t)
	ctx := ctxT(t)
	lock := func(ttl time.Duration) *memcachedlock.Lock {
		return newLock(t, client(t, m.Addr()), "mixed", withServer(m, ttl)...)
	}

	releaser, err := lock(short).Acquire(ctx)
	require.NoError(t, err)
	waiter := acquireBehind(ctx, lock(long), releaser)
	time.Sleep(200 * time.Millisecond) // the waiter polls
	require.NoError(t, releaser.Release(ctx))
	g := await(t, waiter, "the long-TTL waiter's grant")
	require.NoError(t, g.err)
	require.True(t, g.firstDone, "the long-TTL waiter was granted the lock while the releaser held it")
	held := g.lease

	contender := acquireBehind(ctx, lock(short), held)
	hold := 2*short + time.Second // longer than an item of the short TTL could live, renewed or not
	select {
	case g := <-contender:
		require.NoError(t, g.err)
		t.Fatalf("the short-TTL contender was granted the lock while the long-TTL holder held it (its lease ended first: %v; its cause: %v)",
			g.firstDone, context.Cause(held.Context()))
	case <-time.After(hold):
	}
	require.NoError(t, held.Err(), "the long-TTL holder lost its lease while it renewed it")
	require.NoError(t, held.Release(ctx))
	g = await(t, contender, "the short-TTL contender's grant")
	require.NoError(t, g.err)
	assert.True(t, g.firstDone)

	first, _ := releaser.Token()
	second, _ := held.Token()
	third, _ := g.lease.Token()
	assert.Less(t, first, second)
	assert.Less(t, second, third)
	require.NoError(t, g.lease.Release(ctx))
}
