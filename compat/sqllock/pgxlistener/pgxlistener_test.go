package pgxlistener_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/compat/sqllock/pgxlistener"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A waiter on a Client with the listener is handed the lock by the
// holder's release and told at once: it holds the lock well before the
// holder's TTL would have woken it (nothing here asserts on time: the TTL
// is an hour, and the test's deadline a minute).
func TestWaiterIsToldOfTheRelease(t *testing.T) {
	pg := harness.StartPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lock := func() *sqllock.Lock {
		db, err := sql.Open("pgx", pg.DSN())
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		l, err := pgxlistener.Parse(pg.DSN())
		require.NoError(t, err)
		c, err := sqllock.NewClient(db, sqllock.PostgreSQL, sqllock.WithListener(l))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		require.NoError(t, c.CreateTable(ctx))
		lk, err := sqllock.New(c, "told", sqllock.WithTTL(time.Hour))
		require.NoError(t, err)
		return lk
	}
	holder, waiter := lock(), lock()
	lease, err := holder.Acquire(ctx)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		l, err := waiter.Acquire(ctx)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // the waiter queues (if not, it takes the lock after the release: the test still passes)
	require.NoError(t, lease.Release(ctx))
	require.NoError(t, <-got)
}

// Bad input is an error that says what was wrong, never a panic later in
// the Client's listening goroutine.
func TestBadInput(t *testing.T) {
	_, err := pgxlistener.Parse("not a dsn ::")
	require.ErrorIs(t, err, recipes.ErrInvalidArgument)
	require.ErrorContains(t, err, "pgxlistener")
	_, err = pgxlistener.New(nil)
	require.ErrorIs(t, err, recipes.ErrInvalidArgument)
	require.ErrorContains(t, err, "nil *pgx.ConnConfig")
}
