package sqllock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// faultTTL is the TTL of the holders in these tests.
const faultTTL = 2 * time.Second

// The margin the tests accept: the drift margin less its allowance for the
// client's own scheduling.
var wantMargin = recipes.DriftMargin(faultTTL) - 10*time.Millisecond

// through is s reached through a fault proxy, for one client.
func (s server) through(t testing.TB, upstream string) (server, *harness.Proxy) {
	p := harness.NewProxy(t, upstream)
	s.dsn = strings.Replace(s.dsn, upstream, p.Addr(), 1)
	return s, p
}

// A holder whose connections are blackholed (nothing answers, nothing is
// closed) is told before the successor is granted the lock, by the
// margin.
func TestHolderToldFirstUnderBlackhole(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			var s server
			var addr string
			if db == "postgres" {
				var pg *harness.Postgres
				s, pg = startPostgres(t)
				addr = pg.Addr()
			} else {
				var m *harness.MariaDB
				s, m = startMariaDB(t)
				addr = m.Addr()
			}
			cut, p := s.through(t, addr)
			holder := newLock(t, cut.client(t), "blackhole", sqllock.WithTTL(faultTTL))
			successor := newLock(t, s.client(t), "blackhole", sqllock.WithTTL(faultTTL))
			holdertest.HolderToldFirst(t, holder, successor, func() { p.Blackhole(t) }, wantMargin)
			p.Restore(t)
		})
	}
}

// shortOutage spans one renewal (every third of the TTL less the margin,
// about 650 ms at faultTTL) with room to spare, and leaves the renewal
// retried after it about 1.1 s to be confirmed before the lease's
// deadline: at half the TTL, under a saturated machine the new
// connection and its statement did not always fit in the 0.95 s left.
const shortOutage = faultTTL * 2 / 5

// A short outage (connections refused) does not end a lease: the renewal
// is tried again until the database answers. A long one ends it at its
// deadline, before the successor is granted the lock.
func TestRenewalAcrossAnOutage(t *testing.T) {
	s, pg := startPostgres(t)
	cut, p := s.through(t, pg.Addr())
	holder := newLock(t, cut.client(t), "outage", sqllock.WithTTL(faultTTL))
	holdertest.ShortOutage(t, holder, func() { p.Cut(t) }, func() { p.Restore(t) }, shortOutage)
	successor := newLock(t, s.client(t), "outage", sqllock.WithTTL(faultTTL))
	holdertest.HolderToldFirst(t, holder, successor, func() { p.Cut(t) }, wantMargin)
	p.Restore(t)
}

// A holder paused with SIGSTOP cannot be told by any timer while it is
// stopped; its lease's deadline is still before the successor's grant, by
// the margin, and once resumed the holder sees its lease ended at once.
func TestPausedHolder(t *testing.T) {
	s, _ := startPostgres(t)
	s.client(t) // makes the table
	h := holdertest.Start(t, fmt.Sprintf("pgx|%s|paused|%s", s.dsn, faultTTL))
	h.Signal(t, syscall.SIGSTOP)
	ctx := ctxT(t)
	lease, err := newLock(t, s.client(t), "paused", sqllock.WithTTL(faultTTL)).Acquire(ctx)
	require.NoError(t, err)
	margin := time.Since(h.Deadline)
	t.Logf("the paused holder's deadline came %v before the successor's grant", margin.Round(time.Millisecond))
	assert.GreaterOrEqual(t, margin, wantMargin)
	token, _ := lease.Token()
	assert.Greater(t, token, h.Token, "the successor's token fences the paused holder out")

	h.Signal(t, syscall.SIGCONT)
	_, cause := h.Ended(t)
	assert.Contains(t, cause, recipes.ErrLockLost.Error())
	require.NoError(t, lease.Release(ctx))
}

// The database restarts while a lock is held. Down for less than the
// holder's trusted time, the holder's renewals are retried until it is
// back, and the lease goes on; down for longer, the holder is told before
// anyone else is granted the lock. Tokens keep growing across restarts.
func TestDatabaseRestart(t *testing.T) {
	s, pg := startPostgres(t)
	ctx := ctxT(t)
	l := newLock(t, s.client(t), "restart", sqllock.WithTTL(faultTTL))
	contender := newLock(t, s.client(t), "restart", sqllock.WithTTL(faultTTL))

	short, err := l.Acquire(ctx)
	require.NoError(t, err)
	first, _ := short.Token()
	pg.Stop(t)
	pg.Start(t)
	// The pool's connections died with the server: an attempt may fail on
	// one before the pool makes new ones.
	for i := 0; i < 10; i++ {
		if _, err = contender.TryAcquire(ctx); !errors.Is(err, recipes.ErrLocked) {
			continue
		}
		break
	}
	require.ErrorIs(t, err, recipes.ErrLocked)
	require.NoError(t, short.Err(), "a short restart costs the holder nothing")
	require.NoError(t, short.Release(ctx))

	long, err := l.Acquire(ctx)
	require.NoError(t, err)
	second, _ := long.Token()
	assert.Greater(t, second, first)
	told := holdertest.ToldAt(long)
	pg.Stop(t)
	select {
	case <-long.Done():
	case <-time.After(waitLimit):
		t.Fatal("the holder was not told while the database was down")
	}
	assert.ErrorIs(t, long.Err(), recipes.ErrLockLost)
	pg.Start(t)
	next, err := contender.Acquire(ctx)
	require.NoError(t, err)
	granted := time.Now()
	third, _ := next.Token()
	assert.Greater(t, third, second)
	t.Logf("told %v before the next grant", granted.Sub(told.Get()).Round(time.Millisecond))
	assert.True(t, told.Get().Before(granted))
	require.NoError(t, next.Release(ctx))
}

// The row is deleted (or the table dropped and made again) between two
// holders: the token still grows, floored by the server's clock.
func TestTokensAboveADroppedRow(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			s, _ := startPostgres(t)
			del := "DELETE FROM zkrecipes_locks WHERE name = $1"
			if db == "mariadb" {
				s, _ = startMariaDB(t)
				del = "DELETE FROM zkrecipes_locks WHERE name = ?"
			}
			ctx := ctxT(t)
			l := newLock(t, s.client(t), "dropped")
			var last int64
			for i := 0; i < 3; i++ {
				lease, err := l.Acquire(ctx)
				require.NoError(t, err)
				token, ok := lease.Token()
				require.True(t, ok)
				assert.Greater(t, token, last)
				last = token
				require.NoError(t, lease.Release(ctx))
				_, err = s.admin.ExecContext(ctx, del, "dropped")
				require.NoError(t, err)
			}
		})
	}
}

// Waiters are served in the order they came, on PostgreSQL by the queue
// in the row and on MySQL by GET_LOCK's.
func TestFIFO(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			s := startDB(t, db)
			ctx := ctxT(t)
			holder, err := newLock(t, s.client(t), "fifo").Acquire(ctx)
			require.NoError(t, err)
			const n = 5
			var mu sync.Mutex
			var order []int // by acquisition: each appends while it holds the lock
			var done sync.WaitGroup
			for i := range n {
				l := newLock(t, s.client(t), "fifo")
				done.Go(func() {
					lease, err := l.Acquire(ctx)
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					assert.NoError(t, lease.Release(ctx))
				})
				// The next waiter comes once this one waits.
				require.Eventually(t, func() bool { return s.waiting(t, "fifo") == i+1 }, waitLimit, 5*time.Millisecond)
			}
			require.NoError(t, holder.Release(ctx))
			done.Wait()
			assert.Equal(t, []int{0, 1, 2, 3, 4}, order)
		})
	}
}

// waiting is how many wait for lock name.
func (s server) waiting(t testing.TB, name string) int {
	var n int
	if s.driver == "mysql" {
		require.NoError(t, s.admin.QueryRowContext(ctxT(t),
			"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'").Scan(&n))
		return n
	}
	err := s.admin.QueryRowContext(ctxT(t), "SELECT cardinality(waiters) FROM zkrecipes_locks WHERE name = $1", name).Scan(&n)
	require.NoError(t, err)
	return n
}

// A TryAcquire whose statement lands but whose reply comes after its
// context ended (a slow network) gets no lease, and frees what its
// statement took: the lock is not left held for its TTL (an hour here).
func TestAbandonedAttemptLeavesNothing(t *testing.T) {
	s, pg := startPostgres(t)
	s.client(t) // makes the table
	slow, p := s.through(t, pg.Addr())
	l := newLock(t, slow.client(t), "abandoned", sqllock.WithTTL(time.Hour))
	other := newLock(t, s.client(t), "abandoned", sqllock.WithTTL(time.Hour))
	// The client's first use (the table check) before the network slows.
	warm, err := l.TryAcquire(ctxT(t))
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctxT(t)))

	p.LatencyToClient(t, 300*time.Millisecond)
	ctx, cancel := context.WithTimeout(ctxT(t), 100*time.Millisecond)
	defer cancel()
	_, err = l.TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.Eventually(t, func() bool {
		lease, err := other.TryAcquire(ctxT(t))
		if err != nil {
			return false
		}
		require.NoError(t, lease.Release(ctxT(t)))
		return true
	}, waitLimit, 20*time.Millisecond, "the abandoned attempt's lock was not freed")
	p.Restore(t)
	require.Eventually(t, func() bool { return len(s.leftovers(t, "abandoned")) == 0 }, waitLimit, 20*time.Millisecond)
}
