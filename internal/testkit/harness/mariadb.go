package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// MariaDB is a MariaDB server for a test: Debian's mariadb-server (mariadbd,
// with --no-defaults so no system configuration applies), listening on a
// free 127.0.0.1 port only, its data directory and socket in a temp dir of
// its own. root has no password, over TCP too. Its data survives Stop, Kill
// and Start; t.Cleanup removes it.
type MariaDB struct {
	s      dbServer
	client string // mariadb
	admin  string // mariadb-admin
	tls    bool   // StartMariaDBTLS's: TCP connections need TLS; the tools use the socket
}

// mariadbServerFlags are the flags of both mariadb-install-db and mariadbd: a
// small redo log (the default is 96 MiB of disk per server), commits written
// to the OS at once (durable across Kill) but synced only each second, and
// Debian's own charset and collation (its /etc/mysql configuration, which
// --no-defaults skips, sets them).
var mariadbServerFlags = []string{
	"--innodb-log-file-size=8M",
	"--innodb-flush-log-at-trx-commit=2",
	"--character-set-server=utf8mb4",
	"--collation-server=utf8mb4_general_ci",
}

// StartMariaDB gives t a fresh MariaDB server with the database Database
// (mariadb-install-db, start and CREATE DATABASE take 0.7 to 1s on a 2-CPU
// VM); t.Cleanup kills it and removes its files. Without mariadb-server
// installed t is ended by Unavailable.
func StartMariaDB(t testing.TB) *MariaDB {
	t.Helper()
	return startMariaDB(t, nil)
}

// startMariaDB is StartMariaDB, or with a certificate StartMariaDBTLS's
// server.
func startMariaDB(t testing.TB, server *Cert) *MariaDB {
	t.Helper()
	var bins [4]string
	for i, name := range []string{"mariadb-install-db", "mariadbd", "mariadb", "mariadb-admin"} {
		var err error
		if bins[i], err = findSQLBinary(name); err != nil {
			Unavailable(t, "mariadb: %v; %s", err, mariadbHint)
		}
	}
	install, mariadbd, client, admin := bins[0], bins[1], bins[2], bins[3]
	root, err := os.MkdirTemp("", "zkr-mariadb-")
	fatalIf(t, "mariadb", err)
	m := &MariaDB{client: client, admin: admin, s: dbServer{root: root, stopSig: syscall.SIGTERM}, tls: server != nil}
	m.s.cleanup(t, "mariadb")
	data := filepath.Join(root, "data")
	// A temp dir of its own: the bootstrap server of another install
	// running at once (tests of several packages) removes the temporary
	// tables it finds in its tmpdir, /tmp by default, and so fails this one.
	argv := append([]string{install, "--no-defaults", "--datadir=" + data, "--tmpdir=" + root, "--skip-test-db",
		"--auth-root-authentication-method=normal"}, mariadbServerFlags...)
	_, err = runTool(nil, root, append(argv, asRoot()...)...)
	fatalIf(t, "mariadb-install-db", err)

	var flags []string
	if server != nil {
		flags = mariadbTLSFlags(server)
	}
	err = m.launch(mariadbd, flags)
	if addrInUse(err) { // another process took the port before the bind
		err = m.launch(mariadbd, flags)
	}
	fatalIf(t, "mariadb", err)
	_, err = m.sql("", "CREATE DATABASE "+Database)
	fatalIf(t, "mariadb", err)
	return m
}

// launch starts the server on a free port for the first time, with flags
// added.
func (m *MariaDB) launch(server string, flags []string) error {
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	root := m.s.root
	argv := append([]string{server, "--no-defaults", // --no-defaults must come first
		"--datadir=" + filepath.Join(root, "data"), "--tmpdir=" + root,
		"--port=" + strconv.Itoa(ports[0]), "--bind-address=" + Loopback,
		"--socket=" + filepath.Join(root, "mariadb.sock"), "--pid-file=" + filepath.Join(root, "mariadb.pid"),
		"--skip-name-resolve", "--skip-log-bin",
	}, append(mariadbServerFlags, flags...)...)
	m.s.addr = hostPort(ports[0])
	m.s.proc = &process{
		name:    "mariadb on " + m.s.addr,
		argv:    append(argv, asRoot()...),
		dir:     root,
		logPath: filepath.Join(root, "mariadb.log"),
	}
	m.s.ready = m.ping
	return m.s.start()
}

// asRoot is the flag that lets mariadbd and mariadb-install-db run as root,
// when this process is root.
func asRoot() []string {
	if os.Geteuid() == 0 {
		return []string{"--user=root"}
	}
	return nil
}

// Addr is the server's address, "127.0.0.1:port"; it stays the same across
// Stop and Start.
func (m *MariaDB) Addr() string { return m.s.addr }

// DSN is a connection string for github.com/go-sql-driver/mysql to the
// database Database as root: "root@tcp(127.0.0.1:port)/zkr". Append
// "?parseTime=true" and the like as needed.
func (m *MariaDB) DSN() string { return fmt.Sprintf("root@tcp(%s)/%s", m.s.addr, Database) }

// Stop shuts the server down (SIGTERM: connections are closed, the data is
// kept), SIGKILL when it does not exit in time. A paused server is resumed
// first.
func (m *MariaDB) Stop(t testing.TB) { t.Helper(); fatalIf(t, "stop mariadb", m.s.stop()) }

// Start starts a stopped or killed server again on the same port and data
// directory, and waits (bounded) until it answers a ping; after Kill that
// includes InnoDB's crash recovery.
func (m *MariaDB) Start(t testing.TB) { t.Helper(); fatalIf(t, "start mariadb", m.s.start()) }

// Kill crashes the server with SIGKILL and reaps it. Committed data
// survives (the redo log is in the OS's cache); Start recovers it.
func (m *MariaDB) Kill(t testing.TB) { t.Helper(); fatalIf(t, "kill mariadb", m.s.kill()) }

// Pause freezes the server with SIGSTOP: open connections stay open and
// answer nothing, new ones wait in the listen backlog, as in a hung server.
// Resume undoes it.
func (m *MariaDB) Pause(t testing.TB) { t.Helper(); fatalIf(t, "pause mariadb", m.s.pause()) }

// Resume continues a paused server with SIGCONT.
func (m *MariaDB) Resume(t testing.TB) { t.Helper(); fatalIf(t, "resume mariadb", m.s.resume()) }

// Query runs sql (one or more statements) with the mariadb client on the
// database Database and returns the rows, a line each, columns separated by
// tabs, without column names; t fails when the client does.
func (m *MariaDB) Query(t testing.TB, sql string) string {
	t.Helper()
	out, err := m.sql(Database, sql)
	fatalIf(t, "mariadb client", err)
	return out
}

// sql runs sql with the mariadb client as root on database db ("" for none).
func (m *MariaDB) sql(db, sql string) (string, error) {
	argv := append(append([]string{m.client, "--no-defaults"}, m.toolAddr()...), "-u", "root",
		"--connect-timeout=5", "--batch", "--skip-column-names", "-e", sql)
	if db != "" {
		argv = append(argv, "-D", db)
	}
	out, err := runTool(nil, "", argv...)
	return trimNewline(out), err
}

// ping asks mariadb-admin whether the server answers.
func (m *MariaDB) ping() error {
	argv := append(append([]string{m.admin, "--no-defaults"}, m.toolAddr()...), "-u", "root",
		"--connect-timeout=2", "ping")
	_, err := runTool(nil, "", argv...)
	return err
}

// toolAddr is how the client tools reach the server: its TCP port, or its
// Unix socket when TCP needs TLS (the socket is a secure transport).
func (m *MariaDB) toolAddr() []string {
	if m.tls {
		return []string{"--protocol=socket", "--socket=" + filepath.Join(m.s.root, "mariadb.sock")}
	}
	host, port := splitHostPort(m.s.addr)
	return []string{"-h", host, "-P", port}
}
