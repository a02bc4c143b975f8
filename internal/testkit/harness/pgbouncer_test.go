package harness

import (
	"strings"
	"testing"
	"time"
)

// A PgBouncer passes queries to its Postgres in transaction mode, survives
// its own restart and the server's, and keeps its address.
func TestPgBouncer(t *testing.T) {
	pg := StartPostgres(t)
	began := time.Now()
	b := StartPgBouncer(t, pg)
	t.Logf("StartPgBouncer took %v", time.Since(began).Round(time.Millisecond))
	if got := b.Query(t, "SELECT 1"); got != "1" {
		t.Fatalf("SELECT 1 through pgbouncer: %q", got)
	}
	if got := b.Query(t, "SELECT current_user, current_database(), inet_server_port()"); got != "postgres\tzkr\t"+pgPort(pg) {
		t.Fatalf("who and where through pgbouncer: %q", got)
	}
	if !strings.HasPrefix(b.DSN(), "postgres://postgres@"+b.Addr()+"/zkr?") {
		t.Fatalf("DSN %q", b.DSN())
	}
	config, err := pg.psql(b.Addr(), "pgbouncer", "SHOW CONFIG")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+config, "\npool_mode\ttransaction\t") {
		t.Fatalf("SHOW CONFIG has no pool_mode transaction:\n%s", config)
	}
	// Transaction mode: a session advisory lock outlives the client that
	// took it, on the pooled server connection (NOTES: SQL).
	if got := b.Query(t, "SELECT pg_try_advisory_lock(42)"); got != "t" {
		t.Fatalf("pg_try_advisory_lock through pgbouncer: %q", got)
	}
	if got := pg.Query(t, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"); got != "1" {
		t.Fatalf("advisory locks held after the client left: %q", got)
	}

	addr := b.Addr()
	b.Stop(t)
	if _, err := pg.psql(addr, Database, "SELECT 1"); err == nil {
		t.Fatal("query through pgbouncer after Stop")
	}
	b.Start(t)
	if b.Addr() != addr {
		t.Fatalf("address changed: %s -> %s", addr, b.Addr())
	}
	if got := b.Query(t, "SELECT 2"); got != "2" {
		t.Fatalf("SELECT 2 after restarting pgbouncer: %q", got)
	}

	pg.Stop(t)
	pg.Start(t)
	if got := b.Query(t, "SELECT 3"); got != "3" {
		t.Fatalf("SELECT 3 after restarting postgres: %q", got)
	}
	b.Kill(t)
	b.Start(t)
	b.Pause(t)
	b.Resume(t)
	if got := b.Query(t, "SELECT 4"); got != "4" {
		t.Fatalf("SELECT 4 after Kill, Start, Pause, Resume: %q", got)
	}
}

// pgPort is the port of pg, as the server reports it.
func pgPort(pg *Postgres) string {
	_, port := splitHostPort(pg.Addr())
	return port
}
