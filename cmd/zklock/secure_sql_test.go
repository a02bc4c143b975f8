package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// PostgreSQL and MySQL (MariaDB) with passwords: the DSN comes from
// $ZKLOCK_DSN or --dsn-file (or, for pgx, the password from PGPASSWORD
// with a --dsn that has none); a flag wins over the environment, as for a
// zklock run by another's COMMAND. A refused password is exit 69,
// "authentication refused", never shown; a password in --dsn, or both
// flags of a DSN, is a usage error.
func TestSQLPasswords(t *testing.T) {
	pg := harness.StartPostgresSecure(t, "pg-s3cr3t")
	m := harness.StartMariaDB(t)
	m.Query(t, "CREATE USER app@'%' IDENTIFIED BY 'my-s3cr3t'; GRANT ALL ON zkr.* TO app@'%'")
	myDSN := "app:my-s3cr3t@tcp(" + m.Addr() + ")/zkr"
	wrongPG := strings.Replace(pg.PasswordDSN(), "pg-s3cr3t", "not-it", 1)
	secrets := []string{"pg-s3cr3t", "my-s3cr3t", "not-it"}
	path := lockPath(t)

	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"postgres, $ZKLOCK_DSN", []string{"ZKLOCK_DSN=" + pg.PasswordDSN()}, []string{"--backend", "postgres"}},
		{"postgres, --dsn-file", nil, []string{"--backend", "postgres", "--dsn-file", secretFile(t, "dsn", pg.PasswordDSN()+"\n")}},
		{"postgres, PGPASSWORD", []string{"PGPASSWORD=pg-s3cr3t"}, []string{"--backend", "postgres", "--dsn", pg.DSN()}},
		{"postgres, $ZKLOCK_LISTEN_DSN", []string{"ZKLOCK_DSN=" + pg.PasswordDSN(), "ZKLOCK_LISTEN_DSN=" + pg.PasswordDSN()},
			[]string{"--backend", "postgres"}},
		{"mysql, $ZKLOCK_DSN", []string{"ZKLOCK_DSN=" + myDSN}, []string{"--backend", "mysql"}},
		{"postgres, --dsn-file over $ZKLOCK_DSN", []string{"ZKLOCK_DSN=" + wrongPG},
			[]string{"--backend", "postgres", "--dsn-file", secretFile(t, "dsn", pg.PasswordDSN()+"\n")}},
		{"postgres, --dsn over $ZKLOCK_DSN", []string{"ZKLOCK_DSN=" + wrongPG, "PGPASSWORD=pg-s3cr3t"},
			[]string{"--backend", "postgres", "--dsn", pg.DSN()}},
		{"postgres, --listen-dsn-file over $ZKLOCK_LISTEN_DSN", []string{"ZKLOCK_DSN=" + pg.PasswordDSN(), "ZKLOCK_LISTEN_DSN=" + wrongPG},
			[]string{"--backend", "postgres", "--listen-dsn-file", secretFile(t, "listen", pg.PasswordDSN()+"\n")}},
		// A zklock in another's COMMAND: it inherits the outer one's
		// $ZKLOCK_DSN, and its --dsn-file wins.
		{"nested, postgres then mysql", []string{"ZKLOCK_DSN=" + pg.PasswordDSN()},
			[]string{"--backend", "postgres", lockPath(t), "--", zklockBin, "--backend", "mysql", "--dsn-file", secretFile(t, "my", myDSN+"\n")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, p := runZklockEnv(t, tc.env, append(append(tc.args, "-v"), path, "--", "echo", "ran")...)
			assert.Equal(t, exitOK, code, "stderr: %s", p.stderr)
			assert.Equal(t, "ran\n", p.stdout.String())
			assertNoSecret(t, p, secrets...)
		})
	}

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		msg  string
	}{
		{"postgres, wrong password", []string{"ZKLOCK_DSN=" + wrongPG}, []string{"--backend", "postgres"},
			"zklock: postgres " + pg.Addr() + ": authentication refused: FATAL: password authentication failed for user \"postgres\" (SQLSTATE 28P01) " +
				"(check the user and the password of the DSN)"},
		{"postgres, no password", nil, []string{"--backend", "postgres", "--dsn", pg.DSN()},
			"zklock: postgres " + pg.Addr() + ": authentication refused: "},
		{"mysql, wrong password", nil, []string{"--backend", "mysql", "--dsn-file", secretFile(t, "wrong", "app:not-it@tcp("+m.Addr()+")/zkr")},
			"zklock: mysql " + m.Addr() + ": authentication refused: Error 1045 (28000): Access denied for user 'app'@"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, p := runZklockEnv(t, tc.env, append(append(tc.args, "-v"), path, "--", "echo", "ran")...)
			assert.Equal(t, exitUnavailable, code)
			assert.Contains(t, p.stderr.String(), tc.msg)
			assert.Empty(t, p.stdout.String(), "the command ran")
			assertNoSecret(t, p, secrets...)
		})
	}

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		msg  string
	}{
		{"password in --dsn", nil, []string{"--backend", "postgres", "--dsn", pg.PasswordDSN()},
			"zklock: --dsn postgres://postgres:xxxxx@" + pg.Addr() + "/zkr?sslmode=disable: a password on the command line is refused " +
				"(anyone on this machine can read it with ps): put the DSN in $ZKLOCK_DSN or in a file named by --dsn-file"},
		{"password in --listen-dsn", []string{"ZKLOCK_DSN=" + pg.PasswordDSN()}, []string{"--backend", "postgres", "--listen-dsn", pg.PasswordDSN()},
			"--listen-dsn postgres://postgres:xxxxx@" + pg.Addr() + "/zkr?sslmode=disable: a password on the command line is refused"},
		{"--dsn and --dsn-file", []string{"ZKLOCK_DSN=" + pg.PasswordDSN()},
			[]string{"--backend", "postgres", "--dsn", pg.DSN(), "--dsn-file", secretFile(t, "dsn2", pg.PasswordDSN()+"\n")},
			"zklock: --dsn and --dsn-file both give the DSN: give it one way"},
		{"--listen-dsn and --listen-dsn-file", []string{"ZKLOCK_DSN=" + pg.PasswordDSN()},
			[]string{"--backend", "postgres", "--listen-dsn", pg.DSN(), "--listen-dsn-file", secretFile(t, "listen2", pg.PasswordDSN()+"\n")},
			"zklock: --listen-dsn and --listen-dsn-file both give the DSN: give it one way"},
		{"--dsn-file over $ZKLOCK_DSN: its file is read", []string{"ZKLOCK_DSN=" + myDSN}, []string{"--backend", "mysql", "--dsn-file", "/nonexistent"},
			"zklock: --dsn-file: open /nonexistent: no such file"},
		{"missing --dsn-file", nil, []string{"--backend", "mysql", "--dsn-file", "/nonexistent/dsn"}, "--dsn-file: open /nonexistent/dsn: no such file"},
		{"no DSN", nil, []string{"--backend", "postgres"},
			"--backend postgres needs a DSN: --dsn DSN (without a password), $ZKLOCK_DSN or --dsn-file FILE"},
		{"bad DSN in the environment", []string{"ZKLOCK_DSN=postgres://u:not-it@127.0.0.1:notaport/db"}, []string{"--backend", "postgres"},
			"invalid $ZKLOCK_DSN: cannot parse `postgres://u:xxxxx@127.0.0.1:notaport/db`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, p := runZklockEnv(t, tc.env, append(tc.args, path, "--", "echo", "ran")...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, p.stderr.String(), tc.msg)
			assertNoSecret(t, p, secrets...)
		})
	}
}

// PostgreSQL and MySQL (MariaDB) that take TCP connections over TLS only:
// zklock connects with the server's certificate checked against the CA
// (PostgreSQL: the DSN's sslmode=verify-full and sslrootcert; MySQL:
// --tls-ca), and a certificate another CA issued is refused at once,
// exit 69, naming the problem and what to check. A MySQL DSN whose tls
// setting says otherwise than the flags is a usage error, and --tls-ca is
// not for postgres (its DSN says it).
func TestSQLTLS(t *testing.T) {
	ca := harness.NewCA(t, "")
	other := harness.NewCA(t, "another CA")
	pg := harness.StartPostgresTLS(t, ca.Issue(t, "pg", harness.Loopback))
	m := harness.StartMariaDBTLS(t, ca.Issue(t, "mariadb", harness.Loopback))
	path := lockPath(t)

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"postgres", []string{"--backend", "postgres", "--dsn", pg.TLSDSN(ca.CertFile)}},
		{"mysql", []string{"--backend", "mysql", "--dsn", m.DSN(), "--tls-ca", ca.CertFile}},
		{"mysql, tls=true", []string{"--backend", "mysql", "--dsn", m.DSN() + "?tls=true", "--tls-ca", ca.CertFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, p := runZklock(t, append(tc.args, "-v", path, "--", "echo", "ran")...)
			assert.Equal(t, exitOK, code, "stderr: %s", p.stderr)
			assert.Equal(t, "ran\n", p.stdout.String())
		})
	}

	for _, tc := range []struct {
		name string
		args []string
		msg  []string
	}{
		{"postgres, another CA", []string{"--backend", "postgres", "--dsn", pg.TLSDSN(other.CertFile)},
			[]string{"zklock: postgres " + pg.Addr() + ": TLS: certificate not trusted: ", "x509: certificate signed by unknown authority",
				"(check the DSN's TLS settings: sslmode, sslrootcert)"}},
		{"mysql, another CA", []string{"--backend", "mysql", "--dsn", m.DSN(), "--tls-ca", other.CertFile},
			[]string{"zklock: mysql " + m.Addr() + ": TLS: certificate not trusted: ", "x509: certificate signed by unknown authority",
				"(the CA of --tls-ca did not sign it)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, p := runZklock(t, append(tc.args, "--timeout", "50s", path, "--", "echo", "ran")...)
			assert.Equal(t, exitUnavailable, code, "stderr: %s", p.stderr)
			for _, msg := range tc.msg {
				assert.Contains(t, p.stderr.String(), msg)
			}
			assert.Empty(t, p.stdout.String(), "the command ran")
		})
	}

	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"mysql, tls=skip-verify", []string{"--backend", "mysql", "--dsn", m.DSN() + "?tls=skip-verify", "--tls-ca", ca.CertFile},
			"zklock: --dsn has tls=skip-verify: --tls-ca, --tls-cert and --tls-key make the connection TLS with the server's certificate checked; leave tls out of the DSN (or give tls=true)"},
		{"mysql, missing --tls-ca", []string{"--backend", "mysql", "--dsn", m.DSN(), "--tls-ca", "/nonexistent/ca.pem"},
			"zklock: --tls-ca: open /nonexistent/ca.pem: no such file or directory"},
		{"postgres, --tls-ca", []string{"--backend", "postgres", "--dsn", pg.TLSDSN(ca.CertFile), "--tls-ca", ca.CertFile},
			"zklock: --tls-ca needs --backend zk, redis, redis-cluster, redis-sentinel, redlock or mysql"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, p := runZklock(t, append(tc.args, path, "--", "echo", "ran")...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, p.stderr.String(), tc.msg)
		})
	}
}
