// Package memcachedlock is the lock contract of recipes on one memcached
// server, for services that have nothing else. A program that uses it
// links neither ZooKeeper nor go-redis.
//
//	mc := memcache.New("127.0.0.1:11211")
//	c, _ := memcachedlock.NewClient(mc,
//		memcachedlock.WithServerAddr("127.0.0.1:11211")) // checks -M; gives tokens
//	defer c.Close() // waits for its clean-ups
//	l, _ := memcachedlock.New(c, "orders", memcachedlock.WithTTL(10*time.Second))
//	lease, err := l.Acquire(ctx)
//
// Acquire adds the lock item with a TTL in whole seconds; waiters poll
// with backoff, up to MaxPoll apart (memcached has no notification), so
// waiting is not fair. Renewal and release are compare-and-swap: a release
// never deletes an item someone else now holds.
//
// Tokens combine the server's start time with the item's CAS value, so
// they strictly increase across holders, a cold restart included, as long
// as the server's clock does not go back across a restart and the lock
// stays on one server. They need the server's address (WithServerAddr):
// without it leases have no token.
//
// memcached counts TTLs in whole seconds of a clock that jumps by two
// about every twenty minutes, so the lease trusts the lock for the TTL
// less 2 s less recipes.DriftMargin, counted from the send time of the
// last confirmed add or renewal, and renews every third of that; MinTTL
// is 3 s. The lease's context is cancelled, with a cause that is
// recipes.ErrLockLost, when that time passes unrenewed, when a renewal
// finds the item someone else's or gone (deleted, evicted), or on an
// error that trying again cannot mend: before memcached can let the lock
// go. A process paused for longer than the margin cannot be told in time:
// fence with the token.
//
// A server that restarted or was flushed may have forgotten a lock its
// holder still trusts, so it grants nothing for the TTL + 2 s (ErrQuiet),
// and a live holder's renewal puts its item back. It must not evict:
// start memcached with -M; the first use checks (ErrEvictions),
// WithoutEvictionCheck skips it. A released lock leaves a marker of a few
// bytes per key ever used: use a bounded set of keys.
//
// TLS and authentication are the gomemcache client's (its DialContext;
// see the secured example). A refused authentication or certificate fails
// Acquire at once with an error that is recipes.ErrRefused.
//
// docs/design.md, "compat", has the clock, the token's conditions, the
// quiet period's items and what stays on the server.
package memcachedlock
