package harness

import (
	"slices"
	"testing"
	"time"
)

// A Postgres answers, keeps its data across Stop/Start and across a crash
// (Kill: the postmaster and every backend), and keeps its address.
func TestPostgresRestart(t *testing.T) {
	began := time.Now()
	pg := StartPostgres(t)
	t.Logf("StartPostgres took %v", time.Since(began).Round(time.Millisecond))
	if got := pg.Query(t, "SELECT 1"); got != "1" {
		t.Fatalf("SELECT 1: %q", got)
	}
	if got := pg.Query(t, "SELECT current_user, current_database(), inet_server_addr()"); got != "postgres\tzkr\t127.0.0.1" {
		t.Fatalf("who and where: %q", got)
	}
	pg.Query(t, "CREATE TABLE kv (k text PRIMARY KEY, v int); INSERT INTO kv VALUES ('a', 1)")
	addr := pg.Addr()

	pg.Stop(t)
	if err := pgIsReady(pg.bin, addr, "postgres")(); err == nil {
		t.Fatal("pg_isready answered after Stop")
	}
	began = time.Now()
	pg.Start(t)
	t.Logf("Start after Stop took %v", time.Since(began).Round(time.Millisecond))
	if pg.Addr() != addr {
		t.Fatalf("address changed: %s -> %s", addr, pg.Addr())
	}
	pg.Query(t, "INSERT INTO kv VALUES ('b', 2)")

	kids := childPIDs(pg.s.pid())
	if len(kids) == 0 {
		t.Fatal("no postgres processes besides the postmaster")
	}
	pg.Kill(t)
	for _, pid := range kids {
		if _, state, ok := procStat(pid); ok && !isDead(state) {
			t.Errorf("postgres child %d survived Kill (state %c)", pid, state)
		}
	}
	began = time.Now()
	pg.Start(t)
	t.Logf("Start after Kill (crash recovery) took %v", time.Since(began).Round(time.Millisecond))
	if got := pg.Query(t, "SELECT k, v FROM kv ORDER BY k"); got != "a\t1\nb\t2" {
		t.Fatalf("rows after Stop/Start and Kill/Start: %q", got)
	}
}

// Pause stops the postmaster and every backend; Resume lets them go on,
// and a paused server can be stopped.
func TestPostgresPause(t *testing.T) {
	pg := StartPostgres(t)
	procs := append(childPIDs(pg.s.pid()), pg.s.pid())
	pg.Pause(t)
	for _, pid := range procs {
		if _, state, ok := procStat(pid); ok && state != 'T' && !isDead(state) {
			t.Errorf("process %d is in state %c while paused, want T", pid, state)
		}
	}
	if reply, err := pgSSLRequest(pg.Addr()); err == nil {
		t.Errorf("SSLRequest answered while paused: %q", reply)
	}
	pg.Resume(t)
	if reply, err := pgSSLRequest(pg.Addr()); err != nil || reply != "N" {
		t.Errorf("SSLRequest after Resume: %q, %v", reply, err)
	}
	if got := pg.Query(t, "SELECT 1"); got != "1" {
		t.Fatalf("SELECT 1 after Resume: %q", got)
	}
	pg.Pause(t)
	pg.Stop(t)
	pg.Start(t)
	if got := pg.Query(t, "SELECT 2"); got != "2" {
		t.Fatalf("SELECT 2 after a paused Stop: %q", got)
	}
	if slices.Contains(childPIDs(pg.s.pid()), procs[0]) {
		t.Error("a backend of the first run is a child of the second")
	}
}

// pgSSLRequest sends PostgreSQL's SSLRequest to addr and returns the one-byte
// answer ("N": no TLS), waiting at most 300ms: a protocol-level probe that
// needs no client tool.
func pgSSLRequest(addr string) (string, error) {
	return exchange(addr, "\x00\x00\x00\x08\x04\xd2\x16\x2f", 300*time.Millisecond,
		func(r string) bool { return len(r) > 0 })
}
