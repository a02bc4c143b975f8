// Package sqllock is the lock contract of recipes on a PostgreSQL or
// MySQL/MariaDB database: a fair, fenced lock whose holder is told before
// anyone else can be granted it, for services that have a database and no
// ZooKeeper or Redis. It works over database/sql and links no driver: open
// the *sql.DB with github.com/jackc/pgx/v5/stdlib or
// github.com/go-sql-driver/mysql yourself.
//
//	db, _ := sql.Open("pgx", "postgres://app@db/app")
//	listener, _ := pgxlistener.Parse("postgres://app@db/app") // compat/sqllock/pgxlistener: links pgx
//	c, _ := sqllock.NewClient(db, sqllock.PostgreSQL, sqllock.WithListener(listener))
//	defer c.Close() // waits for its clean-ups: nothing left in the database
//	_ = c.CreateTable(ctx) // once, or apply c.DDL() with your migrations
//	l, _ := sqllock.New(c, "orders", sqllock.WithTTL(10*time.Second))
//	lease, err := l.Acquire(ctx)
//
// The lock is a row of a lease table (holder, token, expiry), judged by
// the database's clock alone, and changed by one autocommit statement per
// operation, so it works through PgBouncer in transaction mode or
// ProxySQL. Waiters do not poll, and are served in the order they queued:
// on PostgreSQL a release hands the lock to the first waiter and tells its
// Client by NOTIFY (its Listener); on MySQL waiters wait inside the server
// in GET_LOCK, and each waiting Acquire and each lease holds a connection
// of the pool. Session advisory locks are not used: they break behind a
// pooler, outlive a vanished holder and say nothing to a holder that lost.
//
// What waiting costs the database, while a holder holds and renews the
// lock (a statement a third of its trusted time): on PostgreSQL the first
// waiter of the queue calls the function once per holder's expiry (it
// takes the lock of a holder that vanished), the next waiter once every
// two TTLs and, with a Listener, those further back once every five (to
// keep their place), and pgx's database/sql driver
// adds its "-- ping" before each of those statements on a pooled
// connection idle for over a second (stdlib.OptionShouldPing turns it
// off); on MySQL the first waiter, which holds a second GET_LOCK name
// of the lock (its queue's head), wakes from GET_LOCK on the companion
// at each of the holder's expiries and sends two statements (the wait
// and a read of the row's remaining time), and the waiters behind it
// wait in GET_LOCK for the head and send two statements every three
// TTLs (to take a lock left free by a head that vanished in silence).
// A lock nobody waits for is no row on PostgreSQL: it is taken by one
// plain INSERT and let go by one plain DELETE; the function runs only
// when the INSERT finds the row (held, expired or waited for) or the
// DELETE finds waiters, and a Lock that found them calls it at once
// until a release leaves no row.
//
// Tokens strictly increase across the holders of one lock, also when the
// row is deleted (on PostgreSQL a free lock is no row) or a failover
// brings it back older, as long as the database's clock does not go
// back: they are one above the row's last, where there is a row, and
// never below the database's clock in microseconds.
//
// The lease's context is cancelled, with a cause that is
// recipes.ErrLockLost, when its deadline (the send time of the statement
// that took or last renewed the lock, plus the TTL, less
// recipes.DriftMargin) passes unrenewed, whatever the network does, or
// when a renewal finds the row someone else's: before the database can let
// the lock go. A watchdog renews every third of that and tries errors
// again until the deadline. A process paused for longer than the margin
// cannot be told in time: fence with the token.
//
// It needs durable commits: the first use refuses synchronous_commit off
// or innodb_flush_log_at_trx_commit 0 (ErrDurability;
// WithoutDurabilityCheck skips it). Told-first across a failover needs
// synchronous replication; tokens stay ordered without it. A refused
// password or certificate fails Acquire at once with an error that is
// recipes.ErrRefused.
//
// docs/design.md, "compat", has the statements, the PostgreSQL function,
// the MySQL wake-up, replication, and what the usual INSERT/DELETE lock
// table and cirello-io/pglock get wrong.
package sqllock
