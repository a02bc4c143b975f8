package harness

import "testing"

// StartMariaDBTLS gives t a MariaDB server as StartMariaDB does, but whose
// TCP connections must use TLS (require_secure_transport), with the
// certificate server (issued by a CA of the test's for Loopback,
// "127.0.0.1"): a connection without TLS is refused (MariaDB 10.11 says
// only "Access denied", error 1045). The
// harness's own statements (Query) go over the server's Unix socket. A
// client of go-sql-driver/mysql checks the certificate with a TLS
// configuration that trusts the CA: DSN() + "?tls=NAME" after
// mysql.RegisterTLSConfig(NAME, ca.ClientConfig(nil)).
func StartMariaDBTLS(t testing.TB, server *Cert) *MariaDB {
	t.Helper()
	if server == nil {
		t.Fatal("StartMariaDBTLS: nil certificate")
	}
	return startMariaDB(t, server)
}

// mariadbTLSFlags are mariadbd's flags that take TCP connections over TLS
// only, with the certificate and key of server (the server runs as this
// process's user, which wrote them).
func mariadbTLSFlags(server *Cert) []string {
	return []string{"--ssl-cert=" + server.CertFile, "--ssl-key=" + server.KeyFile, "--require-secure-transport=ON"}
}
