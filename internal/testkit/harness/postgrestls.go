package harness

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// StartPostgresTLS gives t a PostgreSQL server as StartPostgres does, but
// whose TCP connections must use TLS, with the certificate server (issued
// by a CA of the test's for Loopback, "127.0.0.1"): pg_hba.conf has
// hostssl lines only, so a connection without TLS is refused (SQLSTATE
// 28000, "no encryption"). Authentication is trust, as StartPostgres's.
// The harness's own statements (Query) go over the server's Unix socket.
// PgBouncer (StartPgBouncer) cannot front it.
func StartPostgresTLS(t testing.TB, server *Cert) *Postgres {
	t.Helper()
	if server == nil {
		t.Fatal("StartPostgresTLS: nil certificate")
	}
	return startPostgres(t, pgSecurity{tls: server})
}

// useTLS copies the certificate and key of server into root, where the
// server's account acct owns them (PostgreSQL refuses a key that others
// may read), has pg_hba.conf in data take TCP connections over TLS only,
// and returns the server's settings that turn TLS on.
func useTLS(root, data string, acct *account, server *Cert) ([]string, error) {
	cert, key := filepath.Join(root, "server.crt"), filepath.Join(root, "server.key")
	for _, f := range [][2]string{{server.CertFile, cert}, {server.KeyFile, key}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(f[1], b, 0o600); err != nil {
			return nil, err
		}
	}
	hba := filepath.Join(data, "pg_hba.conf")
	rules := "local all all trust\nhostssl all all " + Loopback + "/32 trust\n"
	if err := os.WriteFile(hba, []byte(rules), 0o600); err != nil {
		return nil, err
	}
	if err := acct.chown(cert, key, hba); err != nil {
		return nil, err
	}
	return []string{"-c", "ssl=on", "-c", "ssl_cert_file=" + cert, "-c", "ssl_key_file=" + key}, nil
}

// TLSDSN is DSN for a client that checks the server's certificate
// against the CA certificates in caFile (PEM) and the host name:
// "postgres://postgres@127.0.0.1:port/zkr?sslmode=verify-full&sslrootcert=FILE".
func (p *Postgres) TLSDSN(caFile string) string {
	q := url.Values{"sslmode": {"verify-full"}, "sslrootcert": {caFile}}
	u := url.URL{Scheme: "postgres", User: url.User(PostgresUser), Host: p.s.addr, Path: "/" + Database, RawQuery: q.Encode()}
	return u.String()
}
