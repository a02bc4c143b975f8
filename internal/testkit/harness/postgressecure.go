package harness

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// StartPostgresSecure gives t a PostgreSQL server as StartPostgres does,
// but whose TCP connections must authenticate: PostgresUser's password is
// password, checked by scram-sha-256 (pg_hba.conf's host lines), so a
// wrong or missing one is refused with SQLSTATE 28P01. The password is
// given to initdb in a file (mode 0600), never on a command line. The
// harness's own statements (Query) go over the server's Unix socket,
// which is trusted. PgBouncer (StartPgBouncer) cannot front it.
func StartPostgresSecure(t testing.TB, password string) *Postgres {
	t.Helper()
	if password == "" {
		t.Fatal("StartPostgresSecure: empty password")
	}
	return startPostgres(t, pgSecurity{password: password})
}

// passwordAuth writes password to a file in root that acct may read and
// returns initdb's arguments that make it PostgresUser's and ask it of
// TCP connections.
func passwordAuth(root string, acct *account, password string) ([]string, error) {
	file := filepath.Join(root, "pwfile")
	if err := os.WriteFile(file, []byte(password+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := acct.chown(file); err != nil {
		return nil, err
	}
	return []string{"--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=" + file}, nil
}

// Password is the password of StartPostgresSecure's server ("" for
// StartPostgres's).
func (p *Postgres) Password() string { return p.password }

// PasswordDSN is DSN (which has no password, for a client given it
// another way: PGPASSWORD, a file) with the password in it:
// "postgres://postgres:PASSWORD@127.0.0.1:port/zkr?sslmode=disable".
func (p *Postgres) PasswordDSN() string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(PostgresUser, p.password), Host: p.s.addr,
		Path: "/" + Database, RawQuery: "sslmode=disable"}
	return u.String()
}
