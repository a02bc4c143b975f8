package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// sqlVariant is one way of reaching a SQL backend: zklock's flags, and how
// the test sees a waiter and breaks a lock (giving its row to someone
// else, as an operator or a bug would).
type sqlVariant struct {
	name   string
	args   []string
	queued func(t *testing.T, name string) bool // a waiter waits for the lock
	steal  func(t *testing.T, name string)
}

// startSQL starts PostgreSQL (reached directly, and through PgBouncer in
// transaction mode with LISTEN on a direct connection) and MariaDB.
func startSQL(t *testing.T) []sqlVariant {
	pg := harness.StartPostgres(t)
	bouncer := harness.StartPgBouncer(t, pg)
	m := harness.StartMariaDB(t)
	// pgx must not send named prepared statements through the pooler.
	bouncerDSN := strings.Replace(pg.DSN(), pg.Addr(), bouncer.Addr(), 1) + "&default_query_exec_mode=simple_protocol"
	queuedPG := func(t *testing.T, name string) bool {
		return pg.Query(t, "SELECT cardinality(waiters) FROM zkrecipes_locks WHERE name = '"+name+"'") == "1"
	}
	stealPG := func(t *testing.T, name string) {
		pg.Query(t, "UPDATE zkrecipes_locks SET holder = 'thief', expires_at = '-infinity' WHERE name = '"+name+"'")
	}
	return []sqlVariant{
		{"postgres", []string{"--backend", "postgres", "--dsn", pg.DSN()}, queuedPG, stealPG},
		{"postgres through pgbouncer", []string{"--backend", "postgres", "--dsn", bouncerDSN, "--listen-dsn", pg.DSN()}, queuedPG, stealPG},
		{"mysql", []string{"--backend", "mysql", "--dsn", m.DSN()},
			func(t *testing.T, _ string) bool {
				return m.Query(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'") == "1"
			},
			func(t *testing.T, name string) {
				m.Query(t, "UPDATE zkrecipes_locks SET holder = 'thief', expires_at = '1970-01-01 00:00:01' WHERE name = '"+name+"'")
			}},
	}
}

// On PostgreSQL and MySQL (MariaDB) zklock creates the table, runs
// COMMAND under the lock with a fencing token, excludes, queues and wakes
// the next waiter at a release (long before the TTL: by LISTEN on
// PostgreSQL, GET_LOCK on MySQL), and terminates COMMAND when the lock is
// lost.
func TestSQLBackends(t *testing.T) {
	for _, v := range startSQL(t) {
		t.Run(v.name, func(t *testing.T) {
			t.Run("token", func(t *testing.T) {
				args := slices.Concat(v.args, []string{"--ttl", "2s", lockPath(t)})
				env := runEnv(t, args...)
				assert.Equal(t, lockPath(t), env["path"])
				assert.Equal(t, "-", env["node"], "no node outside ZooKeeper")
				first, err := strconv.ParseInt(env["token"], 10, 64)
				require.NoError(t, err)
				env = runEnv(t, args...)
				second, err := strconv.ParseInt(env["token"], 10, 64)
				require.NoError(t, err)
				assert.Greater(t, second, first, "tokens grow from holder to holder")
			})

			t.Run("exclusion", func(t *testing.T) {
				path := lockPath(t)
				// A TTL far beyond the test's waits: the waiter must be woken
				// by the release itself.
				args := slices.Concat(v.args, []string{"--ttl", "10m"})
				holder := startZklock(t, slices.Concat(args, []string{path, "--", "sh", "-c", holdScript})...)
				holder.waitOutput(t, holder.stdout, "ready")
				holderToken := tokenOf(t, holder.stdout.String())

				code, p := runZklock(t, slices.Concat(args, []string{"--try", path, "--", "echo", "ran"})...)
				assert.Equal(t, exitTempFail, code)
				assert.Contains(t, p.stderr.String(), "zklock: sqllock "+path+" is held")
				assert.Empty(t, p.stdout.String(), "the command must not run")

				waiter := startZklock(t, slices.Concat(args, []string{path, "--", "sh", "-c", `echo "ran $ZKLOCK_TOKEN"`})...)
				waitUntil(t, "the waiter to queue", func() (bool, string) {
					require.False(t, waiter.exited(), "the waiter exited: %s", waiter.stderr)
					return v.queued(t, path), "not queued"
				})
				assert.Empty(t, waiter.stdout.String(), "the waiter ran while the lock was held")
				holder.closeStdin(t)
				assert.Equal(t, exitOK, holder.wait(t))
				assert.Equal(t, exitOK, waiter.wait(t))
				assert.Greater(t, tokenOf(t, waiter.stdout.String()), holderToken)
			})

			t.Run("lost", func(t *testing.T) {
				path := lockPath(t)
				p := startZklock(t, slices.Concat(v.args, []string{"--ttl", "1s", "--grace", "1s", "-v", path, "--", "sh", "-c", holdScript})...)
				p.waitOutput(t, p.stdout, "ready")
				v.steal(t, path)
				assert.Equal(t, exitLockLost, p.wait(t))
				assert.Contains(t, p.stderr.String(), "sqllock "+path+" lost while sh was running")
				// -v: the wait, and the time held and the cause.
				assert.Regexp(t, verboseAcquired("sqllock "+path, "(un)?contended"), p.stderr.String())
				assert.Regexp(t, verboseEnd("sqllock "+path, `lost \(`), p.stderr.String())
			})

			// zklocks started at once on a table that does not exist yet:
			// they race to create it, then take turns, each woken by the
			// release before it (the TTL is far beyond the test's waits).
			t.Run("concurrent first use", func(t *testing.T) {
				table := "zklock_" + strings.NewReplacer(" ", "_").Replace(v.name)
				file := filepath.Join(t.TempDir(), "markers")
				ids := []string{"a", "b", "c", "d", "e"}
				procs := make([]*proc, len(ids))
				for i, id := range ids {
					procs[i] = startZklock(t, slices.Concat(v.args, []string{"--table", table, "--ttl", "10m", lockPath(t),
						"--", "sh", "-c", markerScript, "sh", id, file})...)
				}
				var wg sync.WaitGroup
				codes := make([]int, len(ids))
				for i := range procs {
					wg.Go(func() { codes[i] = procs[i].wait(t) })
				}
				wg.Wait()
				for i, code := range codes {
					require.Equal(t, exitOK, code, "zklock %s: %s", ids[i], procs[i].stderr)
				}
				data, err := os.ReadFile(file)
				require.NoError(t, err)
				checkMarkers(t, strings.Split(strings.TrimSpace(string(data)), "\n"), ids, func(string) bool { return true })
			})
		})
	}
}

// tokenOf is the token in a line "ready TOKEN" or "ran TOKEN".
func tokenOf(t *testing.T, out string) int64 {
	t.Helper()
	f := strings.Fields(out)
	require.Len(t, f, 2, "%q", out)
	n, err := strconv.ParseInt(f[1], 10, 64)
	require.NoError(t, err, "%q", out)
	return n
}

// A user granted the table's rows only, not the right to create it: zklock
// uses the table someone else made, and says why it could not make a
// missing one. A refused password is exit 69, the password not shown.
func TestSQLPrivileges(t *testing.T) {
	pg := harness.StartPostgres(t)
	m := harness.StartMariaDB(t)
	for _, tc := range []struct {
		name          string
		args, appArgs []string
		grant         func()
	}{
		{"postgres", []string{"--backend", "postgres", "--dsn", pg.DSN()},
			[]string{"--backend", "postgres", "--dsn", strings.Replace(pg.DSN(), "postgres@", "app@", 1)},
			func() {
				pg.Query(t, "CREATE ROLE app LOGIN; GRANT SELECT, INSERT, UPDATE, DELETE ON zkrecipes_locks TO app")
			}},
		{"mysql", []string{"--backend", "mysql", "--dsn", m.DSN()},
			[]string{"--backend", "mysql", "--dsn", strings.Replace(m.DSN(), "root@", "app@", 1)},
			func() { m.Query(t, "CREATE USER app@'%'; GRANT SELECT, INSERT, UPDATE, DELETE ON zkr.* TO app@'%'") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := lockPath(t)
			code, p := runZklock(t, slices.Concat(tc.args, []string{path, "--", "true"})...) // makes the table
			require.Equal(t, exitOK, code, "stderr: %s", p.stderr)
			tc.grant()

			code, p = runZklock(t, slices.Concat(tc.appArgs, []string{"-v", path, "--", "echo", "ran"})...)
			require.Equal(t, exitOK, code, "stderr: %s", p.stderr)
			assert.Equal(t, "ran\n", p.stdout.String())
			assert.Contains(t, p.stderr.String(), "cannot create the lock table zkrecipes_locks on ")
			assert.Contains(t, p.stderr.String(), "(trying it as it is)")

			code, p = runZklock(t, slices.Concat(tc.appArgs, []string{"--table", "missing", path, "--", "echo", "ran"})...)
			assert.Equal(t, exitUnavailable, code)
			assert.Contains(t, p.stderr.String(), "zklock: cannot take sqllock "+path+": ")
			assert.Contains(t, p.stderr.String(), "missing")
			assert.Contains(t, p.stderr.String(), "does not exist")
			assert.Contains(t, p.stderr.String(), "(zklock could not create the table: ")
			assert.Empty(t, p.stdout.String(), "the command must not run")
		})
	}

	// root has no password: MariaDB refuses one.
	dsn := strings.Replace(m.DSN(), "root@", "root:s3cr3t@", 1)
	code, p := runZklockEnv(t, []string{"ZKLOCK_DSN=" + dsn}, "--backend", "mysql", "/x", "--", "true")
	assert.Equal(t, exitUnavailable, code)
	assert.Contains(t, p.stderr.String(), "zklock: mysql "+m.Addr()+": authentication refused: ")
	assert.Contains(t, p.stderr.String(), "Access denied")
	assert.NotContains(t, p.stderr.String(), "s3cr3t")
}

// A server that does not answer: exit 69, the DSN's password masked; with
// -q nothing is printed.
func TestSQLUnreachable(t *testing.T) {
	for _, tc := range []struct {
		backend, dsn string
		msg          string
	}{
		{"postgres", "postgres://u:s3cr3t@127.0.0.1:1/db?sslmode=disable",
			"cannot connect to PostgreSQL at postgres://u:xxxxx@127.0.0.1:1/db?sslmode=disable: "},
		{"postgres", "host=127.0.0.1 port=1 user=u password='s3cr3t' dbname=db sslmode=disable",
			"cannot connect to PostgreSQL at host=127.0.0.1 port=1 user=u password=xxxxx dbname=db sslmode=disable: "},
		{"mysql", "u:s3cr3t@tcp(127.0.0.1:1)/db", "cannot connect to MySQL at u:xxxxx@tcp(127.0.0.1:1)/db: "},
	} {
		env := []string{"ZKLOCK_DSN=" + tc.dsn}
		code, p := runZklockEnv(t, env, "--backend", tc.backend, "--timeout", "30s", "/x", "--", "true")
		assert.Equal(t, exitUnavailable, code, "%v", tc.dsn)
		assert.Contains(t, p.stderr.String(), tc.msg)
		assert.NotContains(t, p.stderr.String(), "s3cr3t")

		code, p = runZklockEnv(t, env, "--backend", tc.backend, "-q", "/x", "--", "true")
		assert.Equal(t, exitUnavailable, code, "%v", tc.dsn)
		assert.Empty(t, p.stderr.String(), "-q prints nothing")
	}
}

// A PostgreSQL that acknowledges commits before they are safe is refused,
// exit 69, naming the setting and the flag; --without-durability-check
// takes the risk.
func TestSQLDurability(t *testing.T) {
	pg := harness.StartPostgres(t)
	pg.Query(t, "ALTER DATABASE zkr SET synchronous_commit = off")
	args := []string{"--backend", "postgres", "--dsn", pg.DSN(), "--timeout", "30s", "/durable"}
	code, p := runZklock(t, slices.Concat(args, []string{"--", "true"})...)
	assert.Equal(t, exitUnavailable, code)
	assert.Contains(t, p.stderr.String(), "synchronous_commit is off")
	assert.Contains(t, p.stderr.String(), "--without-durability-check")
	code, p = runZklock(t, slices.Concat([]string{"--without-durability-check"}, args, []string{"--", "true"})...)
	assert.Equal(t, 0, code, p.stderr.String())
}

// A zklock waiting for a held lock and interrupted (SIGINT) exits 130
// and leaves nothing of its wait behind: no entry in PostgreSQL's queue,
// no session waiting in MySQL's GET_LOCK (each would outlive it by up to
// its TTL, ten minutes here, holding up the waiters behind it). The
// waiter's requests are slowed by a proxy: what it would leave to a
// goroutine that its exit ends, or that lands late, is still there when
// the test looks.
func TestSQLInterruptedWaiterLeavesNothing(t *testing.T) {
	pg := harness.StartPostgres(t)
	m := harness.StartMariaDB(t)
	pgProxy := harness.NewProxy(t, pg.Addr())
	myProxy := harness.NewProxy(t, m.Addr())
	for _, tc := range []struct {
		name       string
		args, slow []string // the holder's flags, the waiter's
		proxy      *harness.Proxy
		waits      func(t *testing.T, name string) string // how many wait for the lock
		held       func(t *testing.T, name string) string // its holder, "" when free
	}{
		{"postgres", []string{"--backend", "postgres", "--dsn", pg.DSN()},
			[]string{"--backend", "postgres", "--dsn", strings.Replace(pg.DSN(), pg.Addr(), pgProxy.Addr(), 1), "--listen-dsn", pg.DSN()},
			pgProxy,
			func(t *testing.T, name string) string {
				// A free lock is no row: none waits.
				return pg.Query(t, "SELECT coalesce(sum(cardinality(waiters)), 0) FROM zkrecipes_locks WHERE name = '"+name+"'")
			},
			func(t *testing.T, name string) string {
				return pg.Query(t, "SELECT coalesce(holder, '') FROM zkrecipes_locks WHERE name = '"+name+"'")
			}},
		{"mysql", []string{"--backend", "mysql", "--dsn", m.DSN()},
			[]string{"--backend", "mysql", "--dsn", strings.Replace(m.DSN(), m.Addr(), myProxy.Addr(), 1)},
			myProxy,
			func(t *testing.T, _ string) string {
				return m.Query(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock'")
			},
			func(t *testing.T, name string) string {
				return m.Query(t, "SELECT coalesce(holder, '') FROM zkrecipes_locks WHERE name = '"+name+"'")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := lockPath(t)
			flags := []string{"--ttl", "10m", path, "--"}
			holder := startZklock(t, slices.Concat(tc.args, flags, []string{"sh", "-c", holdScript})...)
			holder.waitOutput(t, holder.stdout, "ready")
			waiter := startZklock(t, slices.Concat(tc.slow, flags, []string{"echo", "ran"})...)
			waitUntil(t, "the waiter to wait", func() (bool, string) {
				require.False(t, waiter.exited(), "the waiter exited: %s", waiter.stderr)
				n := tc.waits(t, path)
				return n == "1", n + " waiting"
			})
			tc.proxy.LatencyToServer(t, 300*time.Millisecond)
			waiter.signal(t, syscall.SIGINT)
			assert.Equal(t, signalExit(syscall.SIGINT), waiter.wait(t))
			assert.Equal(t, "0", tc.waits(t, path), "the interrupted zklock left its wait behind")
			assert.Contains(t, waiter.stderr.String(), "zklock: interrupted by SIGINT while waiting for sqllock "+path)
			assert.Empty(t, waiter.stdout.String(), "the command must not run")
			tc.proxy.Restore(t)

			holder.closeStdin(t)
			assert.Equal(t, exitOK, holder.wait(t))
			assert.Equal(t, "", tc.held(t, path))
			assert.Equal(t, "0", tc.waits(t, path))
		})
	}
}

// A zklock interrupted while its database does not answer cannot take its
// queue entry out: it says so when it exits, after a bounded wait (the
// entry expires by itself).
func TestSQLInterruptedWaiterUnanswered(t *testing.T) {
	pg := harness.StartPostgres(t)
	proxy := harness.NewProxy(t, pg.Addr())
	path := lockPath(t)
	flags := []string{"--ttl", "10m", path, "--"}
	holder := startZklock(t, slices.Concat([]string{"--backend", "postgres", "--dsn", pg.DSN()}, flags, []string{"sh", "-c", holdScript})...)
	holder.waitOutput(t, holder.stdout, "ready")
	waiter := startZklock(t, slices.Concat([]string{"--backend", "postgres", "--dsn", strings.Replace(pg.DSN(), pg.Addr(), proxy.Addr(), 1),
		"--listen-dsn", pg.DSN()}, flags, []string{"echo", "ran"})...)
	waitUntil(t, "the waiter to wait", func() (bool, string) {
		require.False(t, waiter.exited(), "the waiter exited: %s", waiter.stderr)
		n := pg.Query(t, "SELECT cardinality(waiters) FROM zkrecipes_locks WHERE name = '"+path+"'")
		return n == "1", n + " waiting"
	})
	proxy.Blackhole(t)
	waiter.signal(t, syscall.SIGINT)
	assert.Equal(t, signalExit(syscall.SIGINT), waiter.wait(t))
	assert.Contains(t, waiter.stderr.String(), "zklock: interrupted by SIGINT while waiting for sqllock "+path)
	assert.Contains(t, waiter.stderr.String(), "zklock: sqllock: close: 1 clean-up(s) stopped unfinished")
	proxy.Restore(t)
	holder.closeStdin(t)
	assert.Equal(t, exitOK, holder.wait(t))
}
