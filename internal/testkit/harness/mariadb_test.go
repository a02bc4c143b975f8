package harness

import (
	"testing"
	"time"
)

// A MariaDB answers as root over TCP with no password, keeps its data
// across Stop/Start and across a crash (Kill), and keeps its address.
func TestMariaDBRestart(t *testing.T) {
	began := time.Now()
	m := StartMariaDB(t)
	t.Logf("StartMariaDB took %v", time.Since(began).Round(time.Millisecond))
	if got := m.Query(t, "SELECT 1"); got != "1" {
		t.Fatalf("SELECT 1: %q", got)
	}
	if got := m.Query(t, "SELECT CURRENT_USER(), DATABASE(), @@character_set_server"); got != "root@127.0.0.1\tzkr\tutf8mb4" {
		t.Fatalf("who and where: %q", got)
	}
	if want := "root@tcp(" + m.Addr() + ")/zkr"; m.DSN() != want {
		t.Fatalf("DSN %q, want %q", m.DSN(), want)
	}
	m.Query(t, "CREATE TABLE kv (k VARCHAR(10) PRIMARY KEY, v INT) ENGINE=InnoDB; INSERT INTO kv VALUES ('a', 1)")
	addr := m.Addr()

	m.Stop(t)
	if err := m.ping(); err == nil {
		t.Fatal("ping answered after Stop")
	}
	began = time.Now()
	m.Start(t)
	t.Logf("Start after Stop took %v", time.Since(began).Round(time.Millisecond))
	if m.Addr() != addr {
		t.Fatalf("address changed: %s -> %s", addr, m.Addr())
	}
	m.Query(t, "INSERT INTO kv VALUES ('b', 2)")
	m.Kill(t)
	began = time.Now()
	m.Start(t)
	t.Logf("Start after Kill (crash recovery) took %v", time.Since(began).Round(time.Millisecond))
	if got := m.Query(t, "SELECT k, v FROM kv ORDER BY k"); got != "a\t1\nb\t2" {
		t.Fatalf("rows after Stop/Start and Kill/Start: %q", got)
	}
}

// Pause leaves connections unanswered; Resume lets the server go on, and a
// paused server can be stopped.
func TestMariaDBPause(t *testing.T) {
	m := StartMariaDB(t)
	m.Pause(t)
	if reply, err := mysqlGreeting(m.Addr()); err == nil {
		t.Errorf("greeting while paused: %q", reply)
	}
	m.Resume(t)
	if _, err := mysqlGreeting(m.Addr()); err != nil {
		t.Errorf("no greeting after Resume: %v", err)
	}
	m.Pause(t)
	m.Stop(t)
	m.Start(t)
	if got := m.Query(t, "SELECT 2"); got != "2" {
		t.Fatalf("SELECT 2 after a paused Stop: %q", got)
	}
}

// mysqlGreeting returns the first bytes the server sends on a new
// connection (its handshake), waiting at most 300ms.
func mysqlGreeting(addr string) (string, error) {
	return exchange(addr, "", 300*time.Millisecond, func(r string) bool { return len(r) > 0 })
}
