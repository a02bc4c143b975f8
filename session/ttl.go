package session

import (
	"context"
	"time"
)

// MaxTTL is the longest TTL a server accepts (ZooKeeper's
// EphemeralType.TTL maximum: 2^40 - 1 ms, about 34 years).
const MaxTTL = (1<<40 - 1) * time.Millisecond

// CreateTTL creates path like Create, as a node of a TTL mode
// (PersistentWithTTL, PersistentSequentialWithTTL): the server deletes it
// once it has had no child and no write for ttl (checked every
// znode.container.checkIntervalMs, a minute by default, so it may live
// that much longer). The server must run with
// zookeeper.extendedTypesEnabled=true; one that does not refuses it with
// an ErrTTLDisabled error. ttl is whole milliseconds, from 1 ms to MaxTTL.
func (c *Client) CreateTTL(ctx context.Context, path string, data []byte, mode CreateMode, ttl time.Duration) (string, error) {
	if !mode.HasTTL() {
		return "", invalid("create %s: mode %v takes no TTL: use Create, or PersistentWithTTL or PersistentSequentialWithTTL", path, mode)
	}
	if ttl < time.Millisecond || ttl > MaxTTL {
		return "", invalid("create %s: TTL %v (want 1ms to %v)", path, ttl, MaxTTL)
	}
	return c.create(ctx, path, data, mode, ttl)
}
