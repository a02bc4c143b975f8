// Package sqllock is the lock contract of recipes on a PostgreSQL or
// MySQL/MariaDB database, over database/sql with the driver you choose: a
// fair, fenced lock whose holder is told before anyone else can be
// granted it, for services that have a database and no ZooKeeper or
// Redis. The package imports the standard library and this module only:
// open the *sql.DB with github.com/jackc/pgx/v5/stdlib or
// github.com/go-sql-driver/mysql yourself.
//
//	db, _ := sql.Open("pgx", "postgres://app@db/app")
//	c, _ := sqllock.NewClient(db, sqllock.PostgreSQL,
//		sqllock.WithListener(pgxlisten.New(config))) // github.com/zkrecipes/zkrecipes/contrib/pgxlisten
//	defer c.Close()
//	_ = c.CreateTable(ctx) // once, or apply c.DDL() with your migrations
//	l, _ := sqllock.New(c, "orders", sqllock.WithTTL(10*time.Second))
//	lease, err := l.Acquire(ctx)
//
// # A lease table, not advisory locks
//
// The lock is a row of a lease table: the name (its key), the holder's
// identity, the last fencing token and the expiry, judged by the
// database's clock alone (clock_timestamp() on PostgreSQL,
// UTC_TIMESTAMP(6) on MySQL): the clients' clocks never matter. Rows are
// never deleted, so a token is never reset by the lock itself. Every
// statement is one autocommit statement with no session state, so the
// lock works unchanged through PgBouncer in transaction mode (tested) or
// ProxySQL; MySQL's wake-up (GET_LOCK, below) is the one exception, and
// the row stays the only source of truth when a pooler breaks it.
//
// Session advisory locks (pg_advisory_lock, GET_LOCK used as the lock)
// are not offered: behind a pooler in transaction mode two clients can
// both hold one (they share a server session), a holder whose host
// vanished keeps its lock until the server's TCP keepalive ends its
// session (two hours by default), a failover frees every lock while the
// old holders still run, and nothing tells a holder that it lost its lock.
//
// # How it works on PostgreSQL
//
// One statement per operation: a PL/pgSQL function that CreateTable makes
// beside the table locks the row (SELECT ... FOR UPDATE), and takes the
// lock, queues the caller, or releases and hands the lock on. Waiters
// queue in the row (in arrival order, each entry alive for three TTLs
// without a refresh); a release (or an acquire that finds the lock
// expired) gives it to the first live waiter and tells it with
// pg_notify on the channel of its Client. The Client's Listener hears
// it on a connection of its own (LISTEN is session state: it connects to
// the server, not through a transaction pooler). The waiter holds from
// the grant with no further statement: its deadline counts from the send
// time of its last attempt before the grant. A lost notification, no
// Listener, or a crashed holder are covered by a timer at the holder's
// remaining TTL (with jitter): the next attempt confirms a grant, or
// takes a lock that expired. Two statements per contended acquisition
// (queue and release), none of them polling; waiters are served in the
// order they queued.
//
// # How it works on MySQL and MariaDB
//
// MySQL has no NOTIFY. The row is taken by one UPDATE that returns the
// new token in its reply (LAST_INSERT_ID), released by a compare-and-set
// UPDATE. Waiters do not poll: each waits inside the server in GET_LOCK on
// a companion name (a hash of the table and the lock's name), which the
// holder takes before the row, on a connection of its own, and lets go
// after releasing the row. GET_LOCK serves its waiters in arrival order,
// so the lock does too while holds are shorter than the TTL: a waiter
// never waits for the companion past the holder's expiry in the row (a
// holder whose host went silent keeps its companion until the server's
// keepalive ends its session), and then looks at the row and waits
// again, behind later waiters. A waiter that gives up has its wait in the
// server killed (KILL of its own session, which the same user may do).
// Each waiting Acquire and each lease holds one connection of the pool:
// with db.SetMaxOpenConns, leave room for them and for the renewals.
//
// # Tokens
//
// Tokens strictly increase across the holders of one lock: one above the
// last, and never below the database's clock in microseconds, so they keep
// growing when the row is deleted and made again, or comes back older than
// the tokens issued since (a failover to a standby that had not received
// the latest grant), as long as the clock does not go back and the lock is
// granted fewer than a million times a second on average. Pass them to
// what you protect.
//
// # Session loss: when the holder is told
//
// The lease keeps a local deadline on the monotonic clock: the send time
// of the statement that took (or last renewed) the lock, plus the TTL,
// less recipes.DriftMargin(ttl). A watchdog renews every third of that
// with a compare-holder UPDATE; a renewal error (a pooler or a failover
// makes short ones common) is tried again until the deadline, and each
// confirmed renewal moves the deadline from its send time. So is a new
// connection refused (SQLSTATE class 28, MySQL's access denied, a TLS
// certificate): a password or a certificate rotated on the server
// refuses the pool's new connections while those it holds still work
// (an acquisition ends at such an error at once, and it is
// recipes.ErrRefused, as a permission refused is: SQLSTATE 42501, MySQL's
// 1044 or 1142). The lease's
// context is cancelled, with a cause that is recipes.ErrLockLost, when the
// deadline passes unrenewed (also when the network is silent, or the
// database down), or when a renewal finds the row someone else's: before
// the database can let the lock go. A process paused for longer than the
// margin cannot be told in time by any timer: fence with the token. A
// release that cannot reach the database is retried in the background
// until the lock would expire; the lock then ends by expiry.
//
// # Nothing left behind
//
// A waiter that gives up (its context ends, an error) takes out what it
// put in the database before Acquire returns (its queue entry, a MySQL
// row its take may have landed on, its wait in GET_LOCK), bounded by a
// few seconds whatever its context says; only what the database does not
// confirm in time is retried in the background. Client.Close waits for
// those clean-ups and for releases retried in the background, up to
// ttl.CloseWait (5s): close the Client before the process exits, and
// nothing of it is left in the database.
//
// # What it needs of the database
//
//   - Durable commits: a crash must not forget what the server
//     acknowledged. At the Client's first use it reads synchronous_commit
//     (PostgreSQL; off is refused) or innodb_flush_log_at_trx_commit
//     (MySQL; 0 is refused), and refuses with an error that is
//     ErrDurability and names the setting; WithoutDurabilityCheck skips
//     the check. fsync off (PostgreSQL) or innodb_flush_log_at_trx_commit
//     2 lose commits only when the machine crashes, which the check
//     cannot see: do not run locks on such a server if its machine may.
//   - Replication: a failover to an asynchronous standby or replica may
//     lose the latest grant or renewal, and grant the lock to another
//     while its holder trusts its lease. Tokens stay ordered (above).
//     Told-first across a failover needs synchronous replication
//     (synchronous_standby_names with synchronous_commit on or
//     remote_apply; MySQL semi-synchronous replication with
//     rpl_semi_sync_master_wait_point AFTER_SYNC).
//   - The table: CreateTable (or the statements of DDL) makes it; the
//     first Acquire checks that it exists and says so when it does not.
//     Processes sharing a lock must run the same version of this package
//     (the function and the grants are its own); their TTLs may differ.
//
// # The lock table users write first, and what this lock does instead
//
// The recipe most services start with is a table with a unique key:
// INSERT a row to take the lock (a duplicate key means held), DELETE it to
// release, and a monitor thread that deletes rows whose update_time is
// old. Step by step, what breaks:
//
//   - No expiry: a holder that crashed holds the lock until the monitor
//     (or a person) deletes its row; golang-migrate's lock has none at all.
//     Here the row expires at its TTL by the database's clock.
//   - The monitor judges age with a clock and a threshold: a slow holder,
//     a paused one, or a monitor whose clock runs ahead deletes a live
//     holder's row, and the next INSERT succeeds while the first holder
//     still works: two holders, and nothing tells the first. Here the
//     holder renews, and its lease ends before its row can expire.
//   - DELETE by name is not compare-and-delete: a holder that outlived its
//     row deletes its successor's. Here every change compares the holder.
//   - Contended INSERTs of one key make InnoDB report deadlocks (1213) that
//     the recipe must retry: on MariaDB it manages about fifty
//     acquisitions a second at sixteen clients. Here waiters wait (in the
//     row's queue, or in GET_LOCK) and are handed the lock.
//   - Re-creating the row resets nothing it should not: tokens are
//     floored by the clock (above).
//
// cirello-io/pglock, the most used Go PostgreSQL lock, polls (a waiter
// sleeps a whole lease between tries), learns of a failed heartbeat only
// after heartbeat + lease while a contender may take over at the last
// heartbeat + lease (so two holders can overlap by up to a heartbeat),
// and draws its tokens from a CYCLE sequence, which wraps.
package sqllock
