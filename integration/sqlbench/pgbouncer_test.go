package sqlbench

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/sqllock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// TestAdvisoryLockThroughPgBouncer documents a peer's failure, beside
// compat/sqllock's success on the same pooler with the same two clients
// (sqllockThroughPgBouncer): a session
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
			sqllockThroughPgBouncer(ctx, t, clients)
			return
		}
		t.Logf("attempt %d: the second client ran on backend %d, the first on %d: the lock was refused; trying another key", n+1, pid[1], pid[0])
	}
	t.Fatalf("in %d attempts through PgBouncer, the second client never got a lock the first held", attempts)
}

// sqllockThroughPgBouncer: the same two clients, through the same pooler
// that gave them one backend, take a compat/sqllock lock: the first holds
// it, the second is refused (ErrLocked) until the first releases, then
// gets it with a higher token.
func sqllockThroughPgBouncer(ctx context.Context, t *testing.T, clients []*sql.DB) {
	locks := make([]*sqllock.Lock, len(clients))
	for i, db := range clients {
		c, err := sqllock.NewClient(db, sqllock.PostgreSQL) // no listener: LISTEN cannot work through the pooler
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if err := c.CreateTable(ctx); err != nil {
			t.Fatal(err)
		}
		if locks[i], err = sqllock.New(c, "bouncer"); err != nil {
			t.Fatal(err)
		}
	}
	first, err := locks[0].TryAcquire(ctx)
	if err != nil {
		t.Fatalf("sqllock, first client: %v", err)
	}
	if _, err := locks[1].TryAcquire(ctx); !errors.Is(err, recipes.ErrLocked) {
		t.Fatalf("sqllock, second client while the first holds it: got %v, want ErrLocked", err)
	}
	t1, _ := first.Token()
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := locks[1].TryAcquire(ctx)
	if err != nil {
		t.Fatalf("sqllock, second client after the release: %v", err)
	}
	if t2, _ := second.Token(); t2 <= t1 {
		t.Errorf("tokens %d then %d: not increasing", t1, t2)
	}
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	t.Log("sqllock through the same pooler: the second client was refused while the first held the lock")
}
