// Package redlock is the lock contract of recipes over N independent Redis
// servers, as the Redlock algorithm describes: a lock is held when a
// majority of the servers took it within its validity. It has no fencing
// token: Lease.Token says so, (0, false).
//
//	servers := []redlock.Redis{redis.NewClient(...), redis.NewClient(...), redis.NewClient(...)}
//	l, _ := redlock.New(servers, "orders", redlock.WithTTL(10*time.Second))
//	defer l.Close() // waits for its clean-ups: nothing of it left on the servers
//	lease, err := l.Acquire(ctx)
//
// # How it works
//
// Acquire runs one script on every server at once, each bounded by a short
// per-server timeout (WithServerTimeout): it sets the key "{name}" with NX
// and a relative PX TTL, unless the server is quiet (below). It holds the
// lock when a majority took it and less than the TTL less the margin has
// passed since it started; otherwise it releases what it took and tries
// again after a random delay (no wake-up across independent servers:
// waiters are not served in order). A watchdog extends the lock on every
// server every third of the TTL, and an extension counts only when a
// majority confirms it. Release deletes the key where it is still ours
// (compare and delete).
//
// # When the holder is told
//
// The lease's context is cancelled, with a cause that is
// recipes.ErrLockLost, recipes.DriftMargin(ttl) before the TTL counted from
// the start of the last acquisition or extension a majority confirmed
// (whatever the network does), when an extension finds the lock gone or
// someone else's on too many servers for a majority, or on a failed
// extension: before a majority of the servers can let the lock go.
//
// # Restarts: Redlock's delayed restart, done by the clients
//
// Redlock's safety needs every server to keep, for the TTL, what it
// acknowledged. A server that restarts without its data has forgotten the
// lock, so the Redlock description asks for one of two things: persistence
// with fsync at every write (appendonly yes, appendfsync always), or
// "delayed restarts", a restarted server kept unavailable for at least a
// TTL, until every lock it may have forgotten has expired. Without either,
// restarts of a minority one after the other give two holders: with three
// servers, server 0 restarted empty and a second later server 1, a
// contender took the two restarted servers right after the second
// restart, while the holder, whose extensions had counted the servers
// that still had its key without putting it back, trusted its lease for
// hundreds of milliseconds more.
//
// Here the clients delay the restart, with no server setting. The acquire
// script first reads the lock's marker "{name}:quiet" (redisguard): when it
// is missing (the server's first use of the lock since it started, or a
// day unused), it is set to the server's start (from its uptime) plus the
// TTL, on the server's own clock. A server that started less than a TTL
// ago takes nothing and does not count toward a majority; the holder's
// extension puts its key back (SET PX) on such a server where it is
// missing, and counts it: nobody can have been granted the key there since
// the restart. So restarts, of any servers in any order, give no second
// holder while a lease is live (every server of the majority that last
// confirmed it either still has its key or is quiet until the lease has
// ended), and a holder that goes on extending keeps its lease through
// them.
//
// The cost: a server counts again only a TTL after it started (up to a
// second more: the uptime is in whole seconds), so a new or restarted
// server grants nothing for its first TTL, and a lock released while
// servers are quiet is granted again once enough of them are out of their
// quiet period, or still free, for a majority. Measured in the tests with
// a TTL of 2s: three servers, server 0 restarted and server 1 a second
// later, the holder releasing half a second after the second restart: the
// next holder was granted 2.1s after the first restart (half a second
// after the release), when server 0 came out of its quiet period. After a
// majority restarts at once, nothing is granted for a TTL. Processes that
// share a lock must use the same TTL: the quiet period is the first
// user's.
//
// # What the promise does not cover
//
//   - A server that forgets without restarting: a FLUSHALL or FLUSHDB, a
//     DEL of the key by an operator. There is no quiet period then; the
//     holder is told by its next extension if a majority lost the key, and
//     until then another may be granted it.
//   - A failover to a replica that had not received the key (replication
//     is asynchronous), behind the same address.
//   - A restart from persistence that has the marker but not the lock's
//     latest key (an RDB snapshot, or AOF with appendfsync everysec): the
//     marker says the quiet period is long over. Run the servers without
//     persistence (the quiet period then covers every restart) or with
//     appendfsync always (nothing acknowledged is lost).
//   - A server clock that steps: Redis keeps expiries, and the quiet
//     period, on its wall clock.
//   - A holder paused for longer than the margin, or network delays beyond
//     it: Redlock's safety rests on bounded drift, pauses and delays (see
//     No fencing token).
//
// # What it needs of the servers, and what it checks
//
//   - Independent servers. New refuses the same client twice and two
//     clients with the same address (as written); it cannot tell replicas
//     of one server, or one server behind two names.
//   - No eviction: maxmemory 0, or maxmemory-policy noeviction. At the
//     Lock's first use of each server it reads both settings (INFO memory)
//     and refuses a server that may evict: Acquire returns an error that
//     names the server and the setting, whatever the other servers say.
//     A server whose settings cannot be read within the server timeout
//     (unreachable, slow) counts as down for that attempt, as for the
//     script, and is checked again at the next: the lock may then be
//     granted by a majority of the others, as when the server is down.
//     WithoutEvictionCheck skips the check (the lock still needs INFO: its
//     scripts read the server's uptime with it, for the quiet period).
//
// # Errors
//
// Errors that trying again cannot mend (a closed client, a refused
// authentication or ACL, a server certificate the client does not trust,
// a script the server rejects) end Acquire at once when they leave too
// few servers for a majority. They end a lease in the same case only
// (certificates aside: a renewal tries again until the lease's deadline,
// since a connection of the pool may still work); one server's such
// error beside a majority that may still answer is tried again, as a
// transient one is. Other errors (an
// unreachable server, a timeout) are tried again after the random delay
// until ctx ends, and Acquire returns at ctx's end, once what its last
// attempt took is released (past ctx's end: a server timeout, and 2 s at
// most in all). Where a server did not answer by then, the release goes
// on in the background until the keys would have expired anyway; Close
// waits for it.
//
// # No fencing token
//
// There is no single order of writes across independent servers, so no
// number that orders the holders. Kleppmann ("How to do distributed
// locking", 2016): a lock without a fencing token cannot protect storage
// from a holder delayed by a pause or the network, and Redlock's safety
// rests on bounded clock drift, pauses and network delay. Antirez ("Is
// Redlock safe?", 2016): the algorithm assumes bounded drift on purpose,
// and a resource that needs fencing can use the lock's random value as a
// compare-and-set key instead of a counter. Use redislock (one server, with
// tokens) or ZooKeeper when you need to fence.
//
// # Secured servers
//
// Authentication and TLS are the clients': New takes the go-redis clients
// as they are, each with its redis.Options Username and Password (an ACL
// user; Password alone is the default user's, requirepass) and TLSConfig.
// Over TLS a new connection costs a handshake (round trips and crypto)
// within the per-server timeout: DefaultServerTimeout of a short TTL (5ms
// to 10ms up to a TTL of a second) may be too short for it, and the
// server then counts as down for that attempt; raise WithServerTimeout,
// or keep connections open (redis.Options.MinIdleConns).
//
// WithKeyPrefix puts the lock's keys under a prefix on every server, so
// that a Redis ACL can grant a user the lock's own keys and nothing else:
// ACLRule(prefix) is the rule (Redis 7.0 or later), and its doc says what
// each command is for. The keys of a lock with prefix "app:" named
// "reports" are "app:{reports}" and "app:{reports}:quiet"; it uses no
// channel.
//
// A wrong password or none, a key or command that the user's ACL refuses
// (NOPERM, or in a script "The user executing the script can't ..."), and
// a server certificate that the client does not trust (or a server that
// does not speak TLS) cannot be mended by trying again: when they leave
// too few servers for a majority, Acquire and TryAcquire return at once an
// error that is recipes.ErrNotAcquired and recipes.ErrRefused and names
// each server's, as
//
//	recipes: lock not acquired: redlock orders: 3 of 3 servers cannot take it, 2 needed: 10.0.0.1:6379: WRONGPASS invalid username-password pair or user is disabled.; 10.0.0.2:6379: ...
//	recipes: lock not acquired: redlock orders: 3 of 3 servers cannot take it, 2 needed: 10.0.0.1:6379: NOAUTH Authentication required.; ...
//	recipes: lock not acquired: redlock orders: 3 of 3 servers cannot take it, 2 needed: 10.0.0.1:6379: tls: failed to verify certificate: x509: certificate signed by unknown authority; ...
//	recipes: lock not acquired: redlock orders: 3 of 3 servers cannot take it, 2 needed: 10.0.0.1:6379: NOPERM this user has no permissions to access one of the keys used as arguments; ... (the lock uses the keys {orders}*: give it a key prefix its user may use (WithKeyPrefix), and grant the user redlock.ACLRule(prefix))
package redlock
