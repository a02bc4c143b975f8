package barrier_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
)

// WaitOnBarrier returns at once when no barrier is set, waits while it is,
// and returns for every waiter once it is removed; setting and removing
// twice is no error.
func TestBarrier(t *testing.T) {
	servers := sharedServers(t)
	p := pathOf(t)
	b, err := barrier.NewBarrier(zktest.Connect(t, servers), p)
	require.NoError(t, err)
	require.NoError(t, b.WaitOnBarrier(ctxT(t)), "no barrier set")

	require.NoError(t, b.SetBarrier(ctxT(t)))
	require.NoError(t, b.SetBarrier(ctxT(t)))
	var waiting []result
	for range 3 {
		w, err := barrier.NewBarrier(zktest.Connect(t, servers), p)
		require.NoError(t, err)
		waiting = append(waiting, async(func() error { return w.WaitOnBarrier(ctxT(t)) }))
	}
	// A waiter that finds the barrier set is still waiting after a change
	// of the node's data (a wakeup is no reason to go through).
	watched(t, servers[0], p, 3)
	observer := zktest.Connect(t, servers)
	_, err = observer.Set(ctxT(t), p, []byte("touched"), -1)
	require.NoError(t, err)
	// The change fired the three watches; each waiter looked again and
	// set a new one.
	watched(t, servers[0], p, 3)
	for _, r := range waiting {
		r.pending(t, "WaitOnBarrier")
	}
	require.NoError(t, b.RemoveBarrier(ctxT(t)))
	require.NoError(t, b.RemoveBarrier(ctxT(t)))
	for _, r := range waiting {
		require.NoError(t, r.await(t, "WaitOnBarrier"))
	}
}

// A WaitOnBarrier cancelled while it waits says why.
func TestBarrierWaitCancelled(t *testing.T) {
	b, err := barrier.NewBarrier(zktest.Connect(t, sharedServers(t)), pathOf(t))
	require.NoError(t, err)
	require.NoError(t, b.SetBarrier(ctxT(t)))
	ctx, cancel := context.WithCancel(ctxT(t))
	r := async(func() error { return b.WaitOnBarrier(ctx) })
	cancel()
	err = r.await(t, "WaitOnBarrier")
	assert.ErrorIs(t, err, barrier.ErrNotThrough)
	assert.ErrorIs(t, err, context.Canceled)
	require.NoError(t, b.RemoveBarrier(ctxT(t)))
}
