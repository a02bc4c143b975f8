// Package memcachedlock is the lock contract of recipes on one memcached
// server, for services that have nothing else. A program that uses it
// links neither ZooKeeper nor go-redis.
//
//	mc := memcache.New("127.0.0.1:11211")
//	l, _ := memcachedlock.New(mc, "orders",
//		memcachedlock.WithServerAddr("127.0.0.1:11211"), // checks that memcached runs with -M
//		memcachedlock.WithTTL(10*time.Second))
//	lease, err := l.Acquire(ctx)
//
// # How it works
//
// Acquire adds the lock item (add: only if absent) with a TTL in whole
// seconds, then reads it back for its CAS value, with the lock's marker
// and quiet items in the same request (GetMulti): two round trips. When
// another holds it, the waiter polls with exponential backoff and jitter,
// up to MaxPoll apart (memcached has no notification), so waiting is not
// fair. The holder renews by compare-and-swap with the CAS it holds, every
// third of the time it trusts the lock, and Release deletes by
// compare-and-swap with an expiry of -1 (the item expires at once):
// atomic, so it never deletes an item someone else now holds, as the
// common get-then-delete does.
//
// # Tokens
//
// A token is the start time of the memcached process that granted the
// lock, in seconds since 1970 by the server's clock, times 10^9, plus the
// lock item's CAS value at acquisition (renewals and Release
// compare-and-swap with the item's own CAS). memcached keeps one CAS
// counter per process, shared by every key: it grows across all keys and
// survives eviction, so a later holder's token on one process is higher.
// A cold restart counts CAS values from 1 again, but the new process
// started later, and its tokens are higher than any of the process before
// it; a warm restart (-e) keeps both the CAS counter and the start time.
// The start time ("stats": time less uptime, fixed for the life of the
// process) is the value of the lock's marker (below), written by the
// Lock that writes the marker: each acquisition reads it with the lock
// item, in the same request, at no cost. A marker without one (written by
// a Lock without the address, or by an earlier version of this package,
// whose tokens were the CAS value alone and so are lower) is given it by
// the first Lock with the address that reads it. Tokens strictly increase
// across the holders of one lock, a cold restart included, as long as:
//
//   - the server's clock, when memcached starts, is later than when the
//     process before it started by most of the time that one ran (the
//     quiet period below makes that at least 2 s before it grants a
//     lock): a clock stepped back, across a cold restart, by about as
//     long as memcached had run lets tokens go back, and a step while it
//     runs changes nothing (it keeps its start time);
//   - the CAS counter grows by fewer than 300 million a second on
//     average (memcached stores a few million items a second at most);
//   - the lock stays on one server: moved to another memcached, its
//     tokens keep growing only if that one started (by its clock) after
//     the first did;
//   - the marker is the lock's own: an operator who writes it (rather
//     than deleting it) may break the order.
//
// So tokens need the server's address (WithServerAddr, also with
// WithoutEvictionCheck): a Lock without it gives leases no token
// (Token reports none). A server that refuses "stats" fails its
// acquisitions with an error that says so. Pass tokens to what you
// protect (as session.FencedResource does in ZooKeeper).
//
// # When the holder is told
//
// memcached (1.6) counts TTLs in whole seconds of its own clock
// (current_time: the whole seconds of CLOCK_MONOTONIC read at each tick of
// a timer). The timer is re-armed for a second after each tick, so ticks
// come a little more than a second apart (0.1 to 1.5 ms more on average,
// measured on Linux with memcached 1.6.18: its event loop wakes late by up
// to a millisecond) and their phase drifts; when a tick crosses a second
// boundary, every 20 minutes or so (10 minutes to a few hours),
// current_time moves by 2. An item written in the stale second before such
// a jump expires at the jump: up to 2 s before its TTL, not one (the test
// TestCoarseClockJump makes it happen). So the lease trusts the lock
// for the TTL less 2 s less recipes.DriftMargin(ttl), counted from the
// send time of the last confirmed add or renewal, and renews it every
// third of that; MinTTL is 3 s. The lease's context is cancelled, with a
// cause that is recipes.ErrLockLost, when that time passes unrenewed (a
// renewal that fails on the network is tried again until then), when a
// renewal finds the item someone else's, or gone while the server is not
// quiet (deleted, evicted), or on an error that trying again cannot mend
// (ErrPermanent of the ttl engine: no server configured, a malformed
// request). A process paused for longer than the margin cannot be told in
// time by any timer: fence with the token.
//
// # A server that may have forgotten a lock grants nothing
//
// A memcached that restarts, or is flushed (flush_all), has forgotten every
// lock while their holders still trust their leases for up to a TTL. So
// each lock has two more items: its marker, key+":alive", which never
// expires, says that the server has not forgotten since it was written,
// and holds the server's start time (see Tokens), and its quiet item,
// key+":quiet". A client that finds the marker missing (the first use of
// the key since the server started, or since it lost its data) adds the
// quiet item, with an expiry of the TTL + 2 s, then the marker (and reads
// the server's start time again: if the server restarted meanwhile, it
// takes the marker back); while the quiet item is there the lock is
// granted to no one: an Acquire that added the lock item deletes it again
// (compare and delete) and polls on, and TryAcquire fails with an error
// that is recipes.ErrLocked and ErrQuiet. By the time the quiet item expires
// (after the TTL at the earliest, memcached's clock may cut it 2 s short)
// every lease the server may have forgotten has ended by its holder's own
// clock. A holder whose renewal finds its item gone while the server is
// quiet puts it back (add, with its own value: no one can have been
// granted the lock since), so a restart does not end a lease that is
// still renewed. With the server's address (WithServerAddr) a missing
// marker on a server that has run for longer than the TTL + 3 s (its
// "stats" uptime) starts no quiet period: such a server forgot nothing a
// holder still trusts, unless it was flushed (flush_all is then not
// covered, as Redis's FLUSHALL is not). The cost: a restarted server, a
// new one, and (without the address) a flushed one or each key's first
// use, grant nothing for one TTL + 2 s. Processes that share a lock must
// use the same TTL (the quiet period is its first finder's).
//
// # Eviction is a setting
//
// memcached evicts items (least recently used first) when its memory is
// full, unless it runs with -M (--disable-evictions: then a write that
// does not fit fails with "out of memory"). An evicted lock item lets
// another client in while its holder trusts its lease, until the holder's
// next renewal finds it gone. So New needs WithServerAddr, the address of
// mc's server: the first Acquire reads its settings (stats settings) and
// refuses, with an error that is ErrEvictions (and permanent), a server
// that runs with evictions on. WithoutEvictionCheck skips the check and
// accepts the risk. Keep the server's memory well above what it stores:
// with -M a full server refuses new locks (Acquire retries, TryAcquire
// fails) but never drops a held one.
//
// # What stays in memcached
//
// A released lock leaves its marker behind (key+":alive", a few bytes, no
// expiry): one per lock key ever used, until the server restarts or is
// flushed. Use a bounded set of lock keys. The quiet item expires a TTL +
// 2 s after a restart; lock items expire at their TTL when their holder
// dies, and are deleted at once by Release (or by a clean-up in the
// background, when Release's context ends or the network fails). An
// Acquire whose context ends while its add is out waits for the answer
// and deletes the item it added before it returns (2 s at most; then in
// the background). Close waits for the clean-ups in the background
// (ttl.CloseWait at most): a program that releases its leases and closes
// its Locks before it exits leaves nothing but markers behind.
//
// # Secured servers
//
// TLS and authentication are the client's: New takes the gomemcache client
// as it is, and memcache.Client's DialContext makes every connection of
// its pool. For a memcached that speaks TLS (-Z), a tls.Dialer's
// DialContext. For one that asks each connection to authenticate (-Y,
// ASCII authentication, memcached 1.5.15 or later), a DialContext that
// sends "set <any key> 0 0 <length>\r\n<user> <password>\r\n" on each
// new connection and reads STORED before it returns the connection (see
// the secured example); gomemcache does not speak the binary protocol,
// and so not SASL (-S). The eviction check (WithServerAddr) connects with
// mc's DialContext too. WithKeyPrefix keeps the lock's items under a
// prefix (memcached has no per-key permissions: a prefix keeps the locks
// of applications that share a server apart).
//
// A refused authentication (memcached answers CLIENT_ERROR), a
// connection that did not authenticate, and a server certificate that the
// client does not trust cannot be mended by trying again: Acquire and
// TryAcquire return at once an error that is recipes.ErrNotAcquired and
// recipes.ErrRefused and says which (a renewal that meets a certificate refused tries again
// until the lease's deadline: a connection of the client's may still
// work), as (the first as the example's DialContext words it)
//
//	recipes: lock not acquired: memcachedlock app:orders: dial tcp 10.0.0.1:11211: memcached authentication refused: CLIENT_ERROR authentication failure
//	recipes: lock not acquired: memcachedlock app:orders: read the eviction setting of memcached at 10.0.0.1:11211 (stats settings): CLIENT_ERROR unauthenticated
//	recipes: lock not acquired: memcachedlock app:orders: tls: failed to verify certificate: x509: certificate signed by unknown authority
package memcachedlock
