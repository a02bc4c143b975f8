package memcachedlock_test

import (
	"sync"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// A holder's token is higher than the one before it across a restart of
// memcached: a cold one (stopped or killed: the CAS counter starts again
// from 1) and a warm one (it keeps the counter and its start time). Each
// server is new, so each first holder waits out the quiet period, as the
// restarted server's does: the tokens are what a fenced resource sees.
func TestTokensAcrossRestarts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		start   func(testing.TB) *harness.Memcached
		restart func(*testing.T, *harness.Memcached)
	}{
		{"stop+start", harness.StartMemcached, func(t *testing.T, m *harness.Memcached) { m.Stop(t); m.Start(t) }},
		{"kill+start", harness.StartMemcached, func(t *testing.T, m *harness.Memcached) { m.Kill(t); m.Start(t) }},
		{"warm", harness.StartMemcachedRestartable, func(t *testing.T, m *harness.Memcached) { m.StopWarm(t); m.Start(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := tc.start(t)
			awaitBackground(t)
			ctx := ctxT(t)
			writeOthers(t, client(t, m.Addr()), 100)
			holder := func() int64 {
				lease, err := newLock(t, client(t, m.Addr()), "restarted", withServer(m, memcachedlock.MinTTL)...).Acquire(ctx)
				require.NoError(t, err)
				token, ok := lease.Token()
				require.True(t, ok)
				require.NoError(t, lease.Release(ctx))
				return token
			}
			first := holder()
			tc.restart(t, m)
			second := holder()
			t.Logf("tokens %d, then %d after the restart", first, second)
			assert.Greater(t, second, first, "a holder after the restart got a lower token than one before it")
		})
	}
}

// A Lock without the server's address gives no token: it cannot read the
// server's start time.
func TestNoTokenWithoutTheAddress(t *testing.T) {
	m := harness.StartMemcached(t)
	awaitBackground(t)
	markFresh(t, client(t, m.Addr()), "no-address")
	ctx := ctxT(t)
	lease, err := newLock(t, client(t, m.Addr()), "no-address", memcachedlock.WithoutEvictionCheck()).Acquire(ctx)
	require.NoError(t, err)
	token, ok := lease.Token()
	assert.False(t, ok)
	assert.Zero(t, token)
	require.NoError(t, lease.Release(ctx))

	// With the address (and no eviction check) it gives one, and dates
	// the marker that markFresh wrote as an earlier version would.
	lease, err = newLock(t, client(t, m.Addr()), "no-address", memcachedlock.WithServerAddr(m.Addr()),
		memcachedlock.WithoutEvictionCheck()).Acquire(ctx)
	require.NoError(t, err)
	token, ok = lease.Token()
	assert.True(t, ok)
	assert.Positive(t, token)
	require.NoError(t, lease.Release(ctx))
	it, err := client(t, m.Addr()).Get("no-address:alive")
	require.NoError(t, err)
	assert.Regexp(t, `^e[0-9]+$`, string(it.Value), "the marker gives the server's start time")
}

// restarting is a client whose first add of the item marker waits, once
// it is signalled on hit, until the test closes resume (having restarted
// the server meanwhile), and then lands on the new server: the lock read
// the old server's start time before it.
type restarting struct {
	*memcache.Client
	addr, marker string
	hit, resume  chan struct{}
	once         sync.Once
}

func (r *restarting) Add(it *memcache.Item) error {
	first := false
	if it.Key == r.marker {
		r.once.Do(func() { first = true })
	}
	if !first {
		return r.Client.Add(it)
	}
	close(r.hit)
	<-r.resume
	mc := memcache.New(r.addr)
	defer mc.Close()
	return mc.Add(it)
}

// A cold restart while a Lock writes the marker (between its read of the
// server's start time and its add): the new server must not keep a marker
// that gives the old server's start time, nor grant the lock at once, so
// the next holder's token is still higher than the last one before.
func TestRestartWhileTheMarkerIsWritten(t *testing.T) {
	m := harness.StartMemcached(t)
	awaitBackground(t)
	ctx := ctxT(t)
	admin := client(t, m.Addr())
	writeOthers(t, admin, 100)
	opts := withServer(m, memcachedlock.MinTTL)
	lease, err := newLock(t, client(t, m.Addr()), "mid-restart", opts...).Acquire(ctx) // after the quiet period
	require.NoError(t, err)
	first, _ := lease.Token()
	require.NoError(t, lease.Release(ctx))
	require.NoError(t, admin.FlushAll()) // the marker is gone: the next Acquire writes it

	rc := &restarting{Client: client(t, m.Addr()), addr: m.Addr(), marker: "mid-restart:alive",
		hit: make(chan struct{}), resume: make(chan struct{})}
	got := acquireBehind(ctx, newLock(t, rc, "mid-restart", opts...), lease)
	await(t, rc.hit, "the Lock's add of the marker")
	m.Stop(t)
	m.Start(t)
	close(rc.resume)
	g := await(t, got, "the grant after the restart")
	require.NoError(t, g.err)
	second, _ := g.lease.Token()
	t.Logf("tokens %d, then %d after the restart", first, second)
	assert.Greater(t, second, first, "a holder after the restart got a lower token than one before it")
	require.NoError(t, g.lease.Release(ctx))
}
