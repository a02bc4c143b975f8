package sqllock_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowApp is the application_name of the connections whose inserts into
// the lock table the gate of TestTokenRacesAGrant holds.
const slowApp = "zkr_slow"

// gate holds, until the function it returns is called, every insert into
// the PostgreSQL lock table by a connection named slowApp in a BEFORE
// INSERT trigger: after the statement computed the row's values (its
// token among them), before it looks for a conflict. The trigger is
// dropped at t's end.
func (s server) gate(t *testing.T) (open func()) {
	t.Helper()
	ctx := ctxT(t)
	_, err := s.admin.ExecContext(ctx, `CREATE FUNCTION zkr_gate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('application_name') = '`+slowApp+`' THEN
    PERFORM pg_advisory_lock_shared(7, 7);
    PERFORM pg_advisory_unlock_shared(7, 7);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER zkr_gate BEFORE INSERT ON zkrecipes_locks FOR EACH ROW EXECUTE FUNCTION zkr_gate()`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := s.admin.ExecContext(context.Background(), `DROP TRIGGER zkr_gate ON zkrecipes_locks; DROP FUNCTION zkr_gate()`)
		assert.NoError(t, err)
	})
	conn, err := s.admin.Conn(ctx) // the gate's session lock lives on it
	require.NoError(t, err)
	_, err = conn.ExecContext(ctx, `SELECT pg_advisory_lock(7, 7)`)
	require.NoError(t, err)
	return func() {
		_, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock(7, 7)`)
		assert.NoError(t, err)
		assert.NoError(t, conn.Close())
	}
}

// waitingIn is how many statements of connections named (or, with
// named false, not named) slowApp wait for a lock.
func (s server) waitingIn(t testing.TB, named bool) int {
	t.Helper()
	var n int
	require.NoError(t, s.admin.QueryRowContext(ctxT(t), `SELECT count(*) FROM pg_stat_activity
  WHERE wait_event_type = 'Lock' AND (application_name = $1) = $2 AND query NOT LIKE '%pg_stat_activity%'`, slowApp, named).Scan(&n))
	return n
}

// A grant of a lock with no row whose statement computed its token, and
// was then held (here by the gate, as a descheduled backend would be),
// while another client took the lock and let it go, must not hold it with
// a token below that client's: the later of the two grants has the
// higher token. B takes the lock by the plain INSERT (a Lock) or by the
// function's insert of a missing row (the function called directly).
func TestTokenRacesAGrant(t *testing.T) {
	for _, by := range []string{"insert", "function"} {
		t.Run(by, func(t *testing.T) {
			s, _ := startPostgres(t)
			ctx := ctxT(t)
			a := newLock(t, s.client(t), "race")
			slow := open(t, s.driver, s.dsn+"&application_name="+slowApp)
			b := newLock(t, s.clientOn(t, slow), "race")
			open := s.gate(t)

			type grant struct {
				token   int64
				release func()
			}
			gotB := make(chan grant, 1)
			go func() {
				var g grant
				if by == "insert" {
					lease, err := b.Acquire(ctx)
					if assert.NoError(t, err) {
						g.token, _ = lease.Token()
						g.release = func() { assert.NoError(t, lease.Release(ctx)) }
					}
				} else {
					var code int
					assert.NoError(t, slow.QueryRowContext(ctx, `SELECT code, n FROM zkrecipes_locks_op('acquire', 'race', '/b', 60000000, 60000000, 0)`).Scan(&code, &g.token))
					assert.Equal(t, 1, code)
					g.release = func() { fnRelease(ctx, t, slow, "race", "/b") }
				}
				gotB <- g
			}()
			require.Eventually(t, func() bool { return s.waitingIn(t, true) == 1 }, waitLimit, 5*time.Millisecond, "B's insert is held by the gate")

			gotA := make(chan int64, 1)
			go func() {
				lease, err := a.Acquire(ctx)
				if assert.NoError(t, err) {
					token, _ := lease.Token()
					assert.NoError(t, lease.Release(ctx))
					gotA <- token
				}
			}()
			// A either takes and lets go the lock while B is held, or waits
			// for B's statement.
			var first int64
			aFirst := false
			require.Eventually(t, func() bool {
				select {
				case first = <-gotA:
					aFirst = true
					return true
				default:
					return s.waitingIn(t, false) > 0
				}
			}, waitLimit, 5*time.Millisecond)
			open()
			g := <-gotB
			require.NotNil(t, g.release)
			if aFirst {
				assert.Greater(t, g.token, first, "B, granted after A let go, holds with a token above A's")
				g.release()
				return
			}
			g.release()
			assert.Greater(t, <-gotA, g.token, "A, granted after B, has a token above B's")
		})
	}
}

// fnRelease lets the lock name go for me through the function.
func fnRelease(ctx context.Context, t *testing.T, db *sql.DB, name, me string) {
	var code int
	assert.NoError(t, db.QueryRowContext(ctx, `SELECT code FROM zkrecipes_locks_op('release', $1, $2, 60000000, 60000000, 0)`, name, me).Scan(&code))
	assert.Equal(t, 1, code)
}
