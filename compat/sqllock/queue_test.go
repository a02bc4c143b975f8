package sqllock_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The PostgreSQL function's answers to its callers, called as a client
// calls it (op, name, me, TTL µs, queue entry µs, stamp): the queue's
// head is told 0 and a waiter behind a live one 2 (it then refreshes
// its entry rather than wake at the holder's expiry); a waiter behind
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
