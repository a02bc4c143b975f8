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
// script; when the lock is held it queues the caller (a list, in arrival
// order) and, to the first in the queue, returns the holder's remaining
// TTL. Releasing is one
// script: it deletes the key only if it is still the caller's (compare and
// delete), hands the lock to the first waiter still alive and publishes
// the grant (the token with it) on the channel of that waiter's Client, so
// a release wakes one client, not all that wait. The grant is published,
// with the lock set in the waiter's name, only if the master counts a
// subscriber on that channel (PUBSUB NUMSUB), because Redis passes what a
// master publishes on to its replicas, whose subscribers it does not
// count, and a waiter whose subscription is on a replica (after a
// failover) must not see a grant the lock does not back. The waiter holds from the
// grant with no further request: its deadline counts from the send time of
// its last attempt before the grant (which ran before the release that
// granted it, so the key expires later than that deadline). A grant that
// is too old for that (a renewal already due), a lost message, or a
// crashed holder (a timer covers both: the first in the queue times it by
// the holder's remaining TTL, those behind it, which a release serves, by
// the TTL; with jitter) make the waiter run the acquire script once more, which
// confirms the grant and renews it. Two commands per contended acquisition
// (queue and release; three when confirming), none of them polling, twelve
// commands executed by Redis in all (the two scripts and ten inside
// them), and waiters served in the order they queued (FIFO). A queuing
// request that Redis runs twice (go-redis sends a command again when its
// connection broke before the reply) finds its entry and keeps it: a
// waiter has one place in the queue. A waiter whose
// context ends leaves the queue, and releases the lock if it was handed to
// it meanwhile. A waiter whose client no longer listens (it crashed, or its
// subscription is down) is skipped at once: the master counts no
// subscriber on its channel, and the lock goes to the next waiter; one that comes back
// queues again, behind. The queue expires three TTLs after the last
// attempt that touched it.
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
// (deleted under the holder), or fails with an error that trying again
// cannot mend (a refused authentication or permission, which an
// acquisition returns at once, recipes.ErrRefused): before Redis can
// let the lock go and anyone else be granted it. Other renewal errors (a
// connection reset by a failover, a slot migration's TRYAGAIN or ASK, and
// a certificate refused to a new connection, which ends an acquisition
// at once but not a lease: a connection of the pool may still work) are
// tried again until the deadline. A process paused
// for longer than the margin cannot be told in time by any timer: fence
// with the token.
//
// # What the promise covers, and what it needs of the server
//
// Told first, as above, holds when:
//   - the holder crashes, pauses (up to the margin), or is cut off from
//     Redis either way: its deadline passes before the key expires;
//   - the key is deleted under it (an operator's DEL): the next renewal
//     tells it, and until then the holder's own key keeps others out only
//     if it is there: a deleted key can be granted to another at once;
//     do not delete lock keys by hand;
//   - Redis restarts and forgets the lock (no persistence, or an older
//     snapshot): a server that started less than a TTL ago grants nothing
//     (the quiet period, kept in the key "{name}:quiet"), and the holder's
//     next renewal takes its key back, so its lease goes on. The cost: a
//     new or restarted server grants nothing for its first TTL. Processes
//     that share a lock must use the same TTL (the quiet period is the
//     first user's).
//
// It needs of the server:
//   - no eviction: maxmemory 0, or maxmemory-policy noeviction. Under any
//     other policy (volatile-* too: the keys have TTLs) Redis may evict a
//     held lock under memory pressure and grant it to another client. The
//     first use of a Client reads both settings (INFO memory, which works
//     where CONFIG is blocked) and refuses such a server with an error
//     that names the setting; WithoutEvictionCheck skips the check, to
//     accept the risk (the lock still needs INFO: its scripts read the
//     server's uptime with it, for the quiet period).
//   - a clock that does not step: Redis keeps expiries on its wall clock,
//     and a step forward expires every lock at once (each lease ends at its
//     next renewal; until then another may be granted).
//
// It does not cover a FLUSHALL or FLUSHDB (the server's uptime says nothing
// of it), nor a failover to a replica that had not received the lock
// (replication is asynchronous; see below): tokens still grow across both,
// so a fenced resource refuses the stale holder. Use ZooKeeper, or Redlock
// over independent servers, where that matters more than the cost.
//
// # Redis Cluster
//
// Over a *redis.ClusterClient the lock lives in the slot of its hash tag,
// and its grants are sharded: SPUBLISH on a channel of the waiter's
// client in that slot (Redis 7.0 or later), served by the slot's shard
// alone, where a classic PUBLISH crosses the cluster bus to every node.
// A Client subscribes (SSUBSCRIBE, one connection) per slot its waiters
// wait in. When the slot moves to another master (resharding) or a master
// fails over, Redis unsubscribes the old owner's subscribers; the Client
// subscribes again on the new owner, and grants published meanwhile
// reach no one, so that waiter is skipped and queues again, or its timer
// wakes it. go-redis subscribes where its slot map says, which just after
// a failover may still name the old master, now a replica (Redis lets a
// replica serve SSUBSCRIBE): the Client checks each subscription with an
// empty SPUBLISH from a script (which runs on the master) and moves one
// the master does not count, with a backoff, once go-redis has reloaded
// its map. Until then a release skips that Client's waiters, which its
// timers cover. A ClusterClient that subscribes on replicas (ReadOnly,
// RouteByLatency, RouteRandomly) is refused: the release's count, on the
// master, would never see its subscriptions. A renewal that meets a migration
// (ASK, TRYAGAIN) or a failover (connections reset) is tried again until
// the deadline; after a dial error the Client has go-redis reload its slot
// map, so the next try finds the new master.
//
// # Sentinel, replicas and WithReplicaAck
//
// redis.NewFailoverClient works as the client: it follows the master the
// sentinels name. Replication is asynchronous: a lock written on a master
// that fails over before a replica received it is gone on the promoted
// replica, and another client may be granted it while its holder still
// trusts its lease, until the holder's next renewal (a third of the TTL
// at most) finds it gone and tells it. Measured under Sentinel with
// lagging replicas (TestSentinelFailoverWithLaggingReplicas), that window
// was -50 to +49 ms when a renewal was being retried through the failover.
// WithReplicaAck(n, timeout) closes it as far as Redis can: an
// acquisition, a confirmed handoff and a renewal count only once n
// replicas acknowledged them (WAIT, in the same round trip), so with
// lagging replicas the lock is not taken at all. It is best-effort, as
// WAIT is: a replica that acknowledged need not be the one promoted, and
// WAIT makes nothing durable. Fencing with the token remains the
// guarantee.
//
// A replica promoted less than a TTL after it started grants nothing
// until it is a TTL old (the quiet period above), and a holder's renewal
// takes its key back there.
//
// # Secured servers
//
// Authentication and TLS are the client's: NewClient takes the go-redis
// client as it is. redis.Options has Username and Password (an ACL user;
// Password alone is the default user's, requirepass) and TLSConfig;
// redis.NewFailoverClient's FailoverOptions have the same for the master
// and replicas, and SentinelUsername and SentinelPassword for the
// sentinels; redis.ClusterOptions have them for every node.
//
// WithKeyPrefix puts the lock's keys and its grant channel under a
// prefix, so that a Redis ACL can grant a user the lock's own keys and
// channels and nothing else: ACLRule(prefix) is the rule (Redis 7.0 or
// later), and its doc says what each command is for and which ones a
// deployment may leave out. Give the user on every server the lock may
// meet: under Sentinel the master and every replica (one is promoted),
// on a Redis Cluster every node. The keys of a lock with prefix "app:"
// named "orders" are "app:{orders}", "app:{orders}:fence",
// "app:{orders}:queue" and "app:{orders}:quiet"; a Client's grant channel
// is "app:zkrecipes:redislock:grants:<its id>" (on a cluster
// "app:{<tag>}zkrecipes:redislock:grants:<its id>", in the lock's slot).
//
// A wrong password or none, a key, channel or command that the user's ACL
// refuses (NOPERM, or in a script "The user executing the script
// can't ..."), and a server certificate that the client does not trust
// (or a server that does not speak TLS) cannot be mended by trying again:
// Acquire and TryAcquire return at once an error that is
// recipes.ErrNotAcquired and says which, as
//
//	recipes: lock not acquired: redislock: acquire orders: WRONGPASS invalid username-password pair or user is disabled.
//	recipes: lock not acquired: redislock: acquire orders: NOAUTH Authentication required.
//	recipes: lock not acquired: redislock: acquire orders: tls: failed to verify certificate: x509: certificate signed by unknown authority
//	recipes: lock not acquired: redislock: acquire orders: NOPERM this user has no permissions to access one of the keys used as arguments (the lock uses the keys {orders}* and the channel zkrecipes:redislock:grants:<id>: give it a key prefix its user may use (WithKeyPrefix), and grant the user redislock.ACLRule(prefix))
//
// A holder whose renewal meets one of them (a password rotated, a rule
// changed under it) is told at once: its lease ends, with a cause that is
// recipes.ErrLockLost and names the error.
package redislock
