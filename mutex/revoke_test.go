package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Why here and not in internal/engine: the options under test are the
// mutex's (WithRevocable, and its refusal beside WithData).

// Revocation, Curator's protocol: a waiter writes the revoke message into
// the holder's node; a revocable holder hears it through its lease and
// releases; the waiter gets the lock.
func TestRevocation(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const path = "/faults/revoke"
	m, err := mutex.New(connect(t, servers), path, mutex.WithRevocable())
	require.NoError(t, err)
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	zl := lease.(znode.Lease)
	data, _, err := connect(t, servers).Get(ctx, zl.Node())
	require.NoError(t, err)
	assert.Empty(t, data, "a revocable node holds no data, as Curator's")

	requester := connect(t, servers)
	waiter := make(chan recipes.Lease, 1)
	go func() {
		l, err := newMutex(t, requester, path).Acquire(ctx)
		if assert.NoError(t, err) {
			waiter <- l
		}
	}()
	waitForNodes(t, requester, path, 2)
	ps, err := newMutex(t, requester, path).Participants(ctx)
	require.NoError(t, err)
	require.Equal(t, zl.Node(), ps[0].Path, "a participant's Path is its lease's Node")
	require.Equal(t, path+"/"+ps[0].Name, ps[0].Path)
	assert.ErrorIs(t, znode.Revoke(ctx, requester, ps[0].Name), recipes.ErrInvalidArgument, "a name is not a path")
	require.NoError(t, znode.Revoke(ctx, requester, ps[0].Path))

	select {
	case <-zl.Revoked():
		require.NoError(t, lease.Release(ctx), "the holder decides to release")
	case <-time.After(waitLimit):
		t.Fatal("the holder was not told of the revocation")
	}
	select {
	case l := <-waiter:
		require.NoError(t, l.Release(ctx))
	case <-time.After(waitLimit):
		t.Fatal("the requester never got the lock")
	}

	// A lock that is not revocable never hears of it.
	plain, err := newMutex(t, connect(t, servers), path).Acquire(ctx)
	require.NoError(t, err)
	assert.Nil(t, plain.(znode.Lease).Revoked())
	require.NoError(t, znode.Revoke(ctx, requester, plain.(znode.Lease).Node()))
	require.NoError(t, plain.Release(ctx))
	assert.Error(t, znode.Revoke(ctx, requester, path+"/gone"), "no node to revoke")

	_, err = mutex.New(requester, path, mutex.WithRevocable(), mutex.WithData([]byte("x")))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
}
