package memcachedlock_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
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
	lock := func(ttl time.Duration) *memcachedlock.Lock {
		return newLock(t, client(t, m.Addr()), "mixed", withServer(m, ttl)...)
	}

	// The long-TTL holder holds for longer than an item of the short TTL
	// could live, renewed or not.
	holdertest.MixedTTLs(t, lock(short), lock(long), lock(short), 2*short+time.Second)
}
