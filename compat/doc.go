// Package compat is the home of the locks for services with no ZooKeeper:
// the recipes contract (recipes.Locker, recipes.Lease) over Redis,
// memcached and SQL databases, one package per backend, so that a program
// links only the client it uses:
//
//   - compat/redislock: one Redis, a primary under Sentinel, or one Redis
//     Cluster slot. Fair (FIFO), fenced, no polling; WithReplicaAck waits
//     for replicas.
//   - compat/redlock: N independent Redis servers, by Redlock. No fencing
//     token.
//   - compat/memcachedlock: one memcached. Fenced; waiters poll.
//   - compat/sqllock: a lease table in PostgreSQL or MySQL/MariaDB, over
//     database/sql with the user's driver. Fair, fenced, safe behind
//     PgBouncer in transaction mode, no polling.
//
// Every backend reads the same: NewClient takes the connection (a go-redis
// client, the Redlock servers, a gomemcache client, a *sql.DB and its
// dialect) as the user configured it, authentication and TLS included;
// New makes a Lock by name on a Client; Client.Close waits for the
// clean-ups still running in the background, so a program that closes its
// Clients leaves nothing behind. Switching backends is a change of
// constructor.
//
// On every backend the holder is told first: the lease's context is
// cancelled, with a cause that is recipes.ErrLockLost, before the server
// may let the lock go, from a deadline the client keeps on its own
// monotonic clock (the send time of the last confirmed acquire or renewal,
// plus the TTL, less recipes.DriftMargin), renewed by a watchdog. Every
// release is compare-and-delete. A refused password, permission or
// certificate fails an acquisition at once with an error that is
// recipes.ErrRefused. An Acquire whose context ends while its servers do
// not answer (the last attempt failed; for Redlock, too few answered for
// a majority) returns an error that is recipes.ErrUnreachable too, naming
// that attempt's error: an outage, not a lock found held. A server in its
// quiet period after a restart is recipes.ErrQuiet (TryAcquire), and is
// reported to a trace as locktrace.AcquireDoneInfo.Quiet, not Contended.
//
// Names: zklock (cmd/zklock) takes a lock path with a leading /, and on
// these backends passes it to New as the name, exactly: zklock --backend
// redis /orders is redislock.New(c, "/orders"), the key "{/orders}", while
// redislock.New(c, "orders") is "{orders}", another lock. A program that
// shares a lock with zklock gives New the PATH zklock is given.
//
// Why the recipes most teams copy (SETNX then EXPIRE, GETSET timestamps,
// get-then-delete, a lock table without expiry, session advisory locks)
// are unsafe, and how each backend works, is in docs/design.md, "compat".
package compat
