package harness

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A PostgreSQL with TLS takes TCP connections over TLS only, with the
// certificate it was given (a client that trusts its CA and checks the
// host connects; one that trusts another CA is refused), also after a
// restart; the harness's own statements need none.
func TestPostgresTLS(t *testing.T) {
	ca := NewCA(t, "")
	pg := StartPostgresTLS(t, ca.Issue(t, "server", Loopback))
	other := NewCA(t, "another CA")
	if got := pg.Query(t, "SELECT 1"); got != "1" {
		t.Fatalf("Query: %q", got)
	}
	host, port := splitHostPort(pg.Addr())
	conninfo := func(settings string) string {
		return "host=" + host + " port=" + port + " user=" + PostgresUser + " dbname=" + Database + " " + settings
	}
	check := func() {
		for _, tc := range []struct {
			name, settings, want string
		}{
			{"the CA", "sslmode=verify-full sslrootcert=" + ca.CertFile, ""},
			{"another CA", "sslmode=verify-full sslrootcert=" + other.CertFile, "certificate verify failed"},
			{"no TLS", "sslmode=disable", "no encryption"},
		} {
			out, err := runClient(t, filepath.Join(pg.bin, "psql"), "-X", "-w", "-q", "-A", "-t",
				"-c", "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", conninfo(tc.settings))
			switch {
			case tc.want == "" && (err != nil || out != "t"):
				t.Errorf("%s: %q, %v", tc.name, out, err)
			case tc.want != "" && (err == nil || !strings.Contains(out, tc.want)):
				t.Errorf("%s: %q, %v; want a refusal saying %q", tc.name, out, err, tc.want)
			}
		}
	}
	check()
	pg.Stop(t)
	pg.Start(t)
	check()
	want := "postgres://postgres@" + pg.Addr() + "/zkr?sslmode=verify-full&sslrootcert=" + strings.ReplaceAll(ca.CertFile, "/", "%2F")
	if got := pg.TLSDSN(ca.CertFile); got != want {
		t.Errorf("TLSDSN: %q, want %q", got, want)
	}
}

// A MariaDB with TLS takes TCP connections over TLS only, with the
// certificate it was given; the harness's own statements need none.
func TestMariaDBTLS(t *testing.T) {
	ca := NewCA(t, "")
	m := StartMariaDBTLS(t, ca.Issue(t, "server", Loopback))
	other := NewCA(t, "another CA")
	if got := m.Query(t, "SELECT 1"); got != "1" {
		t.Fatalf("Query: %q", got)
	}
	host, port := splitHostPort(m.Addr())
	for _, tc := range []struct {
		name string
		tls  []string
		want string
	}{
		{"the CA", []string{"--ssl", "--ssl-ca=" + ca.CertFile, "--ssl-verify-server-cert"}, ""},
		{"another CA", []string{"--ssl", "--ssl-ca=" + other.CertFile, "--ssl-verify-server-cert"}, "TLS/SSL error: unable to get local issuer certificate"},
		{"no TLS", []string{"--skip-ssl"}, "Access denied"}, // MariaDB 10.11 says no more
	} {
		argv := append([]string{"--no-defaults", "-h", host, "-P", port, "-u", "root", "--batch", "--skip-column-names"}, tc.tls...)
		out, err := runClient(t, m.client, append(argv, "-e", "SELECT VARIABLE_VALUE <> '' FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_cipher'")...)
		switch {
		case tc.want == "" && (err != nil || out != "1"):
			t.Errorf("%s: %q, %v", tc.name, out, err)
		case tc.want != "" && (err == nil || !strings.Contains(out, tc.want)):
			t.Errorf("%s: %q, %v; want a refusal saying %q", tc.name, out, err, tc.want)
		}
	}
}

// runClient runs a client tool with args and returns its output (stdout
// and stderr), trimmed.
func runClient(t *testing.T, tool string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
