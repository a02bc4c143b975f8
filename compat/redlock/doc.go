// Package redlock is the lock contract of recipes over N independent Redis
// servers, as the Redlock algorithm describes: a lock is held when a
// majority of the servers took it within its validity. It has no fencing
// token: Lease.Token says so, (0, false).
//
//	servers := []redlock.Redis{redis.NewClient(...), redis.NewClient(...), redis.NewClient(...)}
//	c, _ := redlock.NewClient(servers)
//	defer c.Close() // waits for its clean-ups: nothing left on the servers
//	l, _ := redlock.New(c, "orders", redlock.WithTTL(10*time.Second))
//	lease, err := l.Acquire(ctx)
//
// Acquire asks every server at once, each within a short per-server
// timeout (WithServerTimeout), and retries after a random delay when no
// majority took the lock: waiters poll and are not served in order. A
// watchdog extends the lock on every server every third of the TTL; an
// extension counts only when a majority confirms it.
//
// The lease's context is cancelled, with a cause that is
// recipes.ErrLockLost, recipes.DriftMargin(ttl) before the TTL counted from
// the start of the last acquisition or extension a majority confirmed
// (whatever the network does), or when an extension finds the lock gone or
// someone else's on too many servers for a majority: before a majority of
// the servers can let the lock go.
//
// Restarts need no server setting: a server that started less than a TTL
// ago grants nothing and counts toward no majority, and a live holder's
// extension puts its key back there, so restarts of any servers in any
// order give no second holder while a lease is live. The cost: a new or
// restarted server grants nothing for its first TTL; processes that share
// a lock must use the same TTL. Not covered: a FLUSHALL or a key deleted
// by hand, a failover to a replica behind the same address, a restart from
// persistence that lost the latest key (run without persistence or with
// appendfsync always), a server clock that steps, and pauses or delays
// beyond the margin.
//
// It needs independent servers (NewClient refuses one client or address
// twice; it cannot tell replicas of one server) that cannot evict the lock
// (maxmemory 0 or noeviction; checked at each server's first use,
// WithoutEvictionCheck skips it). Authentication and TLS are the go-redis
// clients' settings; WithKeyPrefix and ACLRule give a Redis user the
// lock's keys and nothing more. Refusals that leave too few servers for a
// majority fail Acquire at once with an error that is recipes.ErrRefused
// and names each server's.
//
// Without a fencing token it cannot protect storage from a paused or
// delayed holder: use redislock or ZooKeeper to fence. docs/design.md,
// "compat", has the algorithm, the restart analysis and why there is no
// token.
package redlock
