package sqlbench

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// TestAdvisoryLockThroughPgBouncer documents a peer's failure: a session
// advisory lock taken through PgBouncer in transaction mode belongs to
// whichever server connection ran that transaction, not to the client.
// Two clients (two *sql.DB, one connection each, pgx in the simple
// protocol as PgBouncer's transaction mode needs) both get
// pg_try_advisory_lock(42) = true: PgBouncer gave the second client's
// transaction the server connection the first client's ran on, which
// already holds the lock, and a session advisory lock is reentrant.
//
// It is deterministic as written: the harness's PgBouncer
// (default_pool_size = 20, server_round_robin off) opens a server
// connection only when no idle one is there, and reuses the most recently
// used idle one, so the two transactions, one after the other, run on the
// same backend. The loop only guards against a pooler that opens a
// second server connection anyway (pgx's connection setup), trying
// afresh with another key, a bounded number of times.
func TestAdvisoryLockThroughPgBouncer(t *testing.T) {
	pg := harness.StartPostgres(t)
	bouncer := harness.StartPgBouncer(t, pg)
	dsn := bouncer.DSN() + "&default_query_exec_mode=simple_protocol"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clients := make([]*sql.DB, 2)
	for i := range clients {
		db, err := OpenDB(Postgres, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { _ = db.Close() })
		if err := db.PingContext(ctx); err != nil {
			t.Fatalf("client %d through pgbouncer: %v", i, err)
		}
		clients[i] = db
	}
	const attempts = 10
	for n := range attempts {
		key := int64(42 + n)
		var got [2]bool
		var pid [2]int64
		for i, db := range clients {
			if err := db.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1), pg_backend_pid()", key).Scan(&got[i], &pid[i]); err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
		}
		if !got[0] {
			t.Fatalf("pg_try_advisory_lock(%d): the first client did not get a free lock", key)
		}
		if got[1] {
			held := pg.Query(t, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted")
			t.Logf("pg_try_advisory_lock(%d) = true for both clients (server backends %d and %d, attempt %d); "+
				"advisory locks held on the server: %s: two holders of one lock", key, pid[0], pid[1], n+1, held)
			if pid[0] != pid[1] {
				t.Errorf("both got the lock on different backends %d and %d: not the failure this documents", pid[0], pid[1])
			}
			return
		}
		t.Logf("attempt %d: the second client ran on backend %d, the first on %d: the lock was refused; trying another key", n+1, pid[1], pid[0])
	}
	t.Fatalf("in %d attempts through PgBouncer, the second client never got a lock the first held", attempts)
}
