package main

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// A zklock waiting for a lock on memcached, stopped by SIGINT while its
// add is on the server, exits 130 having deleted what it added: nothing
// of it is left. The lock waits out the quiet period of a new server
// (started by the test's own lock, whose marker and quiet item are the
// only items left), so each of zklock's polls adds the lock item and
// deletes it again; its connection is slow (200 ms each way), so the item
// is there for most of each poll, and the test signals zklock once it
// sees it there.
func TestInterruptedMemcachedWaiterLeavesNothing(t *testing.T) {
	m := harness.StartMemcached(t)
	p := harness.NewProxy(t, m.Addr())
	path := lockPath(t)
	admin := memcache.New(m.Addr())
	t.Cleanup(func() { _ = admin.Close() })
	c, err := memcachedlock.NewClient(admin, memcachedlock.WithServerAddr(m.Addr()))
	require.NoError(t, err)
	own, err := memcachedlock.New(c, path, memcachedlock.WithTTL(time.Minute))
	require.NoError(t, err)
	_, err = own.TryAcquire(context.Background())
	require.ErrorIs(t, err, memcachedlock.ErrQuiet, "a new server starts the quiet period")
	require.NoError(t, c.Close())
	_, err = admin.Get(path)
	require.ErrorIs(t, err, memcache.ErrCacheMiss, "the test's lock left its item")
	require.Equal(t, 2, memcachedItems(t, m.Addr()), "the marker and the quiet item")

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
	assert.Equal(t, signalExit(syscall.SIGINT), waiter.wait(t))
	assert.Contains(t, waiter.stderr.String(), "zklock: interrupted by SIGINT while waiting for memcachedlock "+path)
	assert.Empty(t, waiter.stdout.String(), "the command ran")

	_, err = admin.Get(path)
	assert.True(t, errors.Is(err, memcache.ErrCacheMiss), "zklock left its lock item in memcached (%v)", err)
	assert.Equal(t, 2, memcachedItems(t, m.Addr()), "items in memcached: only the marker and the quiet item of the test's lock")
}

// memcachedItems is how many items the memcached at addr holds (stats:
// curr_items). An item deleted by a compare-and-swap with a past expiry,
// as the lock's, counts until it is read: read the lock's item first.
func memcachedItems(t *testing.T, addr string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, waitLimit)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(waitLimit)))
	_, err = conn.Write([]byte("stats\r\n"))
	require.NoError(t, err)
	sc := bufio.NewScanner(conn)
	for sc.Scan() && sc.Text() != "END" {
		if v, ok := strings.CutPrefix(sc.Text(), "STAT curr_items "); ok {
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no curr_items in memcached's stats (%v)", sc.Err())
	return 0
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

// A memcached that requires authentication (ASCII auth, -Y) refuses
// zklock, which has no credentials to give it: exit 69, with and without
// --timeout, naming the refusal; never 75 "held".
func TestMemcachedAuthRefused(t *testing.T) {
	m := harness.StartMemcachedSecure(t, harness.MemcachedSecurity{Users: map[string]string{"locker": "s3cr3t"}})
	for _, timeout := range []string{"", "30s"} {
		args := []string{"--backend", "memcached", "--memcached", m.Addr()}
		if timeout != "" {
			args = append(args, "--timeout", timeout)
		}
		code, p := runZklock(t, append(args, lockPath(t), "--", "echo", "ran")...)
		assert.Equal(t, exitUnavailable, code, "timeout %q: stderr: %s", timeout, p.stderr)
		assert.Contains(t, p.stderr.String(), "zklock: memcached "+m.Addr()+": authentication refused: ", "timeout %q", timeout)
		assert.Contains(t, p.stderr.String(), "CLIENT_ERROR unauthenticated", "timeout %q: the server's answer", timeout)
		assert.Empty(t, p.stdout.String(), "the command must not run")
	}
}
