package sqllock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// The PostgreSQL function's answers to its callers, called as a client
// calls it (op, name, me, TTL µs, queue entry µs, stamp): the queue's
// head is told 0, a waiter behind one live one 2 and behind two 3 (it
// then refreshes its entry rather than wake at the holder's expiry, the
// latter less often); a waiter behind
// entries that expired is the head. A lock that is free by its expiry is
// not taken through its one-UPDATE path by a caller outside a queue
// that has a live waiter: the head is handed it.
func TestPostgresQueueAnswers(t *testing.T) {
	s, _ := startPostgres(t)
	s.client(t) // makes the table and its function
	ctx := ctxT(t)
	call := func(op, me string, ttlUS, waitUS int64) (code int, n int64) {
		t.Helper()
		require.NoError(t, s.admin.QueryRowContext(ctx, `SELECT code, n FROM zkrecipes_locks_op($1, 'q', $2, $3, $4, 0)`,
			op, me, ttlUS, waitUS).Scan(&code, &n))
		return code, n
	}
	const long = int64(60_000_000) // a minute, in µs
	code, token := call("acquire", "/h", long, long)
	require.Equal(t, 1, code, "free: taken")

	code, _ = call("queue", "/a", long, long)
	require.Equal(t, 0, code, "the head")
	code, _ = call("queue", "/b", long, long)
	require.Equal(t, 2, code, "behind a live waiter")
	code, _ = call("queue", "/b", long, long)
	require.Equal(t, 2, code, "refreshed, still behind")
	code, _ = call("queue", "/f", long, long)
	require.Equal(t, 3, code, "behind two live waiters")
	entry := func(me string) (us int64) {
		t.Helper()
		require.NoError(t, s.admin.QueryRowContext(ctx, `SELECT (extract(epoch FROM waiter_expiry[array_position(waiters, $1)] - clock_timestamp()) * 1000000)::bigint
  FROM zkrecipes_locks WHERE name = 'q'`, me).Scan(&us))
		return us
	}
	require.LessOrEqual(t, entry("/b"), long, "b's entry lives as long as it asked")
	require.Greater(t, entry("/f"), long, "f's entry lives twice as long (farTTL)")
	require.LessOrEqual(t, entry("/f"), 2*long)
	code, _ = call("release", "/f", long, long) // f gives up
	require.Equal(t, 0, code, "f did not hold it")
	code, _ = call("release", "/a", long, long) // a gives up
	require.Equal(t, 0, code, "a did not hold it")
	code, _ = call("queue", "/b", long, long)
	require.Equal(t, 0, code, "the head once a left")

	code, _ = call("queue", "/c", long, 1) // an entry that lives 1 µs
	require.Equal(t, 2, code)
	code, _ = call("queue", "/d", long, long)
	require.Equal(t, 2, code, "behind b")
	code, _ = call("release", "/b", long, long)
	require.Equal(t, 0, code)
	code, _ = call("queue", "/d", long, long)
	require.Equal(t, 0, code, "behind c's expired entry only: the head")

	// The holder's lock now ends in 1 µs: a caller that never queued
	// finds it expired, and the head, d, is handed it.
	code, n := call("acquire", "/h", 1, long)
	require.Equal(t, 1, code)
	require.Greater(t, n, token)
	code, _ = call("acquire", "/e", long, long)
	require.Equal(t, 0, code, "the queue is not jumped")
	var holder string
	require.NoError(t, s.admin.QueryRowContext(ctx, `SELECT holder FROM zkrecipes_locks WHERE name = 'q'`).Scan(&holder))
	require.Equal(t, "/d", holder, "handed to the head")

	// d lets it go with no one left: the one-UPDATE path takes it for e.
	code, _ = call("release", "/d", long, long)
	require.Equal(t, 1, code)
	code, n2 := call("acquire", "/e", long, long)
	require.Equal(t, 1, code)
	require.Greater(t, n2, n, "the token goes on")
}

// A waiter with two live waiters ahead queues with an entry that lives
// farTTL (six TTLs) and refreshes it every five: when the two ahead
// leave and the holder has crashed, it still takes the lock, at its
// refresh, with a token above the crashed holder's.
func TestFarWaiterTakesOver(t *testing.T) {
	s, _ := startPostgres(t)
	const lockTTL = 200 * time.Millisecond
	l := newLock(t, s.client(t), "far", sqllock.WithTTL(lockTTL))
	ctx := ctxT(t)
	call := func(op, me string, ttlUS int64) (code int, n int64) {
		t.Helper()
		require.NoError(t, s.admin.QueryRowContext(ctx, `SELECT code, n FROM zkrecipes_locks_op($1, 'far', $2, $3, 60000000, 0)`,
			op, me, ttlUS).Scan(&code, &n))
		return code, n
	}
	code, token := call("acquire", "/crashed", 1_000_000) // a holder that never renews: a second
	require.Equal(t, 1, code)
	call("queue", "/a", 60_000_000)
	call("queue", "/b", 60_000_000)

	got := make(chan error, 1)
	var lease recipes.Lease
	go func() {
		var err error
		lease, err = l.Acquire(ctx)
		got <- err
	}()
	require.Eventually(t, func() bool { return s.waiting(t, "far") == 3 }, waitLimit, 5*time.Millisecond)
	var entryUS int64
	require.NoError(t, s.admin.QueryRowContext(ctx, `SELECT (extract(epoch FROM waiter_expiry[3] - clock_timestamp()) * 1000000)::bigint
  FROM zkrecipes_locks WHERE name = 'far'`).Scan(&entryUS))
	require.Greater(t, entryUS, (3 * lockTTL).Microseconds(), "the entry of a waiter two behind lives farTTL")

	call("release", "/a", 1) // both ahead leave
	call("release", "/b", 1)
	require.NoError(t, <-got)
	require.NoError(t, lease.Context().Err())
	tok, ok := lease.Token()
	require.True(t, ok)
	require.Greater(t, tok, token, "above the crashed holder's token")
	require.NoError(t, lease.Release(ctx))
	require.Empty(t, s.leftovers(t, "far"))
}
