package sqllock_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// startTLS starts db taking TCP connections over TLS only, with a
// certificate of a CA of the test's; the server's clients trust ca (pgx:
// sslmode=verify-full, sslrootcert; go-sql-driver/mysql: a registered
// TLS configuration, which checks the host too).
func startTLS(t *testing.T, db string, ca *harness.CA) server {
	cert := ca.Issue(t, "server", harness.Loopback)
	if db == "postgres" {
		pg := harness.StartPostgresTLS(t, cert)
		s := server{driver: "pgx", dsn: pg.TLSDSN(ca.CertFile), listenDSN: pg.TLSDSN(ca.CertFile)}
		s.admin = open(t, s.driver, s.dsn)
		return s
	}
	m := harness.StartMariaDBTLS(t, cert)
	s := server{driver: "mysql", dsn: m.DSN() + "?tls=" + registerCA(t, ca)}
	s.admin = open(t, s.driver, s.dsn)
	return s
}

// registerCA registers, for go-sql-driver/mysql's DSNs (tls=NAME), a TLS
// configuration that trusts ca alone, and returns its name.
func registerCA(t *testing.T, ca *harness.CA) string {
	name := "zkr-" + uuid.NewString()
	require.NoError(t, mysql.RegisterTLSConfig(name, ca.ClientConfig(nil)))
	t.Cleanup(func() { mysql.DeregisterTLSConfig(name) })
	return name
}

// trusting is s for a client that trusts ca instead.
func (s server) trusting(t *testing.T, ca *harness.CA) server {
	if s.driver == "mysql" {
		s.dsn = s.dsn[:strings.Index(s.dsn, "?tls=")] + "?tls=" + registerCA(t, ca)
		return s
	}
	u, err := url.Parse(s.dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("sslrootcert", ca.CertFile)
	u.RawQuery = q.Encode()
	s.dsn, s.listenDSN = u.String(), u.String()
	return s
}

// The contract over connections that use TLS, the server's certificate
// checked against the CA (and the host).
func TestContractTLS(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			contract(t, startTLS(t, db, harness.NewCA(t, "")))
		})
	}
}

// A server whose certificate another CA issued is refused at once, by
// Acquire and TryAcquire, with an error that names the certificate's
// problem; the acquisition does not wait for its context.
func TestUntrustedServerCertificate(t *testing.T) {
	for _, db := range []string{"postgres", "mariadb"} {
		t.Run(db, func(t *testing.T) {
			s := startTLS(t, db, harness.NewCA(t, ""))
			s.client(t) // makes the table
			untrusting := s.trusting(t, harness.NewCA(t, "another CA"))
			c, err := sqllock.NewClient(open(t, untrusting.driver, untrusting.dsn), dialectOf(s.driver))
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			refusedAtOnce(t, newLock(t, c, "untrusted"), "x509: certificate signed by unknown authority")
		})
	}
}
