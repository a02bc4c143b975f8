package memcachedlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// releaseFailed returns a Lock of key on a new server m, through the
// proxy p, whose lease's Release failed on a blackholed connection: the
// release goes on in the background, and p is still blackholed.
func releaseFailed(t *testing.T, key string) (c *memcachedlock.Client, l *memcachedlock.Lock, m *harness.Memcached, p *harness.Proxy) {
	t.Helper()
	m = harness.StartMemcached(t)
	markFresh(t, client(t, m.Addr()), key)
	p = harness.NewProxy(t, m.Addr())
	awaitBackground(t)
	ctx := ctxT(t)
	c, l = newClientLock(t, client(t, p.Addr()), key, withServer(m, 20*time.Second)...)
	lease, err := l.Acquire(ctx)
	require.NoError(t, err)
	p.Blackhole(t)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	require.Error(t, lease.Release(short), "a release over a blackholed connection")
	return c, l, m, p
}

// Close waits for a release that failed and goes on in the background:
// when it returns, the lock's item is gone from memcached. Then the
// Client's locks take the lock no more.
func TestCloseWaitsForTheRelease(t *testing.T) {
	c, l, m, p := releaseFailed(t, "closed")
	// The network comes back while Close waits (were it not to wait, it
	// would return before, and the item would still be there).
	restore := time.AfterFunc(200*time.Millisecond, func() { p.Restore(t) })
	defer restore.Stop()
	require.NoError(t, c.Close())
	_, err := client(t, m.Addr()).Get("closed")
	require.ErrorIs(t, err, memcache.ErrCacheMiss, "Close returned before the release in the background freed the lock")

	for _, acquire := range []func(context.Context) (recipes.Lease, error){l.Acquire, l.TryAcquire} {
		_, err := acquire(ctxT(t))
		require.ErrorIs(t, err, recipes.ErrNotAcquired)
		require.ErrorIs(t, err, memcachedlock.ErrClosed)
		assert.Contains(t, err.Error(), "memcachedlock closed: memcachedlock: the Client is closed")
	}
	require.NoError(t, c.Close(), "a second Close")
}

// Close waits ttl.CloseWait at most: a release that cannot reach the
// server is stopped then, and Close says so (memcached lets the item go at
// its TTL).
func TestCloseGivesUpAtCloseWait(t *testing.T) {
	c, _, _, p := releaseFailed(t, "unreachable")
	defer p.Restore(t)
	start := time.Now()
	err := c.Close()
	t.Logf("Close returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "memcachedlock: ")
	assert.Contains(t, err.Error(), "clean-up(s) stopped unfinished")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.GreaterOrEqual(t, time.Since(start), ttl.CloseWait, "Close gave up before ttl.CloseWait")
}

// slowAnswer is a client whose first add of the lock item reaches the
// server at once but is answered only once the test closes gate: an
// answer slow on its way back.
type slowAnswer struct {
	*memcache.Client
	key          string
	landed, gate chan struct{}
	once         sync.Once
}

func (s *slowAnswer) Add(it *memcache.Item) error {
	err := s.Client.Add(it)
	if it.Key == s.key {
		first := false
		s.once.Do(func() { first = true })
		if first {
			close(s.landed)
			<-s.gate
		}
	}
	return err
}

// A waiter whose context ends while its add is on the server, unanswered,
// deletes the item before Acquire returns: nothing of it is left in
// memcached, not even for a moment after.
func TestGiveUpDeletesItsItem(t *testing.T) {
	m := harness.StartMemcached(t)
	markFresh(t, client(t, m.Addr()), "given-up")
	awaitBackground(t)
	mc := &slowAnswer{Client: client(t, m.Addr()), key: "given-up", landed: make(chan struct{}), gate: make(chan struct{})}
	c, l := newClientLock(t, mc, "given-up", withServer(m, 20*time.Second)...)
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx)
		done <- err
	}()
	await(t, mc.landed, "the add on the server")
	cancel()
	close(mc.gate)
	err := await(t, done, "Acquire's return after its context ended")
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.ErrorIs(t, err, context.Canceled)
	_, err = client(t, m.Addr()).Get("given-up")
	require.ErrorIs(t, err, memcache.ErrCacheMiss, "the waiter that gave up left its item behind")
	require.NoError(t, c.Close())
}
