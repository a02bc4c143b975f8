package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// PgBouncer is a PgBouncer in transaction pooling mode in front of one
// Postgres of a test: Debian's pgbouncer, run as the postgres account (it
// refuses root), listening on a free 127.0.0.1 port only, with its
// configuration, auth file and socket in a temp dir of its own.
//
// Every database name is passed through to the server, as PostgresUser
// with no password (auth_type = trust). In transaction mode a client's
// consecutive transactions may run on different server connections and
// other clients' transactions on its own: session state (advisory locks,
// SET, LISTEN, named prepared statements) does not work through it. pgx's
// default query mode prepares named statements, so a pgx client needs
// default_query_exec_mode=simple_protocol (or cache_describe) in its DSN.
type PgBouncer struct {
	s  dbServer
	pg *Postgres
}

// pgbouncerConfig is pgbouncer.ini: the server port, the listen port and the
// temp dir (socket dir, auth file) are filled in. server_login_retry is 1s
// (15s by default) so that the pooler finds a restarted server quickly.
const pgbouncerConfig = `[databases]
* = host=%[1]s port=%[2]d

[pgbouncer]
listen_addr = %[1]s
listen_port = %[3]d
unix_socket_dir = %[4]s
auth_type = trust
auth_file = %[4]s/userlist.txt
admin_users = %[5]s
pool_mode = transaction
default_pool_size = 20
max_client_conn = 1000
server_login_retry = 1
ignore_startup_parameters = extra_float_digits
`

// StartPgBouncer gives t a PgBouncer in transaction mode in front of pg
// (which must be running for queries to pass; PgBouncer itself starts
// without it, in under 0.1s); t.Cleanup kills it and removes its files.
// Without pgbouncer installed t is ended by Unavailable.
func StartPgBouncer(t testing.TB, pg *Postgres) *PgBouncer {
	t.Helper()
	bin, err := findSQLBinary("pgbouncer")
	if err != nil {
		Unavailable(t, "pgbouncer: %v; %s", err, pgbouncerHint)
	}
	acct, err := serverAccount()
	if err != nil {
		skipOrFail(t, "pgbouncer", err)
	}
	root, err := os.MkdirTemp("", "zkr-pgbouncer-")
	fatalIf(t, "pgbouncer", err)
	b := &PgBouncer{pg: pg, s: dbServer{root: root, stopSig: syscall.SIGTERM}}
	b.s.cleanup(t, "pgbouncer")
	users := filepath.Join(root, "userlist.txt")
	fatalIf(t, "pgbouncer", os.WriteFile(users, []byte(strconv.Quote(PostgresUser)+` ""`+"\n"), 0o600))
	fatalIf(t, "pgbouncer", acct.chown(root, users))

	err = b.launch(bin, acct)
	if addrInUse(err) { // another process took the port before the bind
		err = b.launch(bin, acct)
	}
	fatalIf(t, "pgbouncer", err)
	return b
}

// launch writes the configuration for a free port and starts PgBouncer for
// the first time.
func (b *PgBouncer) launch(bin string, acct *account) error {
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	_, pgPort := splitHostPort(b.pg.Addr())
	port, _ := strconv.Atoi(pgPort)
	ini := filepath.Join(b.s.root, "pgbouncer.ini")
	conf := fmt.Sprintf(pgbouncerConfig, Loopback, port, ports[0], b.s.root, PostgresUser)
	if err := os.WriteFile(ini, []byte(conf), 0o600); err != nil {
		return err
	}
	if err := acct.chown(ini); err != nil {
		return err
	}
	argv, err := acct.command([]string{bin, ini})
	if err != nil {
		return err
	}
	b.s.addr = hostPort(ports[0])
	b.s.proc = &process{
		name:    "pgbouncer on " + b.s.addr,
		argv:    argv,
		dir:     b.s.root,
		logPath: filepath.Join(b.s.root, "pgbouncer.log"),
	}
	// The admin console answers without the server behind.
	b.s.ready = pgIsReady(b.pg.bin, b.s.addr, "pgbouncer")
	return b.s.start()
}

// Addr is the pooler's address, "127.0.0.1:port"; it stays the same across
// Stop and Start.
func (b *PgBouncer) Addr() string { return b.s.addr }

// DSN is the connection string of the database Database through the
// pooler, as Postgres.DSN's: "postgres://postgres@127.0.0.1:port/zkr?sslmode=disable".
// A pgx client needs default_query_exec_mode=simple_protocol added (see
// PgBouncer).
func (b *PgBouncer) DSN() string { return postgresDSN(b.s.addr) }

// Stop shuts the pooler down at once (SIGTERM: client connections are
// closed), SIGKILL when it does not exit in time. A paused pooler is resumed
// first.
func (b *PgBouncer) Stop(t testing.TB) { t.Helper(); fatalIf(t, "stop pgbouncer", b.s.stop()) }

// Start starts a stopped or killed pooler again on the same port and waits
// (bounded) until it answers.
func (b *PgBouncer) Start(t testing.TB) { t.Helper(); fatalIf(t, "start pgbouncer", b.s.start()) }

// Kill kills the pooler with SIGKILL and reaps it.
func (b *PgBouncer) Kill(t testing.TB) { t.Helper(); fatalIf(t, "kill pgbouncer", b.s.kill()) }

// Pause freezes the pooler with SIGSTOP: connections through it stay open
// and answer nothing. Resume undoes it.
func (b *PgBouncer) Pause(t testing.TB) { t.Helper(); fatalIf(t, "pause pgbouncer", b.s.pause()) }

// Resume continues a paused pooler with SIGCONT.
func (b *PgBouncer) Resume(t testing.TB) { t.Helper(); fatalIf(t, "resume pgbouncer", b.s.resume()) }

// Query runs sql with psql through the pooler on the database Database and
// returns the rows of the last statement, a line each, columns separated by
// tabs; t fails when psql does.
func (b *PgBouncer) Query(t testing.TB, sql string) string {
	t.Helper()
	out, err := b.pg.psql(b.s.addr, Database, sql)
	fatalIf(t, "psql through pgbouncer", err)
	return out
}
