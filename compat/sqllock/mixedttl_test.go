package sqllock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
)

// Processes that lock one name with different TTLs: a holder with a short
// TTL releases to a waiter with a long one, which trusts its lease for
// its own TTL; a third contender with a short TTL must not be granted the
// lock while that lease lives, however long past the short TTL it waits.
// On PostgreSQL the release itself grants the lock to the waiter (with
// the waiter's TTL, from its queue entry); on MySQL the waiter takes the
// row itself.
func TestMixedTTLs(t *testing.T) {
	const short, long = 500 * time.Millisecond, time.Minute
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			s := startDB(t, db)
			releaser := newLock(t, s.client(t), "mixed", sqllock.WithTTL(short))
			waiter := newLock(t, s.client(t), "mixed", sqllock.WithTTL(long))
			third := newLock(t, s.client(t), "mixed", sqllock.WithTTL(short))

			// Four of the short TTLs: the row would have expired long
			// before, had the grant been for the releaser's TTL.
			holdertest.MixedTTLs(t, releaser, waiter, third, 4*short)
			require.Eventually(t, func() bool { return len(s.leftovers(t, "mixed")) == 0 }, waitLimit, 20*time.Millisecond)
		})
	}
}
