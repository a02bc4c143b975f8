package sqllock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// slowLatency is how late the proxy delivers a slow client's requests:
// far more than the test's own look at the table takes, so that a
// clean-up left to the background is still under way when it looks.
const slowLatency = 300 * time.Millisecond

// startSlow starts db and a second way to it through a proxy, for a
// client whose requests the test can slow down.
func startSlow(t *testing.T, db string) (direct, slow server, p *harness.Proxy) {
	if db == "postgres" {
		s, pg := startPostgres(t)
		slow, p := s.through(t, pg.Addr())
		slow.listenDSN = s.listenDSN // the listener is not slowed
		return s, slow, p
	}
	s, m := startMariaDB(t)
	slow, p = s.through(t, m.Addr())
	return s, slow, p
}

// A waiter whose context ends leaves nothing when Acquire returns: no
// entry in PostgreSQL's queue, no session left waiting in MySQL's
// GET_LOCK. Its requests are slowed, so a clean-up left to the
// background would still be under way when the test looks.
func TestGiveUpLeavesNothing(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			s, slow, p := startSlow(t, db)
			ctx := ctxT(t)
			holder, err := newLock(t, s.client(t), "give-up", sqllock.WithTTL(time.Minute)).Acquire(ctx)
			require.NoError(t, err)

			waiter := newLock(t, slow.client(t), "give-up", sqllock.WithTTL(time.Minute))
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			got := make(chan error, 1)
			go func() {
				_, err := waiter.Acquire(wctx)
				got <- err
			}()
			require.Eventually(t, func() bool { return s.waiting(t, "give-up") == 1 }, waitLimit, 5*time.Millisecond)
			p.LatencyToServer(t, slowLatency)
			cancel()
			err = <-got
			require.ErrorIs(t, err, recipes.ErrNotAcquired)
			require.ErrorIs(t, err, context.Canceled)
			require.Zero(t, s.waiting(t, "give-up"), "the waiter left its wait behind")

			p.Restore(t)
			require.NoError(t, holder.Release(ctx))
			require.Eventually(t, func() bool { return len(s.leftovers(t, "give-up")) == 0 }, waitLimit, 20*time.Millisecond)
		})
	}
}

// Close waits for a release that goes on in the background (its
// Release's context had ended): once Close returns, the lock is free.
func TestCloseWaitsForCleanUps(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			s, slow, p := startSlow(t, db)
			ctx := ctxT(t)
			c := slow.client(t)
			lease, err := newLock(t, c, "close", sqllock.WithTTL(time.Minute)).Acquire(ctx)
			require.NoError(t, err)

			p.LatencyToServer(t, slowLatency)
			ended, cancel := context.WithCancel(ctx)
			cancel()
			require.ErrorIs(t, lease.Release(ended), context.Canceled) // goes on in the background
			require.NoError(t, c.Close())
			require.Empty(t, s.leftovers(t, "close"), "Close returned before the release was done")
		})
	}
}

// A closed Client's locks take the lock no more (a lease held goes on,
// and re-enters); Close again is harmless.
func TestAcquireAfterClose(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			c := startDB(t, db).client(t)
			l := newLock(t, c, "after-close")
			held, err := l.Acquire(ctxT(t))
			require.NoError(t, err)
			require.NoError(t, c.Close())
			require.NoError(t, c.Close())
			// A lease held goes on, and re-enters.
			again, err := l.Acquire(held.Context())
			require.NoError(t, err, "a held lease re-enters after Close")
			require.NoError(t, again.Release(ctxT(t)))
			require.NoError(t, held.Release(ctxT(t)))
			for _, call := range []func(context.Context) (recipes.Lease, error){l.Acquire, l.TryAcquire} {
				_, err := call(ctxT(t))
				require.ErrorIs(t, err, recipes.ErrNotAcquired)
				require.ErrorIs(t, err, sqllock.ErrClosed)
			}
		})
	}
}
