package memcachedlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/harness"
	"github.com/zkrecipes/zkrecipes/internal/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
)

const faultTTL = 2 * time.Second

// A holder whose connection is blackholed is told before the successor is
// granted the lock: at least the second memcached may expire an item early,
// less the client's scheduling allowance.
func TestHolderToldFirstUnderBlackhole(t *testing.T) {
	m := harness.StartMemcached(t)
	p := harness.NewProxy(t, m.Addr())
	holder := newLock(t, client(t, p.Addr()), "blackhole", memcachedlock.WithTTL(faultTTL))
	successor := newLock(t, client(t, m.Addr()), "blackhole", memcachedlock.WithTTL(faultTTL))
	holdertest.HolderToldFirst(t, holder, successor, func() { p.Blackhole(t) }, recipes.DriftMargin(faultTTL)-10*time.Millisecond)
	p.Restore(t)
}

// memcached restarts (cold: empty, and its CAS counter reset): the holder
// learns at its next renewal, and the lock can be taken again.
func TestMemcachedRestart(t *testing.T) {
	m := harness.StartMemcached(t)
	ctx := ctxT(t)
	old, err := newLock(t, client(t, m.Addr()), "restart", memcachedlock.WithTTL(faultTTL)).Acquire(ctx)
	require.NoError(t, err)
	m.Stop(t)
	m.Start(t)
	select {
	case <-old.Done():
	case <-time.After(waitLimit):
		t.Fatal("the holder never learned its lock was gone")
	}
	assert.ErrorIs(t, old.Err(), recipes.ErrLockLost)
	next, err := newLock(t, client(t, m.Addr()), "restart", memcachedlock.WithTTL(faultTTL)).Acquire(ctx)
	require.NoError(t, err)
	ot, _ := old.Token()
	nt, _ := next.Token()
	t.Logf("tokens across a cold restart: %d, then %d (documented: the CAS counter restarts)", ot, nt)
	require.NoError(t, next.Release(ctx))
}
