package redlock_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
)

// Clients of one lock with different TTLs never make two holders: each
// sets the lock on the servers with its own TTL, which it trusts its
// lease for. A contender with the short TTL is kept out for three of its
// TTLs while a long-TTL holder, which took the lock at the short-TTL
// holder's release, holds it.
func TestMixedTTLs(t *testing.T) {
	rs := harness.StartRedisN(t, 3)
	const short, long = time.Second, 10 * time.Second
	lock := func(d time.Duration) *redlock.Lock { return newLock(t, rs, "mixed-ttl", redlock.WithTTL(d)) }
	holdertest.MixedTTLs(t, lock(short), lock(long), lock(short), 3*short)
}
