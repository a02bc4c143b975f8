// Package redislock is the lock contract of recipes on one Redis server (or
// one Redis Cluster slot): a fair, fenced lock whose holder is told before
// anyone else can be granted it. A program that uses it links neither
// ZooKeeper nor gomemcache.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	c, _ := redislock.NewClient(rdb) // one subscription, shared by its waiters
//	defer c.Close()
//	l, _ := redislock.New(c, "orders", redislock.WithTTL(10*time.Second))
//	lease, err := l.Acquire(ctx)
//
// # How it works
//
// Acquiring is one script, one round trip: it sets the lock key with NX and
// a relative PX TTL and issues the lease's fencing token in the same
// script; when the lock is held it queues the caller (a sorted set by
// arrival) and returns the holder's remaining TTL. Releasing is one
// script: it deletes the key only if it is still the caller's (compare and
// delete), hands the lock to the first waiter still alive and publishes
// the grant. The waiter, woken by the grant on its Client's subscription (or
// by a timer from the holder's remaining TTL, with jitter, should the
// message be lost or the holder crash), runs the acquire script once more,
// which confirms the grant and renews it: three commands per contended
// acquisition, none of them polling, and waiters served in the order they
// queued (FIFO). A waiter whose context ends leaves the queue, and releases
// the lock if it was handed to it meanwhile; a waiter that crashed is
// skipped once its entry expires (three TTLs without a refresh).
//
// # Tokens
//
// Tokens strictly increase across the holders of one lock on one Redis: a
// counter bumped by every grant (not by re-entry), and never below the
// server's clock in microseconds, so that they keep growing across a
// restart without persistence (as long as the server's clock does not go
// back). Pass them to what you protect (as session.FencedResource does in
// ZooKeeper).
//
// # Session loss: when the holder is told
//
// The lease keeps a local deadline on the monotonic clock: the send time of
// the request that took (or last renewed) the lock, plus the TTL, less
// recipes.DriftMargin(ttl). A watchdog renews every third of the TTL with a
// compare-token script, and each confirmed renewal moves the deadline from
// its send time. The lease's context is cancelled, with a cause that is
// recipes.ErrLockLost, when the deadline passes unrenewed (also when the
// network is silent), when a renewal finds the lock gone or someone else's
// (deleted or evicted under the holder), or on any renewal error: before
// Redis can let the lock go and anyone else be granted it. A process
// paused for longer than the margin cannot be told in time by any timer:
// fence with the token.
//
// Redis keeps expiries on its wall clock: a server clock step forward can
// expire every lock at once (the lease ends, as above, at its next
// renewal). A Redis that restarts empty loses every lock the same way;
// with a replica promoted after a failover, a lock written only to the old
// primary can be granted twice: that is what Redlock, or ZooKeeper, is for.
package redislock
