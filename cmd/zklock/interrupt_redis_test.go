package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// redisAdmin is a go-redis client of addr, closed at t's cleanup.
func redisAdmin(t *testing.T, addr string) *redis.Client {
	t.Helper()
	r := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// redisKeys lists the keys of a Redis, sorted.
func redisKeys(t *testing.T, r *redis.Client) []string {
	t.Helper()
	keys, err := r.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	slices.Sort(keys)
	return keys
}

// A zklock waiting for a lock on one Redis, stopped by SIGINT, exits 130
// and leaves nothing of its own there: its queue entry is gone when it has
// exited, and once the holder releases only the lock's fencing counter,
// quiet marker and released value are left (they outlive every use, by
// design).
func TestInterruptedRedisWaiterLeavesNothing(t *testing.T) {
	r := harness.StartRedis(t)
	admin := redisAdmin(t, r.Addr())
	path := lockPath(t)
	key := "{" + path + "}"
	args := []string{"--backend", "redis", "--redis", r.Addr(), "--ttl", "2s", path}
	holder := startZklock(t, append(args, "--", "sh", "-c", holdScript)...)
	holder.waitOutput(t, holder.stdout, "ready")
	waiter := startZklock(t, append(args, "--", "echo", "ran")...)
	waitUntil(t, "the waiter queued", func() (bool, string) {
		n, err := admin.LLen(context.Background(), key+":queue").Result()
		return err == nil && n == 1, strconv.FormatInt(n, 10)
	})
	waiter.signal(t, syscall.SIGINT)
	assert.Equal(t, signalExit(syscall.SIGINT), waiter.wait(t))
	assert.Empty(t, waiter.stdout.String(), "the command ran")
	assert.Equal(t, []string{key, key + ":fence", key + ":quiet"}, redisKeys(t, admin), "the waiter's queue entry is gone")
	holder.closeStdin(t)
	require.Equal(t, 0, holder.wait(t), "stderr: %s", holder.stderr)
	assert.Equal(t, []string{key, key + ":fence", key + ":quiet"}, redisKeys(t, admin))
	v, err := admin.Get(context.Background(), key).Result()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(v, "- "), "the lock is released: %q", v)
}

// The same over Redlock: the holder holds on two servers of three, so
// that the waiter's every attempt takes the third and must give it back.
// Stopped by SIGINT, the waiter exits 130 with nothing of its own on any
// server.
func TestInterruptedRedlockWaiterLeavesNothing(t *testing.T) {
	rs := harness.StartRedisN(t, 3)
	admins := make([]*redis.Client, len(rs))
	addrs := ""
	for i, r := range rs {
		admins[i] = redisAdmin(t, r.Addr())
		if i > 0 {
			addrs += ","
		}
		addrs += r.Addr()
	}
	path := lockPath(t)
	key := "{" + path + "}"
	args := []string{"--backend", "redlock", "--redis", addrs, "--ttl", "2s", path}
	holder := startZklock(t, append(args, "--", "sh", "-c", holdScript)...)
	holder.waitOutput(t, holder.stdout, "ready")
	ctx := context.Background()
	// The third server restarts: in its quiet period, the holder's
	// renewal puts back the key it forgot (as it must), and would put
	// back one removed then. So would it on a server slow to start under
	// load, still quiet when the holder had a majority of the other two.
	// The test removes the key once the quiet period is over, so that it
	// stays removed.
	rs[2].Stop(t)
	rs[2].Start(t)
	waitQuietOver(t, admins[2], key+":quiet")
	// UNLINK, not DEL: the waiter's releases are counted by their DELs.
	require.NoError(t, admins[2].Unlink(ctx, key).Err())
	held, err := admins[0].Get(ctx, key).Result()
	require.NoError(t, err)

	waiter := startZklock(t, append(args, "--", "echo", "ran")...)
	waitUntil(t, "the waiter took the third server and gave it back, twice", func() (bool, string) {
		stats, err := admins[2].Info(ctx, "commandstats").Result()
		m := regexp.MustCompile(`cmdstat_del:calls=(\d+)`).FindStringSubmatch(stats)
		if err != nil || m == nil {
			return false, "no DEL yet"
		}
		n, _ := strconv.Atoi(m[1])
		return n >= 2, m[0]
	})
	waiter.signal(t, syscall.SIGINT)
	assert.Equal(t, signalExit(syscall.SIGINT), waiter.wait(t))
	assert.Empty(t, waiter.stdout.String(), "the command ran")
	for i, a := range admins {
		want := []string{key, key + ":quiet"}
		if i == 2 {
			want = want[1:]
		} else {
			v, err := a.Get(ctx, key).Result()
			require.NoError(t, err)
			assert.Equal(t, held, v, "server %d: the holder's key", i)
		}
		assert.Equal(t, want, redisKeys(t, a), "server %d", i)
	}
	holder.closeStdin(t)
	require.Equal(t, 0, holder.wait(t), "stderr: %s", holder.stderr)
	for i, a := range admins {
		assert.Equal(t, []string{key + ":quiet"}, redisKeys(t, a), "server %d", i)
	}
}

// waitQuietOver waits until the quiet period its marker (redisguard's:
// "END RUNID", END in the server's ms) gives a lock on r is over, by r's
// clock.
func waitQuietOver(t *testing.T, r *redis.Client, marker string) {
	t.Helper()
	waitUntil(t, "the quiet period over on "+r.Options().Addr, func() (bool, string) {
		ctx := context.Background()
		m, err := r.Get(ctx, marker).Result()
		if err != nil {
			return false, err.Error()
		}
		end, _, _ := strings.Cut(m, " ")
		endms, err := strconv.ParseInt(end, 10, 64)
		require.NoError(t, err, "marker %q", m)
		now, err := r.Time(ctx).Result()
		if err != nil {
			return false, err.Error()
		}
		return now.UnixMilli() >= endms, fmt.Sprintf("marker %q, server time %d ms", m, now.UnixMilli())
	})
}
