package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// An operator deletes the holder's node (breaking the lock): the next
// contender gets the lock, and the old holder's Release says the lock was
// lost rather than returning nil.
func TestNodeDeletedUnderHolder(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const path = "/faults/deleted"
	holder, err := newMutex(t, connect(t, servers), path).Acquire(ctx)
	require.NoError(t, err)
	operator := connect(t, servers)
	require.NoError(t, operator.Delete(ctx, holder.(znode.Lease).Node(), -1))
	next, err := newMutex(t, connect(t, servers), path).TryAcquire(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, holder.Release(ctx), recipes.ErrLockLost)
	require.NoError(t, next.Release(ctx))
}

// Release ends the lease's context before the node goes: by the time anyone
// can see the node deleted (and so take the lock), the old lease is over.
func TestReleaseEndsLeaseBeforeDeleting(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	observer := connect(t, servers)
	for range 20 {
		lease, err := newMutex(t, connect(t, servers), "/faults/release-order").Acquire(ctx)
		require.NoError(t, err)
		_, _, ev, err := observer.GetW(ctx, lease.(znode.Lease).Node())
		require.NoError(t, err)
		released := make(chan error, 1)
		go func() { released <- lease.Release(ctx) }()
		e := <-ev
		require.Equal(t, session.EventNodeDeleted, e.Type)
		assert.ErrorIs(t, lease.Err(), recipes.ErrReleased, "the node was gone while the lease was live")
		require.NoError(t, <-released)
	}
}

// A re-entered lease released after the lock was lost reports the loss too.
func TestNestedReleaseAfterLoss(t *testing.T) {
	z := harness.StartZK(t, 1)
	p := harness.NewProxy(t, z.Servers()[0])
	ctx := ctxT(t)
	m := newMutex(t, connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second)), "/faults/nested")
	outer, err := m.Acquire(ctx)
	require.NoError(t, err)
	inner, err := m.Acquire(outer.Context())
	require.NoError(t, err)
	p.Blackhole(t)
	select {
	case <-inner.Done():
	case <-time.After(waitLimit):
		t.Fatal("lease not ended by the partition")
	}
	assert.ErrorIs(t, inner.Release(ctx), recipes.ErrLockLost)
	assert.ErrorIs(t, outer.Release(ctx), recipes.ErrLockLost)
	p.Restore(t)
}

// Release while the connection is cut: the lease ends at once, Release says
// the delete goes on in the background, and once the connection is back the
// node is gone.
func TestReleaseDuringCut(t *testing.T) {
	z := harness.StartZK(t, 1)
	p := harness.NewProxy(t, z.Servers()[0])
	observer := connect(t, z.Servers())
	const path = "/faults/release-cut"
	c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(30*time.Second),
		session.WithErrorPolicy(session.OnlyLostIsLost))
	lease, err := newMutex(t, c, path).Acquire(ctxT(t))
	require.NoError(t, err)

	p.Cut(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	assert.Error(t, lease.Release(ctx), "the delete could not be made")
	assert.ErrorIs(t, lease.Err(), recipes.ErrReleased, "the lease ends at Release all the same")
	assert.Len(t, children(t, observer, path), 1, "the node is still there while the connection is cut")
	p.Restore(t)
	waitForNodes(t, observer, path, 0)
}
