package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
)

// PostgresUser is the superuser of the servers StartPostgres starts, whom
// their DSNs name; it needs no password (trust authentication).
const PostgresUser = "postgres"

// Postgres is a PostgreSQL server for a test: Debian's postgresql, run from
// /usr/lib/postgresql/<major>/bin as the postgres account (it refuses root),
// listening on a free 127.0.0.1 port only, its data directory and its
// Unix-socket directory in a temp dir of its own, with fsync off. Its data
// survives Stop, Kill and Start; t.Cleanup removes it.
type Postgres struct {
	s        dbServer
	bin      string // the directory of postgres, psql and pg_isready
	password string // StartPostgresSecure's: TCP connections need it; psql uses the socket
	tls      bool   // StartPostgresTLS's: TCP connections need TLS; psql uses the socket
}

// StartPostgres gives t a fresh PostgreSQL server with trust authentication
// and the database Database (initdb, start and CREATE DATABASE take 1 to
// 1.5s on a 2-CPU VM, initdb most of it); t.Cleanup kills it and removes its
// files. Without PostgreSQL installed t is ended by Unavailable.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	return startPostgres(t, pgSecurity{})
}

// pgSecurity is what a secured server asks of TCP connections.
type pgSecurity struct {
	password string // StartPostgresSecure's
	tls      *Cert  // StartPostgresTLS's
}

// startPostgres is StartPostgres, or with a password StartPostgresSecure's
// server (initdb is given passwordAuth's arguments in place of
// --auth=trust), or with a certificate StartPostgresTLS's (useTLS).
func startPostgres(t testing.TB, sec pgSecurity) *Postgres {
	t.Helper()
	bin, err := postgresBinDir()
	if err != nil {
		Unavailable(t, "postgres: %v; %s", err, postgresHint)
	}
	acct, err := serverAccount()
	if err != nil {
		skipOrFail(t, "postgres", err)
	}
	root, err := os.MkdirTemp("", "zkr-postgres-")
	fatalIf(t, "postgres", err)
	p := &Postgres{bin: bin, s: dbServer{root: root, stopSig: syscall.SIGINT, forks: true}, password: sec.password, tls: sec.tls != nil}
	p.s.cleanup(t, "postgres")
	data, run := filepath.Join(root, "data"), filepath.Join(root, "run")
	fatalIf(t, "postgres", os.Mkdir(data, 0o700))
	fatalIf(t, "postgres", os.Mkdir(run, 0o700))
	fatalIf(t, "postgres", acct.chown(root, data, run))
	authArgs := []string{"--auth=trust"}
	if sec.password != "" {
		authArgs, err = passwordAuth(root, acct, sec.password)
		fatalIf(t, "postgres", err)
	}
	_, err = runTool(acct, root, append([]string{filepath.Join(bin, "initdb"), "-D", data, "-U", PostgresUser,
		"--no-sync", "--no-locale", "--encoding=UTF8", "--no-instructions"}, authArgs...)...)
	fatalIf(t, "postgres initdb", err)
	var settings []string
	if sec.tls != nil {
		settings, err = useTLS(root, data, acct, sec.tls)
		fatalIf(t, "postgres", err)
	}

	err = p.launch(acct, settings)
	if addrInUse(err) { // another process took the port before the bind
		err = p.launch(acct, settings)
	}
	fatalIf(t, "postgres", err)
	_, err = p.psql(p.s.addr, "postgres", "CREATE DATABASE "+Database)
	fatalIf(t, "postgres", err)
	return p
}

// launch starts the server on a free port for the first time, with the
// settings ("-c", "name=value", ...) added.
func (p *Postgres) launch(acct *account, settings []string) error {
	ports, err := FreePorts(1)
	if err != nil {
		return err
	}
	argv, err := acct.command(append([]string{filepath.Join(p.bin, "postgres"),
		"-D", filepath.Join(p.s.root, "data"), "-p", strconv.Itoa(ports[0]),
		"-k", filepath.Join(p.s.root, "run"), "-c", "listen_addresses=" + Loopback,
		// A test's data need not survive the machine, only the server.
		"-c", "fsync=off",
	}, settings...))
	if err != nil {
		return err
	}
	p.s.addr = hostPort(ports[0])
	p.s.proc = &process{
		name:    "postgres on " + p.s.addr,
		argv:    argv,
		dir:     p.s.root,
		logPath: filepath.Join(p.s.root, "postgres.log"),
	}
	p.s.ready = pgIsReady(p.bin, p.s.addr, "postgres")
	return p.s.start()
}

// Addr is the server's address, "127.0.0.1:port"; it stays the same across
// Stop and Start.
func (p *Postgres) Addr() string { return p.s.addr }

// DSN is a connection string for pgx (and lib/pq) to the database Database
// as PostgresUser: "postgres://postgres@127.0.0.1:port/zkr?sslmode=disable".
// It has no password: see PasswordDSN for StartPostgresSecure's server.
func (p *Postgres) DSN() string { return postgresDSN(p.s.addr) }

// Stop shuts the server down with a fast shutdown (SIGINT: open sessions
// are ended, transactions rolled back, the data is kept), SIGKILL when it
// does not exit in time. A paused server is resumed first.
func (p *Postgres) Stop(t testing.TB) { t.Helper(); fatalIf(t, "stop postgres", p.s.stop()) }

// Start starts a stopped or killed server again on the same port and data
// directory, and waits (bounded) until it accepts connections; after Kill
// that includes crash recovery.
func (p *Postgres) Start(t testing.TB) { t.Helper(); fatalIf(t, "start postgres", p.s.start()) }

// Kill crashes the server: SIGKILL to the postmaster and to every backend
// and helper it forked, reaped before Kill returns. Committed data survives
// (the WAL is in the OS's cache); Start recovers it.
func (p *Postgres) Kill(t testing.TB) { t.Helper(); fatalIf(t, "kill postgres", p.s.kill()) }

// Pause freezes the postmaster and all its processes with SIGSTOP: open
// connections stay open and answer nothing, new ones wait in the listen
// backlog, as in a hung server. Resume undoes it.
func (p *Postgres) Pause(t testing.TB) { t.Helper(); fatalIf(t, "pause postgres", p.s.pause()) }

// Resume continues a paused server with SIGCONT.
func (p *Postgres) Resume(t testing.TB) { t.Helper(); fatalIf(t, "resume postgres", p.s.resume()) }

// Query runs sql (one or more statements) with psql on the database
// Database and returns the rows of the last one, a line each, columns
// separated by tabs; t fails when psql does.
func (p *Postgres) Query(t testing.TB, sql string) string {
	t.Helper()
	out, err := p.psql(p.s.addr, Database, sql)
	fatalIf(t, "psql", err)
	return out
}

// psql runs sql with psql against addr (the server or a pooler in front of
// it) on database db as PostgresUser.
func (p *Postgres) psql(addr, db, sql string) (string, error) {
	host, port := splitHostPort(addr)
	if addr == p.s.addr && (p.password != "" || p.tls) {
		host = filepath.Join(p.s.root, "run") // the Unix socket: trusted
	}
	out, err := runTool(nil, "", filepath.Join(p.bin, "psql"), "-X", "-q", "-A", "-t", "-F", "\t",
		"-v", "ON_ERROR_STOP=1", "-h", host, "-p", port, "-U", PostgresUser, "-d", db, "-c", sql)
	return trimNewline(out), err
}

// pgIsReady returns a probe that asks pg_isready whether addr accepts
// connections to db.
func pgIsReady(bin, addr, db string) func() error {
	host, port := splitHostPort(addr)
	return func() error {
		_, err := runTool(nil, "", filepath.Join(bin, "pg_isready"),
			"-h", host, "-p", port, "-U", PostgresUser, "-d", db, "-t", "2")
		return err
	}
}

// postgresDSN is the pgx connection string of the database Database at addr.
func postgresDSN(addr string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", PostgresUser, addr, Database)
}

// postgresBinDir is the directory that holds initdb, postgres, psql and
// pg_isready: the newest /usr/lib/postgresql/<major>/bin (Debian's layout),
// else that of initdb on PATH. The error wraps ErrUnavailable.
func postgresBinDir() (string, error) {
	dirs, _ := filepath.Glob(postgresBinGlob)
	major := func(dir string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		return n
	}
	slices.SortFunc(dirs, func(a, b string) int { return major(b) - major(a) })
	if initdb, err := findSQLBinary("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(initdb))
	}
	for _, dir := range dirs {
		if isFile(filepath.Join(dir, "initdb")) && isFile(filepath.Join(dir, "postgres")) &&
			isFile(filepath.Join(dir, "psql")) && isFile(filepath.Join(dir, "pg_isready")) {
			return dir, nil
		}
	}
	return "", unavailablef("no PostgreSQL server installed (initdb, postgres, psql and pg_isready in /usr/lib/postgresql/*/bin or on PATH)")
}
