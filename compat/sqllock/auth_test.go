package sqllock_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes/locktrace"
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

// TestRefusals: a pool whose credentials or permissions the server
// refuses fails the first acquisition at once (trying again cannot mend
// it) with an error that is recipes.ErrRefused, says why and does not
// show the password: PostgreSQL's wrong password (SQLSTATE 28P01) and a
// role without privileges on the table (42501); MariaDB's wrong password
// (1045) and a user without access to the database (1044).
func TestRefusals(t *testing.T) {
	const other = "stranger"
	pg := harness.StartPostgresSecure(t, authPassword)
	server{driver: "pgx", dsn: pg.PasswordDSN()}.client(t) // makes the table
	pg.Query(t, "CREATE ROLE "+other+" LOGIN PASSWORD '"+authPassword+"'")
	m := harness.StartMariaDB(t)
	m.Query(t, "CREATE USER app@'%' IDENTIFIED BY '"+authPassword+"'; GRANT ALL ON zkr.* TO app@'%'; "+
		"CREATE USER "+other+"@'%' IDENTIFIED BY '"+authPassword+"'")
	for _, tc := range []struct {
		name, driver, dsn, want string
	}{
		{"postgres wrong password", "pgx", strings.Replace(pg.PasswordDSN(), authPassword, "not-"+authPassword, 1), "28P01"},
		{"postgres no privilege", "pgx", strings.Replace(pg.PasswordDSN(), "//"+harness.PostgresUser+":", "//"+other+":", 1), "42501"},
		{"mariadb wrong password", "mysql", "app:not-" + authPassword + "@tcp(" + m.Addr() + ")/zkr", "Error 1045"},
		{"mariadb no access", "mysql", other + ":" + authPassword + "@tcp(" + m.Addr() + ")/zkr", "Error 1044"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := sqllock.NewClient(open(t, tc.driver, tc.dsn), dialectOf(tc.driver))
			require.NoError(t, err) // no I/O yet
			t.Cleanup(func() { _ = c.Close() })
			for _, err := range refusedAtOnce(t, newLock(t, c, "auth-refused"), tc.want) {
				require.NotContains(t, err.Error(), authPassword)
				t.Log(err)
			}
		})
	}
}

// TestPasswordRotationKeepsLease: the password of the lock's user changes
// on the server while a lease is held (a rotation, the pool's DSN not yet
// updated). The pool's new connections are refused (PostgreSQL's 28P01,
// MySQL's 1045) while those it holds still work: a renewal that meets the
// refusal tries again until the lease's deadline, and goes on with a
// connection of the pool, instead of ending the lease at once.
func TestPasswordRotationKeepsLease(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			ctx := ctxT(t)
			r := startRotating(t, db)
			type report struct {
				err     error
				refused bool // a new connection had been refused before it
			}
			reports := make(chan report, 64)
			trace := &locktrace.Trace{Renewal: func(i locktrace.RenewalInfo) {
				select {
				case reports <- report{i.Err, r.pool.refused.Load() > 0}:
				default:
				}
			}}
			l := newLock(t, r.c, "rotation", sqllock.WithTTL(3*time.Second), sqllock.WithTrace(trace))
			lease, err := l.Acquire(ctx)
			require.NoError(t, err)

			// Every connection of the pool (made with the old password) is
			// taken by the test, so that the next renewal needs a new one;
			// then the password changes. A renewal that made a connection
			// meanwhile puts it back in the pool: take it too, and again.
			var pins []*sql.Conn
			for attempt := 0; ; attempt++ {
				r.rotate(t, r.password)
				for r.db.Stats().Idle > 0 {
					c, err := r.db.Conn(ctx)
					require.NoError(t, err)
					pins = append(pins, c)
				}
				r.rotate(t, "rotated-"+r.password)
				if st := r.db.Stats(); st.Idle == 0 && st.InUse == len(pins)+r.held {
					break
				}
				require.Less(t, attempt, 20, "a renewal kept a connection of the pool: %+v", r.db.Stats())
			}
			require.Eventually(t, func() bool { return r.pool.refused.Load() > 0 }, waitLimit, 5*time.Millisecond,
				"no renewal tried a new connection")
			// A connection made before the rotation is free again.
			for _, c := range pins {
				require.NoError(t, c.Close())
			}
			for {
				select {
				case rep := <-reports:
					if !rep.refused {
						continue // confirmed before the rotation
					}
					require.NoError(t, rep.err, "the renewal that met the refused connection")
					require.NoError(t, lease.Err(), "the lease ended")
					require.NoError(t, lease.Release(ctx))
					return
				case <-ctx.Done():
					t.Fatalf("no renewal reported after the refusal; lease: %v", lease.Err())
				}
			}
		})
	}
}

// rotating is a lock client whose pool's user can have its password
// changed on the server (rotate), the pool's DSN keeping the first one.
type rotating struct {
	c        *sqllock.Client
	db       *sql.DB
	pool     *refusals
	password string // the pool's
	rotate   func(t testing.TB, password string)
	held     int // connections a lease holds outside the pool's idle ones (MySQL's companion)
}

func startRotating(t *testing.T, db string) rotating {
	r := rotating{password: authPassword}
	var s server
	if db == "postgres" {
		pg := harness.StartPostgresSecure(t, authPassword)
		s = server{driver: "pgx", dsn: pg.PasswordDSN(), listenDSN: pg.PasswordDSN()}
		cfg, err := pgx.ParseConfig(s.dsn)
		require.NoError(t, err)
		r.pool = &refusals{Connector: stdlib.GetConnector(*cfg)}
		r.rotate = func(t testing.TB, password string) {
			pg.Query(t, "ALTER ROLE "+harness.PostgresUser+" PASSWORD '"+password+"'")
		}
	} else {
		m := harness.StartMariaDB(t)
		m.Query(t, "CREATE USER app@'%' IDENTIFIED BY '"+authPassword+"'; GRANT ALL ON zkr.* TO app@'%'")
		s = server{driver: "mysql", dsn: "app:" + authPassword + "@tcp(" + m.Addr() + ")/zkr"}
		cfg, err := mysql.ParseDSN(s.dsn)
		require.NoError(t, err)
		connector, err := mysql.NewConnector(cfg)
		require.NoError(t, err)
		r.pool = &refusals{Connector: connector}
		r.rotate = func(t testing.TB, password string) {
			m.Query(t, "ALTER USER app@'%' IDENTIFIED BY '"+password+"'")
		}
		r.held = 1
	}
	r.db = sql.OpenDB(r.pool)
	t.Cleanup(func() { _ = r.db.Close() })
	r.c = s.clientOn(t, r.db)
	return r
}

// refusals is a driver's connector that counts the connections it could
// not make.
type refusals struct {
	driver.Connector
	refused atomic.Int64
}

func (r *refusals) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := r.Connector.Connect(ctx)
	if err != nil {
		r.refused.Add(1)
	}
	return c, err
}
