package sqllock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/recipes"
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
			ctx := ctxT(t)
			releaser := newLock(t, s.client(t), "mixed", sqllock.WithTTL(short))
			waiter := newLock(t, s.client(t), "mixed", sqllock.WithTTL(long))
			third := newLock(t, s.client(t), "mixed", sqllock.WithTTL(short))

			first, err := releaser.Acquire(ctx)
			require.NoError(t, err)
			type result struct {
				lease recipes.Lease
				err   error
			}
			got := make(chan result, 1)
			go func() {
				lease, err := waiter.Acquire(ctx)
				got <- result{lease, err}
			}()
			require.Eventually(t, func() bool { return s.waiting(t, "mixed") == 1 }, waitLimit, 5*time.Millisecond)
			require.NoError(t, first.Release(ctx))
			w := <-got
			require.NoError(t, w.err)

			// Four of the short TTLs: the row would have expired long
			// before, had the grant been for the releaser's TTL.
			tctx, cancel := context.WithTimeout(ctx, 4*short)
			defer cancel()
			lease, err := third.Acquire(tctx)
			if err == nil {
				alive := w.lease.Err() == nil
				require.NoError(t, lease.Release(ctx))
				require.False(t, alive, "the third contender was granted the lock while the waiter's lease lived")
				t.Fatalf("the waiter's lease ended: %v", w.lease.Err())
			}
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.NoError(t, w.lease.Err(), "the waiter's lease ended")
			require.NoError(t, w.lease.Release(ctx))
			require.Eventually(t, func() bool { return len(s.leftovers(t, "mixed")) == 0 }, waitLimit, 20*time.Millisecond)
		})
	}
}
