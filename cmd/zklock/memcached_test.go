package main

import (
	"context"
	"errors"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// SIGINT while zklock waits on memcached, with its add on the server: it
// exits having deleted what it added, so nothing of it is left. The lock
// waits out the quiet period of a new server (started by the test's own
// lock, whose marker and quiet item stay), so each of zklock's polls adds
// the lock item and deletes it again; its connection is slow (200 ms each
// way), so the item is there for most of each poll, and the test signals
// zklock once it sees it there.
func TestMemcachedSignalWhileWaiting(t *testing.T) {
	m := harness.StartMemcached(t)
	p := harness.NewProxy(t, m.Addr())
	path := lockPath(t)
	admin := memcache.New(m.Addr())
	t.Cleanup(func() { _ = admin.Close() })
	own, err := memcachedlock.New(admin, path, memcachedlock.WithServerAddr(m.Addr()), memcachedlock.WithTTL(time.Minute))
	require.NoError(t, err)
	_, err = own.TryAcquire(context.Background())
	require.ErrorIs(t, err, memcachedlock.ErrQuiet, "a new server starts the quiet period")
	require.NoError(t, own.Close())

	p.Latency(t, 200*time.Millisecond)
	waiter := startZklock(t, "--backend", "memcached", "--memcached", p.Addr(), "--ttl", "3s", "-v", path, "--", "echo", "ran")
	waitUntil(t, "zklock's lock item in memcached", func() (bool, string) {
		if waiter.exited() {
			t.Fatalf("zklock exited: %v\nstderr:\n%s", waiter.cmd.ProcessState, waiter.stderr)
		}
		_, err := admin.Get(path)
		return err == nil, "stderr:\n" + waiter.stderr.String()
	})
	waiter.signal(t, syscall.SIGINT)
	assert.Equal(t, 130, waiter.wait(t))
	assert.Contains(t, waiter.stderr.String(), "zklock: interrupted by SIGINT while waiting for memcachedlock "+path)
	assert.Empty(t, waiter.stdout.String())

	_, err = admin.Get(path)
	assert.True(t, errors.Is(err, memcache.ErrCacheMiss), "zklock left its lock item in memcached (%v)", err)
}

// With --without-eviction-check zklock still gives the memcached lock the
// server's address: the fencing token needs the server's start time.
func TestMemcachedTokenWithoutEvictionCheck(t *testing.T) {
	m := harness.StartMemcached(t)
	env := runEnv(t, "--backend", "memcached", "--memcached", m.Addr(), "--ttl", "3s", "--without-eviction-check", lockPath(t))
	token, err := strconv.ParseInt(env["token"], 10, 64)
	require.NoError(t, err, "ZKLOCK_TOKEN %q", env["token"])
	assert.Positive(t, token)
}
