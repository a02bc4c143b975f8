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
// the grant (the token with it) on the channel of that waiter's Client, so
// a release wakes one client, not all that wait. The waiter holds from the
// grant with no further request: its deadline counts from the send time of
// its last attempt before the grant (which ran before the release that
// granted it, so the key expires later than that deadline). A grant that
// is too old for that (a renewal already due), a lost message, or a
// crashed holder (a timer from the holder's remaining TTL, with jitter,
// covers both) make the waiter run the acquire script once more, which
// confirms the grant and renews it. Two commands per contended acquisition
// (queue and release; three when confirming), none of them polling, and
// waiters served in the order they queued (FIFO). A waiter whose context
// ends leaves the queue, and releases the lock if it was handed to it
// meanwhile; a waiter that crashed is skipped once its entry expires (three
// TTLs without a refresh).
//
// # Tokens
//
// Tokens strictly increase across the holders of one lock on one Redis: a
// counter bumped by every grant (not by re-entry), and never below the
// server's clock in microseconds, so that they keep growing when the
// counter is lost or comes back older than the tokens issued since (a
// restart without persistence or from an older snapshot, a failover to a
// lagging replica, an eviction), as long as the server's clock does not go
// back and the lock is granted fewer than a million times a second on
// average. Pass them to what you protect (as session.FencedResource does
// in ZooKeeper).
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
