// Package ttl is the lease the TTL-based locks of compat share (redislock,
// redlock, memcachedlock, sqllock). Its context ends, with a cause that is
// recipes.ErrLockLost, before the server may let the lock go: a local
// deadline on the monotonic clock (the send time of the request that took
// or last renewed the lock, plus the TTL, less a margin) is enforced
// whatever the network does, and a watchdog renews the lock every third
// of the TTL. A release that fails goes on in the background, counted
// for the client's Close, until the server would have let the lock go.
package ttl
