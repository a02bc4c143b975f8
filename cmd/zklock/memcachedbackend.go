package main

import (
	"context"
	"fmt"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// memcachedLock connects to the memcached of --memcached (checking that it
// answers) and returns the lock named name and what closes it: the
// memcachedlock Client's Close first, which waits for its clean-ups in the background (an item
// an attempt left when a signal ended the wait, a release that failed;
// ttl.CloseWait at most, and says so on stderr when it had to stop them),
// then the client.
func (b *backendOptions) memcachedLock(ctx context.Context, name string, rep *reporter) (recipes.Locker, func(), error) {
	mc := memcache.New(b.memcached)
	if err := ping(ctx, mc.Ping); err != nil {
		_ = mc.Close()
		return nil, nil, fmt.Errorf("cannot reach memcached at %s: %w", b.memcached, err)
	}
	// The address is given also without the eviction check: the fencing
	// tokens need the server's start time, which the lock reads there.
	copts := []memcachedlock.ClientOption{memcachedlock.WithServerAddr(b.memcached)}
	if b.keyPrefix != "" {
		copts = append(copts, memcachedlock.WithKeyPrefix(b.keyPrefix))
	}
	if b.noCheck {
		copts = append(copts, memcachedlock.WithoutEvictionCheck())
	}
	c, err := memcachedlock.NewClient(mc, copts...)
	if err != nil {
		_ = mc.Close()
		return nil, nil, err
	}
	l, err := memcachedlock.New(c, name, memcachedlock.WithTTL(b.ttlOr(memcachedlock.DefaultTTL)))
	if err != nil {
		_ = mc.Close()
		return nil, nil, err
	}
	return l, func() {
		if err := c.Close(); err != nil {
			rep.errorf("%v", err)
		}
		_ = mc.Close()
	}, nil
}
