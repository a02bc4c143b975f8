package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A secured PostgreSQL takes its password over TCP and refuses a wrong
// one, or none; the harness's own statements need none.
func TestPostgresSecure(t *testing.T) {
	pg := StartPostgresSecure(t, "s3cr3t-pw")
	if got := pg.Query(t, "SELECT current_user"); got != PostgresUser {
		t.Fatalf("Query: %q", got)
	}
	if !strings.Contains(pg.PasswordDSN(), ":s3cr3t-pw@"+pg.Addr()+"/") || strings.Contains(pg.DSN(), "s3cr3t") {
		t.Fatalf("DSN %q, PasswordDSN %q", pg.DSN(), pg.PasswordDSN())
	}
	for _, tc := range []struct {
		name, password, want string
	}{
		{"the password", "s3cr3t-pw", ""},
		{"a wrong password", "wrong", "password authentication failed"},
		{"no password", "", "no password supplied"},
	} {
		out, err := psqlTCP(t, pg, tc.password, "SELECT 1")
		switch {
		case tc.want == "" && (err != nil || out != "1"):
			t.Errorf("%s: %q, %v", tc.name, out, err)
		case tc.want != "" && (err == nil || !strings.Contains(out, tc.want)):
			t.Errorf("%s: %q, %v; want a refusal saying %q", tc.name, out, err, tc.want)
		}
	}
}

// psqlTCP runs sql with psql over TCP as PostgresUser with password (in
// PGPASSWORD; none when empty), never prompting; it returns the output,
// and stderr when it fails.
func psqlTCP(t *testing.T, pg *Postgres, password, sql string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	host, port := splitHostPort(pg.Addr())
	cmd := exec.CommandContext(ctx, filepath.Join(pg.bin, "psql"), "-X", "-w", "-q", "-A", "-t",
		"-h", host, "-p", port, "-U", PostgresUser, "-d", Database, "-c", sql)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGPASSFILE=/dev/null")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
