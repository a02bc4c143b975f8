package memcachedlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const faultTTL = memcachedlock.MinTTL

// A holder whose connection is blackholed is told before the successor is
// granted the lock: at least the margin, less the client's scheduling
// allowance.
func TestHolderToldFirstUnderBlackhole(t *testing.T) {
	m := harness.StartMemcached(t)
	markFresh(t, client(t, m.Addr()), "blackhole")
	p := harness.NewProxy(t, m.Addr())
	awaitBackground(t)
	holder := newLock(t, client(t, p.Addr()), "blackhole", withServer(m, faultTTL)...)
	successor := newLock(t, client(t, m.Addr()), "blackhole", withServer(m, faultTTL)...)
	holdertest.HolderToldFirst(t, holder, successor, func() { p.Blackhole(t) }, recipes.DriftMargin(faultTTL)-10*time.Millisecond)
	p.Restore(t)
}

// A short outage (connections refused) does not end a lease: the renewal
// is tried again until the server answers. A long one ends it at its
// deadline, before the successor is granted the lock.
func TestRenewalAcrossAnOutage(t *testing.T) {
	m := harness.StartMemcached(t)
	markFresh(t, client(t, m.Addr()), "outage")
	p := harness.NewProxy(t, m.Addr())
	awaitBackground(t)
	// A TTL of 6 s is trusted 3.9 s after each renewal (every 1.3 s).
	const ttl = 6 * time.Second
	holder := newLock(t, client(t, p.Addr()), "outage", withServer(m, ttl)...)
	holdertest.ShortOutage(t, holder, func() { p.Cut(t) }, func() { p.Restore(t) }, 2*time.Second)
	successor := newLock(t, client(t, m.Addr()), "outage", withServer(m, ttl)...)
	holdertest.HolderToldFirst(t, holder, successor, func() { p.Cut(t) }, recipes.DriftMargin(ttl)-10*time.Millisecond)
	p.Restore(t)
}

// restartTTL is the TTL of the restart tests: the holder trusts its lease
// 2.94 s after each renewal (every 0.98 s), time enough for a restart.
const restartTTL = 5 * time.Second

// forgetters make memcached forget every item.
var forgetters = []struct {
	name   string
	forget func(t *testing.T, m *harness.Memcached)
}{
	{"stop+start", func(t *testing.T, m *harness.Memcached) { m.Stop(t); m.Start(t) }},
	{"kill+start", func(t *testing.T, m *harness.Memcached) { m.Kill(t); m.Start(t) }},
	{"flush_all", func(t *testing.T, m *harness.Memcached) { require.NoError(t, client(t, m.Addr()).FlushAll()) }},
}

// memcached forgets a held lock (a restart, a flush) while a waiter waits:
// the server is quiet for a TTL + 2 s, the holder's renewal puts its item
// back and its lease goes on, and the waiter is granted the lock only
// after the holder's Release.
func TestForgottenLockKeepsItsHolder(t *testing.T) {
	for _, tc := range forgetters {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := harness.StartMemcached(t)
			awaitBackground(t)
			markFresh(t, client(t, m.Addr()), "forgotten")
			ctx := ctxT(t)
			holder, err := newLock(t, client(t, m.Addr()), "forgotten", withServer(m, restartTTL)...).Acquire(ctx)
			require.NoError(t, err)
			waiter := acquireBehind(ctx, newLock(t, client(t, m.Addr()), "forgotten", withServer(m, restartTTL)...), holder)
			time.Sleep(200 * time.Millisecond) // let it poll
			start := time.Now()
			tc.forget(t, m)
			t.Logf("%s took %v", tc.name, time.Since(start).Round(time.Millisecond))
			select {
			case g := <-waiter:
				t.Fatalf("the waiter was granted the lock %v after the server forgot it (err %v; holder's lease ended: %v)",
					g.at.Sub(start), g.err, g.firstDone)
			case <-time.After(restartTTL + 3*time.Second): // the quiet period, and then some
			}
			require.NoError(t, holder.Err(), "the holder's lease ended: its renewal should have put its item back while the server was quiet")
			require.NoError(t, holder.Release(ctx))
			g := await(t, waiter, "the waiter's grant")
			require.NoError(t, g.err)
			assert.True(t, g.firstDone, "the waiter was granted the lock while the holder's lease was live")
			require.NoError(t, g.lease.Release(ctx))
		})
	}
}

// A holder that cannot renew (paused) while memcached restarts and a
// waiter waits: the restarted server grants nothing until the lock could
// have expired anyway, so the holder's lease ends first. The cost: the
// restarted server grants the lock one TTL (+ up to 2 s) after it is found
// forgotten.
func TestRestartGrantsNothingWhileTheHolderTrusts(t *testing.T) {
	for _, tc := range forgetters {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := harness.StartMemcached(t)
			awaitBackground(t)
			markFresh(t, client(t, m.Addr()), "paused")
			ctx := ctxT(t)
			stall := newStalled(t, m.Addr())
			holder, err := newLock(t, stall, "paused", withServer(m, restartTTL)...).Acquire(ctx)
			require.NoError(t, err)
			told := holdertest.ToldAt(holder)
			waiter := acquireBehind(ctx, newLock(t, client(t, m.Addr()), "paused", withServer(m, restartTTL)...), holder)
			time.Sleep(100 * time.Millisecond)
			start := time.Now()
			tc.forget(t, m)
			g := await(t, waiter, "the waiter's grant")
			require.NoError(t, g.err)
			defer func() { assert.NoError(t, g.lease.Release(ctx)) }()
			if !g.firstDone {
				t.Fatalf("the waiter was granted the lock %v after the server forgot it, while the holder still trusted its lease",
					g.at.Sub(start).Round(time.Millisecond))
			}
			t.Logf("granted %v after the server forgot (TTL %v: the quiet period lasts the TTL + 2 s, less up to 2 s); the holder was told %v before",
				g.at.Sub(start).Round(time.Millisecond), restartTTL, g.at.Sub(told.Get()).Round(time.Millisecond))
			assert.ErrorIs(t, holder.Err(), recipes.ErrLockLost)
			stall.open()
		})
	}
}

// Release with a context that has already ended, or over a network that
// fails, still frees the lock: the release goes on in the background, and
// another client takes the lock long before the TTL.
func TestReleaseFreesInTheBackground(t *testing.T) {
	const longTTL = 20 * time.Second
	m := harness.StartMemcached(t)
	awaitBackground(t)
	admin := client(t, m.Addr())
	ctx := ctxT(t)

	t.Run("cancelled context", func(t *testing.T) {
		markFresh(t, admin, "cancelled")
		lease, err := newLock(t, client(t, m.Addr()), "cancelled", withServer(m, longTTL)...).Acquire(ctx)
		require.NoError(t, err)
		done, cancel := context.WithCancel(ctx)
		cancel()
		t.Logf("Release(cancelled context): %v", lease.Release(done))
		next, err := tryUntil(ctx, newLock(t, client(t, m.Addr()), "cancelled", withServer(m, longTTL)...), 5*time.Second)
		require.NoError(t, err, "the lock was left held after a Release whose context had ended (TTL %v)", longTTL)
		require.NoError(t, next.Release(ctx))
	})

	t.Run("failing network", func(t *testing.T) {
		markFresh(t, admin, "cut")
		p := harness.NewProxy(t, m.Addr())
		awaitBackground(t)
		lease, err := newLock(t, client(t, p.Addr()), "cut", withServer(m, longTTL)...).Acquire(ctx)
		require.NoError(t, err)
		p.Blackhole(t)
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		err = lease.Release(short)
		cancel()
		t.Logf("Release over a blackholed connection: %v", err)
		require.Error(t, err)
		p.Restore(t)
		next, err := tryUntil(ctx, newLock(t, client(t, m.Addr()), "cut", withServer(m, longTTL)...), 5*time.Second)
		require.NoError(t, err, "the lock was left held after a Release that failed on the network (TTL %v)", longTTL)
		require.NoError(t, next.Release(ctx))
	})

	_, err := admin.Get("cut")
	assert.True(t, errors.Is(err, memcache.ErrCacheMiss), "left behind: %v", err)
}

// lossy is a client whose next n renewals (compare-and-swaps with an
// expiry) are done by the server but answered with an error, as when the
// answer is lost on the way back.
type lossy struct {
	*memcache.Client
	n atomic.Int32
}

func (l *lossy) CompareAndSwap(it *memcache.Item) error {
	err := l.Client.CompareAndSwap(it)
	if err == nil && it.Expiration > 0 && l.n.Add(-1) >= 0 {
		return errors.New("read tcp: i/o timeout (test: the answer was lost)")
	}
	return err
}

// A renewal whose answer is lost has changed the item's CAS: the holder
// finds its own value under the new CAS and goes on, and its Release then
// frees the lock at once. Were the lease lost, its release in the
// background would still free it: the lock is not left held for its TTL
// by a compare-and-delete with the old CAS.
func TestLostRenewalAnswer(t *testing.T) {
	const ttl = 10 * time.Second // renewed every 2.6 s
	m := harness.StartMemcached(t)
	awaitBackground(t)
	markFresh(t, client(t, m.Addr()), "lossy")
	ctx := ctxT(t)
	mc := &lossy{Client: client(t, m.Addr())}
	lease, err := newLock(t, mc, "lossy", withServer(m, ttl)...).Acquire(ctx)
	require.NoError(t, err)
	mc.n.Store(1)
	for deadline := time.Now().Add(2 * ttl); mc.n.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond) // until the renewal whose answer is lost
	}
	time.Sleep(200 * time.Millisecond)
	assert.NoError(t, lease.Err(), "a renewal whose answer was lost ended the lease")
	// Released, or lost: either way the lock must be freed at once (a lost
	// lease's release in the background deletes by value, not by a CAS it
	// may not know).
	t.Logf("Release: %v", lease.Release(ctx))
	next, err := tryUntil(ctx, newLock(t, client(t, m.Addr()), "lossy", withServer(m, ttl)...), 3*time.Second)
	require.NoError(t, err, "the lock was left held (TTL %v)", ttl)
	require.NoError(t, next.Release(ctx))
}
