package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
)

// Why here and not in internal/engine: the option under test is the
// mutex's (WithLookahead).

// With lookahead, waiters also watch the node two ahead and may take the
// lock without listing: the exclusion oracle still holds.
func TestLookaheadExclusion(t *testing.T) {
	servers := sharedServers(t)
	lockers := make([]recipes.Locker, 6)
	for i := range lockers {
		m, err := mutex.New(connect(t, servers), "/faults/lookahead", mutex.WithLookahead(true))
		require.NoError(t, err)
		lockers[i] = m
	}
	lost, err := locktest.Contention(ctxT(t), lockers, 30)
	require.NoError(t, err)
	assert.Zero(t, lost)
}

// A waiter decides from its last listing when the head goes (no request),
// and lists again when a waiter two ahead of it gives up instead: on real
// servers, each finds its place. Queue: holder, quitter, pred, ours; the
// quitter gives up and a late waiter queues behind ours.
func TestLookaheadWaiterAheadGivesUp(t *testing.T) {
	servers := sharedServers(t)
	const path = "/faults/lookahead-gives-up"
	ctx := ctxT(t)
	lock := func() *mutex.Mutex { return newMutex(t, connect(t, servers), path) }
	observer := connect(t, servers)

	holder, err := lock().Acquire(ctx)
	require.NoError(t, err)
	quitCtx, quit := context.WithCancel(ctx)
	defer quit()
	quitter, quitErr := lock(), make(chan error, 1)
	go func() {
		_, err := quitter.Acquire(quitCtx)
		quitErr <- err
	}()
	waitForNodes(t, observer, path, 2)
	pred := interopAcquireAsync(ctx, lock())
	waitForNodes(t, observer, path, 3)
	ours := interopAcquireAsync(ctx, lock())
	waitForNodes(t, observer, path, 4)

	quit()
	select {
	case err := <-quitErr:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(waitLimit):
		t.Fatal("the quitter's Acquire did not return")
	}
	waitForNodes(t, observer, path, 3)
	late := interopAcquireAsync(ctx, lock())
	waitForNodes(t, observer, path, 4)

	require.NoError(t, holder.Release(ctx))
	predLease := pred.Acquired(t, "the predecessor, after the holder")
	ours.Waiting(t, "ours, behind the predecessor")
	require.NoError(t, predLease.Release(ctx))
	ourLease := ours.Acquired(t, "ours, after the predecessor")
	late.Waiting(t, "the late waiter, behind ours")
	require.NoError(t, ourLease.Release(ctx))
	require.NoError(t, late.Acquired(t, "the late waiter, last").Release(ctx))
	waitForNodes(t, observer, path, 0)
}
