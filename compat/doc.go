// Package compat is the home of the locks for services with no ZooKeeper:
// the recipes contract (recipes.Locker, recipes.Lease) over Redis,
// memcached and SQL databases, one package per backend, so that switching
// backends is a change of constructor, and a program links only the client
// it uses:
//
//   - compat/redislock: one Redis, a primary under Sentinel, or one Redis
//     Cluster slot. Fair (FIFO), fenced, one round trip to acquire, no
//     polling; WithReplicaAck waits for replicas.
//   - compat/redlock: N independent Redis servers, by Redlock. No fencing
//     token.
//   - compat/memcachedlock: one memcached. Fenced by the server's start
//     time and the item's CAS value, so tokens grow across restarts;
//     waiters poll.
//   - compat/sqllock: a lease table in PostgreSQL or MySQL/MariaDB, over
//     database/sql with the user's driver. Fair, fenced, one autocommit
//     statement per operation (safe behind PgBouncer), no polling: grants
//     by NOTIFY on PostgreSQL, waiters in GET_LOCK on MySQL.
//
// On every backend the holder is told first: the lease's context is
// cancelled, with a cause that is recipes.ErrLockLost, a margin
// (recipes.DriftMargin) before the server may let the lock go, from a
// deadline the client keeps on its own monotonic clock, renewed by a
// watchdog every third of the time it trusts the lock. Every release is
// compare-and-delete, and every failure path leaves nothing behind.
//
// Every backend takes the user's client as it is, so authentication and
// TLS are the client's settings. redislock, redlock and memcachedlock
// keep a lock's keys under a prefix of the user's choosing
// (WithKeyPrefix), and the Redis locks give the ACL rule that grants a
// user exactly their keys, channels and commands (ACLRule); their
// "Secured servers" sections say how, and what a refused password or
// certificate looks like.
//
// # Why not the recipes everyone copies
//
// SETNX then EXPIRE: two commands, so a client that dies between them
// leaves a key without a TTL, and the lock is held forever. SET with NX and
// PX in one command fixed that (Redis 2.6.12); every lock here sets the TTL
// in the same command or script that takes the lock.
//
// SETNX with a timestamp, and GETSET to take over an expired one (the old
// Redis documentation's recipe): it trusts the clients' clocks to agree,
// and a waiter that finds the lock expired overwrites the timestamp with
// GETSET even when another waiter took it over a moment earlier, so the
// live holder's expiry is moved by someone else, and two clients may each
// believe they hold the lock. Expiry here is the server's relative TTL,
// and the client keeps its own deadline on its monotonic clock.
//
// WATCH, MULTI, EXEC (optimistic transactions): no expiry, so a crashed
// holder keeps the lock, and under contention every waiter's transaction
// fails and retries, a herd that burns round trips. A Lua script is atomic
// without retries.
//
// Get then delete to release (a GET to check the value, then a DEL): two
// commands, so between them the key can expire and another client take the
// lock, which the DEL then deletes. The same with memcached's get then
// delete (laravel#26213, celery#3930). Releases here are one atomic
// compare-and-delete: a script on Redis, a compare-and-swap with an expiry
// of -1 on memcached.
//
// A SQL table of locks without expiry (INSERT to take, DELETE to release):
// a holder that crashes, or loses its connection after the INSERT
// committed, holds the lock until someone deletes the row by hand, and
// nothing tells a holder that it no longer holds it; a monitor that
// deletes old rows deletes live holders' rows when clocks disagree or a
// holder is slow. compat/sqllock's package doc goes through it step by
// step, and through session advisory locks (pg_advisory_lock, GET_LOCK),
// which break behind a pooler in transaction mode and outlive a holder
// whose host vanished by the server's TCP keepalive (two hours).
package compat
