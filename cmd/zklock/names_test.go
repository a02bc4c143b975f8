package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// zklock's PATH is the library's name as it is, the leading / included
// (see the help): while zklock holds PATH, the library's New(c, PATH)
// finds it held, and New(c, PATH without its /) is another lock, free.
func TestCLIAndLibraryNames(t *testing.T) {
	r := harness.StartRedis(t)
	m := harness.StartMemcached(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	rdb := redis.NewClient(&redis.Options{Addr: r.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	rc, err := redislock.NewClient(rdb)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rc.Close() })
	mc, err := memcachedlock.NewClient(memcache.New(m.Addr()), memcachedlock.WithServerAddr(m.Addr()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = mc.Close() })

	for _, tc := range []struct {
		name string
		args []string
		lock func(name string) (recipes.Locker, error)
	}{
		{"redis", []string{"--backend", "redis", "--redis", r.Addr(), "--ttl", "3s"}, func(name string) (recipes.Locker, error) {
			return redislock.New(rc, name, redislock.WithTTL(3*time.Second))
		}},
		{"memcached", []string{"--backend", "memcached", "--memcached", m.Addr(), "--ttl", "3s"}, func(name string) (recipes.Locker, error) {
			return memcachedlock.New(mc, name, memcachedlock.WithTTL(3*time.Second))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := lockPath(t)
			holder := startZklock(t, append(tc.args, path, "--", "sh", "-c", holdScript)...)
			holder.waitOutput(t, holder.stdout, "ready")

			same, err := tc.lock(path)
			require.NoError(t, err)
			_, err = same.TryAcquire(ctx)
			assert.ErrorIs(t, err, recipes.ErrLocked, "New(c, %q) is zklock's lock", path)
			assert.NotErrorIs(t, err, recipes.ErrQuiet, "held, not quiet")

			if tc.name == "redis" { // memcached: a key's first use is quiet
				other, err := tc.lock(strings.TrimPrefix(path, "/"))
				require.NoError(t, err)
				lease, err := other.TryAcquire(ctx)
				require.NoError(t, err, "New(c, %q) is another lock", strings.TrimPrefix(path, "/"))
				require.NoError(t, lease.Release(ctx))
			}
			holder.closeStdin(t)
			assert.Equal(t, exitOK, holder.wait(t))
		})
	}
}
