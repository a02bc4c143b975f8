package sqllock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// rows is how many rows lock name has in the PostgreSQL table: 0 when it
// is free.
func (s server) rows(t testing.TB, name string) int {
	t.Helper()
	var n int
	require.NoError(t, s.admin.QueryRowContext(ctxT(t), "SELECT count(*) FROM zkrecipes_locks WHERE name = $1", name).Scan(&n))
	return n
}

// blocked waits until a statement of another session waits for a lock
// held by the test's transaction (a row lock, or a concurrent insert of
// one key): the race the test forces is then under way.
func (s server) blocked(t testing.TB, like string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, s.admin.QueryRowContext(ctxT(t),
			"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1", like).Scan(&n))
		return n > 0
	}, waitLimit, 5*time.Millisecond)
}

// acquireLater acquires l in a goroutine of its own; the lease comes on
// the channel (nil when it failed, which fails the test).
func acquireLater(ctx context.Context, t *testing.T, l *sqllock.Lock) <-chan recipes.Lease {
	got := make(chan recipes.Lease, 1)
	go func() {
		lease, err := l.Acquire(ctx)
		assert.NoError(t, err)
		got <- lease
	}()
	return got
}

// A free PostgreSQL lock is no row: a release with nobody waiting
// deletes it, by the plain DELETE (uncontended) or by the function (after
// a hand-off, and after a waiter gave up).
func TestFreeLockIsNoRow(t *testing.T) {
	s, _ := startPostgres(t)
	ctx := ctxT(t)
	l := newLock(t, s.client(t), "norow")
	lease, err := l.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, s.rows(t, "norow"))
	require.NoError(t, lease.Release(ctx))
	require.Equal(t, 0, s.rows(t, "norow"), "an uncontended release deletes the row")

	holder, err := l.Acquire(ctx)
	require.NoError(t, err)
	next := newLock(t, s.client(t), "norow")
	got := acquireLater(ctx, t, next)
	require.Eventually(t, func() bool { return s.waiting(t, "norow") == 1 }, waitLimit, 5*time.Millisecond)
	require.NoError(t, holder.Release(ctx))
	handed := <-got
	require.NotNil(t, handed)
	require.Equal(t, 1, s.rows(t, "norow"), "handed on: the row stays")
	require.NoError(t, handed.Release(ctx))
	require.Equal(t, 0, s.rows(t, "norow"), "the waiter's release, through the function, deletes the row")

	// A waiter that gives up after the holder let go leaves no row either.
	holder, err = l.Acquire(ctx)
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := next.Acquire(wctx)
		gaveUp <- err
	}()
	require.Eventually(t, func() bool { return s.waiting(t, "norow") == 1 }, waitLimit, 5*time.Millisecond)
	cancel()
	require.ErrorIs(t, <-gaveUp, recipes.ErrNotAcquired)
	require.NoError(t, holder.Release(ctx))
	require.Equal(t, 0, s.rows(t, "norow"))

	// A release that finds only waiters whose entries expired drops them
	// and deletes the row (the function's general path).
	holder, err = newLock(t, s.client(t), "norow").Acquire(ctx)
	require.NoError(t, err)
	var code int
	require.NoError(t, s.admin.QueryRowContext(ctx, `SELECT code FROM zkrecipes_locks_op('queue', 'norow', '/gone', 60000000, 1, 0)`).Scan(&code))
	require.Equal(t, 0, code)
	require.NoError(t, holder.Release(ctx))
	require.Equal(t, 0, s.rows(t, "norow"), "the expired waiter is dropped, and the row with it")

	// And the plain path again, for a Lock that saw waiters.
	lease, err = next.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))
	require.Equal(t, 0, s.rows(t, "norow"))
}

// A release's plain DELETE that races a waiter's queueing: the function
// call that queues holds the row's lock, the DELETE waits for it and
// PostgreSQL evaluates its WHERE again on the new row, which has a
// waiter; nothing is deleted, and the release hands the lock to the
// waiter through the function.
func TestReleaseRacesAQueueing(t *testing.T) {
	s, _ := startPostgres(t)
	ctx := ctxT(t)
	holder, err := newLock(t, s.client(t), "race").Acquire(ctx)
	require.NoError(t, err)

	tx, err := s.admin.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	var code int
	require.NoError(t, tx.QueryRowContext(ctx, `SELECT code FROM zkrecipes_locks_op('queue', 'race', '/w', 60000000, 60000000, 0)`).Scan(&code))
	require.Equal(t, 0, code, "queued, the head")

	released := make(chan error, 1)
	go func() { released <- holder.Release(ctx) }()
	s.blocked(t, "DELETE FROM%")
	require.NoError(t, tx.Commit())
	require.NoError(t, <-released)
	var who string
	require.NoError(t, s.admin.QueryRowContext(ctx, "SELECT holder FROM zkrecipes_locks WHERE name = 'race'").Scan(&who))
	require.Equal(t, "/w", who, "handed to the waiter that queued during the release")
	_, err = s.admin.ExecContext(ctx, "DELETE FROM zkrecipes_locks WHERE name = 'race'")
	require.NoError(t, err)
}

// A plain INSERT (TryAcquire) that races the function's own insert of a
// missing row (a call in a transaction that has not committed yet): the
// INSERT waits for that transaction, and does nothing if it commits (the
// function then finds the row held: ErrLocked), or inserts if it rolls
// back.
func TestInsertRacesTheFunctionsInsert(t *testing.T) {
	s, _ := startPostgres(t)
	ctx := ctxT(t)
	c := s.client(t)
	warm, err := newLock(t, c, "insert").TryAcquire(ctx) // the Client's first use (its check) before the race
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))

	for _, commit := range []bool{true, false} {
		l := newLock(t, c, "insert") // one that has not seen the lock held: it sends the INSERT
		tx, err := s.admin.BeginTx(ctx, nil)
		require.NoError(t, err)
		var code int
		require.NoError(t, tx.QueryRowContext(ctx, `SELECT code FROM zkrecipes_locks_op('acquire', 'insert', '/f', 60000000, 60000000, 0)`).Scan(&code))
		require.Equal(t, 1, code, "the function inserts the missing row, held")
		got := make(chan error, 1)
		var lease recipes.Lease
		go func() {
			var err error
			lease, err = l.TryAcquire(ctx)
			got <- err
		}()
		s.blocked(t, "WITH l AS MATERIALIZED%INSERT INTO%")
		if commit {
			require.NoError(t, tx.Commit())
			require.ErrorIs(t, <-got, recipes.ErrLocked)
			_, err = s.admin.ExecContext(ctx, "DELETE FROM zkrecipes_locks WHERE name = 'insert'")
			require.NoError(t, err)
			continue
		}
		require.NoError(t, tx.Rollback())
		require.NoError(t, <-got)
		require.NoError(t, lease.Release(ctx))
		require.Equal(t, 0, s.rows(t, "insert"))
	}
}

// The function's insert of a missing row that races a plain INSERT in a
// transaction that has not committed yet: it waits for it, and queues
// behind the holder if it commits, or takes the lock if it rolls back.
func TestFunctionsInsertRacesAnInsert(t *testing.T) {
	s, _ := startPostgres(t)
	ctx := ctxT(t)
	s.client(t) // makes the table and its function
	for _, commit := range []bool{true, false} {
		tx, err := s.admin.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, `INSERT INTO zkrecipes_locks (name, holder, token, expires_at)
  VALUES ('fin', '/x', 1, clock_timestamp() + interval '1 minute')`)
		require.NoError(t, err)
		type answer struct {
			code int
			err  error
		}
		got := make(chan answer, 1)
		go func() {
			var a answer
			a.err = s.admin.QueryRowContext(ctx, `SELECT code FROM zkrecipes_locks_op('queue', 'fin', '/q', 60000000, 60000000, 0)`).Scan(&a.code)
			got <- a
		}()
		s.blocked(t, "SELECT code FROM zkrecipes_locks_op%")
		if commit {
			require.NoError(t, tx.Commit())
			a := <-got
			require.NoError(t, a.err)
			require.Equal(t, 0, a.code, "queued behind the insert's holder")
			require.Equal(t, 1, s.waiting(t, "fin"))
			_, err = s.admin.ExecContext(ctx, "DELETE FROM zkrecipes_locks WHERE name = 'fin'")
			require.NoError(t, err)
			continue
		}
		require.NoError(t, tx.Rollback())
		a := <-got
		require.NoError(t, a.err)
		require.Equal(t, 1, a.code, "taken: the row went with the rollback")
	}
}

// A failover to a standby that lacks the latest grants of a lock
// (asynchronous replication) brings back a table without them: here no
// row, and nothing else in the database that knows their tokens. The
// next grant's token must still be above theirs, which were below the
// clock now: it is not below the server's clock, whichever statement
// grants it (the plain INSERT, the function's insert of a missing row, a
// hand-off, a grant on the row).
func TestTokensAfterAFailover(t *testing.T) {
	s, _ := startPostgres(t)
	ctx := ctxT(t)
	c := s.client(t)
	clock := func() int64 {
		var us int64
		require.NoError(t, s.admin.QueryRowContext(ctx, `SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint`).Scan(&us))
		return us
	}
	now := clock()
	now = s.takeAbove(t, newLock(t, c, "failover"), now-1) // the plain INSERT

	now = max(now, clock())
	var code int
	var token int64
	require.NoError(t, s.admin.QueryRowContext(ctx, `SELECT code, n FROM zkrecipes_locks_op('acquire', 'failover', '/f', 60000000, 60000000, 0)`).Scan(&code, &token))
	require.Equal(t, 1, code)
	require.GreaterOrEqual(t, token, now, "the function's insert of a missing row")

	next := acquireLater(ctx, t, newLock(t, c, "failover"))
	require.Eventually(t, func() bool { return s.waiting(t, "failover") == 1 }, waitLimit, 5*time.Millisecond)
	now = clock()
	fnRelease(ctx, t, s.admin, "failover", "/f")
	handed := <-next
	require.NotNil(t, handed)
	token, ok := handed.Token()
	require.True(t, ok)
	require.GreaterOrEqual(t, token, now, "a hand-off")
	require.NoError(t, handed.Release(ctx))

	// A grant on a row that is kept (here expired, its token as old as a
	// standby's copy could be): not below the clock.
	require.NoError(t, s.admin.QueryRowContext(ctx, `SELECT code FROM zkrecipes_locks_op('acquire', 'failover', '/g', 60000000, 60000000, 0)`).Scan(&code))
	require.Equal(t, 1, code)
	_, err := s.admin.ExecContext(ctx, `UPDATE zkrecipes_locks SET token = 1, expires_at = clock_timestamp() WHERE name = 'failover'`)
	require.NoError(t, err)
	now = clock()
	require.NoError(t, s.admin.QueryRowContext(ctx, `SELECT code, n FROM zkrecipes_locks_op('acquire', 'failover', '/h', 60000000, 60000000, 0)`).Scan(&code, &token))
	require.Equal(t, 1, code)
	require.GreaterOrEqual(t, token, now, "a grant on an expired row")
	fnRelease(ctx, t, s.admin, "failover", "/h")
	require.Equal(t, 0, s.rows(t, "failover"))
}

// takeAbove acquires l, checks that its token is above last, releases it
// and checks that it left no row; it returns the token.
func (s server) takeAbove(t *testing.T, l *sqllock.Lock, last int64) int64 {
	t.Helper()
	ctx := ctxT(t)
	lease, err := l.Acquire(ctx)
	require.NoError(t, err)
	token, ok := lease.Token()
	require.True(t, ok)
	require.Greater(t, token, last, "%s: its token is above the last", l.Name())
	require.NoError(t, lease.Release(ctx))
	require.Equal(t, 0, s.rows(t, l.Name()), "%s: the free row is deleted", l.Name())
	return token
}

// A table made by main, its free locks' rows kept, is used as it is:
// the plain INSERT finds such a row and the function takes it (a token
// above the row's), and the row goes at its release.
func TestTableOfMain(t *testing.T) {
	s, _ := startPostgres(t)
	ctx := ctxT(t)
	c := s.client(t)
	var old int64
	require.NoError(t, s.admin.QueryRowContext(ctx, `INSERT INTO zkrecipes_locks (name, token)
  VALUES ('kept', (extract(epoch FROM clock_timestamp()) * 1000000)::bigint) RETURNING token`).Scan(&old))
	for _, name := range []string{"kept", "kept", "new"} {
		old = s.takeAbove(t, newLock(t, c, name), old)
	}
}

// A table in a schema of its own, its name in mixed case, quoted
// wherever the statements name it (the plain INSERT and DELETE, the
// function).
func TestSchemaTable(t *testing.T) {
	s, _ := startPostgres(t)
	ctx := ctxT(t)
	_, err := s.admin.ExecContext(ctx, `CREATE SCHEMA app`)
	require.NoError(t, err)
	c := s.client(t, sqllock.WithTable("app.Locks"))
	require.NoError(t, c.CreateTable(ctx), "again")
	l := newLock(t, c, "schema")
	lease, err := l.Acquire(ctx)
	require.NoError(t, err)
	first, ok := lease.Token()
	require.True(t, ok)
	next := acquireLater(ctx, t, newLock(t, s.client(t, sqllock.WithTable("app.Locks")), "schema"))
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, s.admin.QueryRowContext(ctx, `SELECT coalesce(sum(cardinality(waiters)), 0) FROM app."Locks"`).Scan(&n))
		return n == 1
	}, waitLimit, 5*time.Millisecond)
	require.NoError(t, lease.Release(ctx))
	handed := <-next
	require.NotNil(t, handed)
	token, ok := handed.Token()
	require.True(t, ok)
	require.Greater(t, token, first)
	require.NoError(t, handed.Release(ctx))
	var rows int64
	require.NoError(t, s.admin.QueryRowContext(ctx, `SELECT count(*) FROM app."Locks"`).Scan(&rows))
	require.Zero(t, rows)
}

// A role with the privileges DDL's doc names, and no more, takes, hands
// on and lets go the lock: the plain INSERT and DELETE and the function.
func TestLeastPrivileges(t *testing.T) {
	s, _ := startPostgres(t)
	ctx := ctxT(t)
	s.client(t) // makes the table, as its owner
	_, err := s.admin.ExecContext(ctx, `CREATE ROLE app LOGIN;
GRANT SELECT, INSERT, UPDATE, DELETE ON zkrecipes_locks TO app`)
	require.NoError(t, err)
	app := s
	app.dsn = strings.Replace(s.dsn, "//"+harness.PostgresUser+"@", "//app@", 1)
	app.listenDSN = app.dsn
	require.NotEqual(t, s.dsn, app.dsn)
	c, err := sqllock.NewClient(open(t, app.driver, app.dsn), sqllock.PostgreSQL, sqllock.WithListener(pgxListener(t, app.dsn)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	other, err := sqllock.NewClient(open(t, app.driver, app.dsn), sqllock.PostgreSQL, sqllock.WithListener(pgxListener(t, app.dsn)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })

	holder, err := newLock(t, c, "least").Acquire(ctx)
	require.NoError(t, err)
	next := acquireLater(ctx, t, newLock(t, other, "least"))
	require.Eventually(t, func() bool { return s.waiting(t, "least") == 1 }, waitLimit, 5*time.Millisecond)
	require.NoError(t, holder.Release(ctx))
	handed := <-next
	require.NotNil(t, handed)
	require.NoError(t, handed.Release(ctx))
	require.Equal(t, 0, s.rows(t, "least"))
}
