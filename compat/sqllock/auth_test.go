package sqllock_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// authPassword is the password of the test's server: a value no message
// may show.
const authPassword = "s3cret-Pg-pw"

// TestContractPostgresPassword: the contract over a server that asks
// every TCP connection for a password (scram-sha-256), the lock's pool
// and its listener both authenticated.
func TestContractPostgresPassword(t *testing.T) {
	pg := harness.StartPostgresSecure(t, authPassword)
	s := server{driver: "pgx", dsn: pg.PasswordDSN(), listenDSN: pg.PasswordDSN()}
	s.admin = open(t, s.driver, s.dsn)
	contract(t, s)
}

// TestWrongPassword: a pool with a wrong password fails the first
// acquisition at once (SQLSTATE 28P01 cannot be mended by trying again),
// with an error that says so and does not show the password.
func TestWrongPassword(t *testing.T) {
	pg := harness.StartPostgresSecure(t, authPassword)
	wrong := strings.Replace(pg.PasswordDSN(), authPassword, "not-"+authPassword, 1)
	require.NotEqual(t, pg.PasswordDSN(), wrong)
	c, err := sqllock.NewClient(open(t, "pgx", wrong), sqllock.PostgreSQL)
	require.NoError(t, err) // no I/O yet
	t.Cleanup(func() { _ = c.Close() })
	l := newLock(t, c, "auth-wrong")

	ctx := ctxT(t)
	for _, acquire := range []func(context.Context) (recipes.Lease, error){l.Acquire, l.TryAcquire} {
		lease, err := acquire(ctx)
		require.Nil(t, lease)
		require.Error(t, err)
		require.NoError(t, ctx.Err(), "the acquisition waited for its context instead of failing")
		require.ErrorIs(t, err, recipes.ErrNotAcquired)
		require.ErrorIs(t, err, ttl.ErrPermanent)
		require.False(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
		require.Contains(t, err.Error(), "28P01")
		require.NotContains(t, err.Error(), authPassword)
	}
}
