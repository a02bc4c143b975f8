package redislock_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
)

// Clients of one lock with different TTLs never make two holders: a
// handoff sets the lock with the TTL of the waiter it grants (its queue
// entry carries it), which the waiter trusts its lease for, not with the
// releaser's. A contender with the short TTL is kept out for three of its
// TTLs while the long-TTL waiter holds.
func TestMixedTTLs(t *testing.T) {
	r := harness.StartRedis(t)
	const short, long = time.Second, 10 * time.Second
	lock := func(d time.Duration) *redislock.Lock {
		return newLock(t, client(t, r.Addr()), "mixed-ttl", redislock.WithTTL(d))
	}
	holdertest.MixedTTLs(t, lock(short), lock(long), lock(short), 3*short)
}
