package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/compat/sqllock/pgxlistener"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	holdertest.RunIfChild(holderLock, func(l recipes.Locker, le recipes.Lease) time.Time {
		return ttl.Deadline(le.Context(), l)
	})
	goleak.VerifyTestMain(m)
}

// holderLock is the lock a holder child process takes:
// "driver|dsn|name|ttl".
func holderLock(spec string) (recipes.Locker, error) {
	f := strings.Split(spec, "|")
	d, err := time.ParseDuration(f[3])
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(f[0], f[1])
	if err != nil {
		return nil, err
	}
	c, err := sqllock.NewClient(db, dialectOf(f[0]))
	if err != nil {
		return nil, err
	}
	return sqllock.New(c, f[2], sqllock.WithTTL(d))
}

func dialectOf(driver string) sqllock.Dialect {
	if driver == "mysql" {
		return sqllock.MySQL
	}
	return sqllock.PostgreSQL
}

// waitLimit bounds every wait in these tests; nothing asserts on durations.
const waitLimit = 60 * time.Second

// testTTL is the TTL of the tests' locks unless they set one.
const testTTL = 2 * time.Second

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// server is a database of a test: its driver, a DSN for clients and one
// for the listener (PostgreSQL's LISTEN goes to the server itself, not
// through a transaction pooler).
type server struct {
	driver, dsn, listenDSN string
	admin                  *sql.DB
}

func startPostgres(t testing.TB) (server, *harness.Postgres) {
	pg := harness.StartPostgres(t)
	s := server{driver: "pgx", dsn: pg.DSN(), listenDSN: pg.DSN()}
	s.admin = open(t, s.driver, s.dsn)
	return s, pg
}

// startBouncer is a PostgreSQL reached through PgBouncer in transaction
// mode (pgx then sends no named prepared statements).
func startBouncer(t testing.TB) (server, *harness.Postgres) {
	pg := harness.StartPostgres(t)
	b := harness.StartPgBouncer(t, pg)
	dsn := strings.Replace(pg.DSN(), pg.Addr(), b.Addr(), 1) + "&default_query_exec_mode=simple_protocol"
	s := server{driver: "pgx", dsn: dsn, listenDSN: pg.DSN()}
	s.admin = open(t, s.driver, s.dsn)
	return s, pg
}

func startMariaDB(t testing.TB) (server, *harness.MariaDB) {
	m := harness.StartMariaDB(t)
	s := server{driver: "mysql", dsn: m.DSN()}
	s.admin = open(t, s.driver, s.dsn)
	return s, m
}

// startDB starts the database db names: "postgres" or "mariadb".
func startDB(t testing.TB, db string) server {
	if db == "postgres" {
		s, _ := startPostgres(t)
		return s
	}
	s, _ := startMariaDB(t)
	return s
}

func open(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// client is a lock client of its own (its own pool and listener: a
// contender of its own), closed at t's cleanup; the table is made.
func (s server) client(t testing.TB, opts ...sqllock.ClientOption) *sqllock.Client {
	t.Helper()
	return s.clientOn(t, open(t, s.driver, s.dsn), opts...)
}

func (s server) clientOn(t testing.TB, db *sql.DB, opts ...sqllock.ClientOption) *sqllock.Client {
	t.Helper()
	if s.listenDSN != "" {
		opts = append([]sqllock.ClientOption{sqllock.WithListener(pgxListener(t, s.listenDSN))}, opts...)
	}
	c, err := sqllock.NewClient(db, dialectOf(s.driver), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.CreateTable(ctxT(t)))
	return c
}

func newLock(t testing.TB, c *sqllock.Client, name string, opts ...sqllock.Option) *sqllock.Lock {
	t.Helper()
	l, err := sqllock.New(c, name, append([]sqllock.Option{sqllock.WithTTL(testTTL)}, opts...)...)
	require.NoError(t, err)
	return l
}

// leftovers is what a lock left in the table (a holder, waiters) and, on
// MySQL, in the server (its companion held, or waited for).
func (s server) leftovers(t testing.TB, name string) []string {
	t.Helper()
	ctx := ctxT(t)
	var left []string
	var holder sql.NullString
	if s.driver == "mysql" {
		err := s.admin.QueryRowContext(ctx, "SELECT holder FROM zkrecipes_locks WHERE name = ?", name).Scan(&holder)
		if err != sql.ErrNoRows {
			require.NoError(t, err)
		}
		var used, head, waiting int
		require.NoError(t, s.admin.QueryRowContext(ctx,
			"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'").Scan(&waiting))
		require.NoError(t, s.admin.QueryRowContext(ctx,
			"SELECT IS_USED_LOCK(?) IS NOT NULL, IS_USED_LOCK(?) IS NOT NULL",
			sqllock.CompanionName(name), sqllock.HeadName(name)).Scan(&used, &head))
		if waiting > 0 {
			left = append(left, fmt.Sprintf("%d sessions waiting in GET_LOCK", waiting))
		}
		if used > 0 {
			left = append(left, "its GET_LOCK name held")
		}
		if head > 0 {
			left = append(left, "its queue head's GET_LOCK name held")
		}
	} else {
		var waiters int
		err := s.admin.QueryRowContext(ctx, "SELECT holder, cardinality(waiters) FROM zkrecipes_locks WHERE name = $1", name).Scan(&holder, &waiters)
		if err != sql.ErrNoRows {
			require.NoError(t, err)
		}
		if waiters > 0 {
			left = append(left, fmt.Sprintf("%d waiters", waiters))
		}
	}
	if holder.Valid {
		left = append(left, "holder "+holder.String)
	}
	return left
}

// steal gives the lock's row to someone else, as a bug or an operator
// would: its holder's next renewal finds it someone else's.
func (s server) steal(t testing.TB, name string) {
	t.Helper()
	q := "UPDATE zkrecipes_locks SET holder = 'thief', expires_at = '1970-01-01 00:00:01' WHERE name = ?"
	if s.driver != "mysql" {
		q = "UPDATE zkrecipes_locks SET holder = 'thief', expires_at = '-infinity' WHERE name = $1"
	}
	res, err := s.admin.ExecContext(ctxT(t), q, name)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

// pgxListener is the listener of zklock: compat/sqllock/pgxlistener.
func pgxListener(t testing.TB, dsn string) sqllock.Listener {
	t.Helper()
	l, err := pgxlistener.Parse(dsn)
	require.NoError(t, err)
	return l
}

// refusedAtOnce checks that Acquire and TryAcquire of l fail at once (not
// waiting for their context) with an error that trying again cannot mend
// and that says want; it returns their errors.
func refusedAtOnce(t *testing.T, l *sqllock.Lock, want string) []error {
	t.Helper()
	ctx := ctxT(t)
	var errs []error
	for _, acquire := range []func(context.Context) (recipes.Lease, error){l.Acquire, l.TryAcquire} {
		lease, err := acquire(ctx)
		require.Nil(t, lease)
		require.Error(t, err)
		require.NoError(t, ctx.Err(), "the acquisition waited for its context instead of failing")
		require.False(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
		require.ErrorIs(t, err, recipes.ErrNotAcquired)
		require.ErrorIs(t, err, ttl.ErrPermanent)
		require.ErrorIs(t, err, recipes.ErrRefused)
		require.ErrorContains(t, err, want)
		errs = append(errs, err)
	}
	return errs
}
