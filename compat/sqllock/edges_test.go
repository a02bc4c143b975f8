package sqllock_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// nilListener is a typed nil.
type nilListener struct{}

func (*nilListener) Listen(context.Context, string, func(), func(string)) error { return nil }

// Constructors refuse what cannot work, naming the bad value; nothing
// panics, and no I/O is done.
func TestConstructorsRefuse(t *testing.T) {
	db, err := sql.Open("pgx", "postgres://nobody@127.0.0.1:1/none") // never reached
	require.NoError(t, err)
	defer db.Close()
	var typedNil *nilListener
	for _, tc := range []struct {
		db   *sql.DB
		d    sqllock.Dialect
		opts []sqllock.ClientOption
		want string
	}{
		{nil, sqllock.PostgreSQL, nil, "nil *sql.DB"},
		{db, 0, nil, "dialect Dialect(0)"},
		{db, sqllock.PostgreSQL, []sqllock.ClientOption{nil}, "nil ClientOption"},
		{db, sqllock.PostgreSQL, []sqllock.ClientOption{sqllock.WithTable("locks; DROP TABLE x")}, `"locks; DROP TABLE x" is not an identifier`},
		{db, sqllock.PostgreSQL, []sqllock.ClientOption{sqllock.WithTable(`a"b`)}, "not an identifier"},
		{db, sqllock.PostgreSQL, []sqllock.ClientOption{sqllock.WithTable("a.b.c")}, "a name or schema.name"},
		{db, sqllock.PostgreSQL, []sqllock.ClientOption{sqllock.WithTable(strings.Repeat("x", 49))}, "1 to 48 bytes"},
		{db, sqllock.MySQL, []sqllock.ClientOption{sqllock.WithListener(typedNil)}, "WithListener is for PostgreSQL"},
		{db, sqllock.PostgreSQL, []sqllock.ClientOption{sqllock.WithListener(typedNil)}, "nil Listener"},
	} {
		_, err := sqllock.NewClient(tc.db, tc.d, tc.opts...)
		if assert.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.want) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	c, err := sqllock.NewClient(db, sqllock.PostgreSQL, sqllock.WithTable("app.locks"))
	require.NoError(t, err)
	for _, tc := range []struct {
		c    *sqllock.Client
		name string
		opts []sqllock.Option
		want string
	}{
		{nil, "x", nil, "nil Client"},
		{c, "", nil, "empty lock name"},
		{c, strings.Repeat("n", sqllock.MaxNameLen+1), nil, "lock name of 256 bytes: at most 255"},
		{c, "a\x00b", nil, "no NUL"},
		{c, "\xff", nil, "must be UTF-8"},
		{c, "x", []sqllock.Option{nil}, "nil Option"},
		{c, "x", []sqllock.Option{sqllock.WithTTL(sqllock.MinTTL - time.Millisecond)}, "TTL 99ms"},
		{c, "x", []sqllock.Option{sqllock.WithTTL(sqllock.MaxTTL + time.Second)}, "TTL 720h0m1s"},
		{c, "x", []sqllock.Option{sqllock.WithTTL(time.Second + time.Nanosecond)}, "whole microseconds"},
	} {
		_, err := sqllock.New(tc.c, tc.name, tc.opts...)
		if assert.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.want) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
	assert.Contains(t, strings.Join(c.DDL(), "\n"), `"app"."locks"`, "the table is quoted")
}

// A table that does not exist, a server that may forget commits and a
// closed *sql.DB end Acquire at once with an error that says why; the
// durability check can be skipped.
func TestAcquireRefuses(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			var s server
			careless := "ALTER DATABASE zkr SET synchronous_commit = off"
			setting := "synchronous_commit is off"
			if db == "postgres" {
				s, _ = startPostgres(t)
			} else {
				s, _ = startMariaDB(t)
				careless = "SET GLOBAL innodb_flush_log_at_trx_commit = 0"
				setting = "innodb_flush_log_at_trx_commit is 0"
			}
			ctx := ctxT(t)
			c, err := sqllock.NewClient(open(t, s.driver, s.dsn), dialectOf(s.driver), sqllock.WithTable("missing"))
			require.NoError(t, err)
			for _, try := range []bool{false, true} {
				l := newLock(t, c, "x")
				acquire := l.Acquire
				if try {
					acquire = l.TryAcquire
				}
				_, err = acquire(ctx)
				require.ErrorIs(t, err, recipes.ErrNotAcquired)
				assert.ErrorContains(t, err, "table missing (or its function) does not exist")
				assert.ErrorContains(t, err, "CreateTable")
			}

			_, err = s.admin.ExecContext(ctx, careless)
			require.NoError(t, err)
			_, err = newLock(t, s.client(t), "x").Acquire(ctx)
			require.ErrorIs(t, err, sqllock.ErrDurability)
			require.ErrorIs(t, err, recipes.ErrNotAcquired)
			assert.ErrorContains(t, err, setting)
			assert.ErrorContains(t, err, "sqllock.WithoutDurabilityCheck()")
			lease, err := newLock(t, s.client(t, sqllock.WithoutDurabilityCheck()), "x").Acquire(ctx)
			require.NoError(t, err, "the risk taken explicitly")
			require.NoError(t, lease.Release(ctx))

			closed := open(t, s.driver, s.dsn)
			cc := s.clientOn(t, closed, sqllock.WithoutDurabilityCheck())
			require.NoError(t, closed.Close())
			_, err = newLock(t, cc, "x").Acquire(ctx)
			require.ErrorIs(t, err, recipes.ErrNotAcquired)
			assert.ErrorContains(t, err, "database is closed")
		})
	}
}

// Processes that create the table at once all succeed (PostgreSQL's
// concurrent DDL on one name fails unless serialized).
func TestCreateTableAtOnce(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			s := startDB(t, db)
			ctx := ctxT(t)
			const n = 8
			errs := make(chan error, n)
			for range n {
				c, err := sqllock.NewClient(open(t, s.driver, s.dsn), dialectOf(s.driver), sqllock.WithTable("at_once"))
				require.NoError(t, err)
				go func() { errs <- c.CreateTable(ctx) }()
			}
			for range n {
				assert.NoError(t, <-errs)
			}
		})
	}
}

// A PostgreSQL table made by an earlier version (no waiter_ttl) is
// refused with an error that says to update it; CreateTable updates it,
// and a queue an earlier version left (entries with no TTL) still hands
// the lock on.
func TestEarlierTable(t *testing.T) {
	s, _ := startPostgres(t)
	ctx := ctxT(t)
	c := s.client(t)
	_, err := s.admin.ExecContext(ctx, "ALTER TABLE zkrecipes_locks DROP COLUMN waiter_ttl")
	require.NoError(t, err)
	fresh, err := sqllock.NewClient(open(t, s.driver, s.dsn), sqllock.PostgreSQL) // no CreateTable
	require.NoError(t, err)
	_, err = newLock(t, fresh, "earlier").Acquire(ctx)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	assert.ErrorContains(t, err, "table zkrecipes_locks was made by an earlier version of sqllock (it has no column waiter_ttl)")
	assert.ErrorContains(t, err, "Client.CreateTable")

	require.NoError(t, c.CreateTable(ctx))
	holder, err := newLock(t, c, "earlier").Acquire(ctx)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		lease, err := newLock(t, s.client(t), "earlier").Acquire(ctx)
		if err == nil {
			err = lease.Release(ctx)
		}
		got <- err
	}()
	require.Eventually(t, func() bool { return s.waiting(t, "earlier") == 1 }, waitLimit, 5*time.Millisecond)
	_, err = s.admin.ExecContext(ctx, "UPDATE zkrecipes_locks SET waiter_ttl = '{}' WHERE name = 'earlier'")
	require.NoError(t, err)
	require.NoError(t, holder.Release(ctx))
	require.NoError(t, <-got)
	require.Eventually(t, func() bool { return len(s.leftovers(t, "earlier")) == 0 }, waitLimit, 20*time.Millisecond)
}
