// Package redislock is the lock contract of recipes on one Redis server, a
// primary under Sentinel (redis.NewFailoverClient), or one Redis Cluster
// slot (*redis.ClusterClient): a fair, fenced lock whose holder is told
// before anyone else can be granted it. A program that uses it links
// neither ZooKeeper nor gomemcache.
//
//	c, _ := redislock.NewClient(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}))
//	defer c.Close() // waits for its clean-ups: nothing left on the server
//	l, _ := redislock.New(c, "orders", redislock.WithTTL(10*time.Second))
//	lease, err := l.Acquire(ctx)
//
// Acquiring is one script, one round trip. Waiters queue on the server in
// arrival order, and a release hands the lock to the first of them,
// announced to its Client alone: no polling, no herd. A Client holds one
// subscription shared by all its waiters. A release that leaves no waiter
// keeps the lock's key, for a day, as "-", the last token, the server's
// run id and a witness of its run (LASTSAVE): the next acquisition reads
// there that nobody waits and that the server forgot nothing since, and
// takes the lock with four commands. The holder's value carries a mark
// once a waiter may have queued behind it; the release of an unmarked
// one does not look at the queue: two commands (docs/benchmarks-compat.md).
//
// Tokens strictly increase across the holders of one lock, also across a
// restart without persistence, a failover to a lagging replica or an
// eviction, as long as the server's clock does not go back. Pass them to
// what you protect.
//
// The lease's context is cancelled, with a cause that is
// recipes.ErrLockLost, when its deadline (the send time of the last
// confirmed acquire or renewal, plus the TTL, less recipes.DriftMargin)
// passes unrenewed, whatever the network does, when a renewal finds the
// lock gone or someone else's, or meets a refused password or permission:
// before Redis can let the lock go. A watchdog renews every third of the TTL and tries
// transient errors again until the deadline. A process paused for longer
// than the margin cannot be told in time by any timer: fence with the
// token.
//
// It needs a server that cannot evict the lock (maxmemory 0, or
// maxmemory-policy noeviction; the first use checks, WithoutEvictionCheck
// skips it) and whose clock does not step. A server that started less than
// a TTL ago grants nothing, so a restart cannot grant a lock its holder
// still trusts; processes that share a lock must use the same TTL. Not
// covered: FLUSHALL, a lock key deleted by hand, and a failover to a
// replica that had not received the lock (WithReplicaAck narrows it):
// tokens keep growing across all three, so a fenced resource refuses the
// stale holder.
//
// Authentication and TLS are the go-redis client's settings. WithKeyPrefix
// and ACLRule give a Redis user the lock's keys and channels and nothing
// more. A refused password, permission or certificate fails Acquire at
// once with an error that is recipes.ErrRefused.
//
// docs/design.md, "compat", has the scripts, the grant protocol, Cluster
// and Sentinel, the keys and channels, and the measured failover window.
package redislock
