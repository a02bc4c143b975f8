package mutex_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
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
// quitter gives up, a late waiter queues behind ours, and then the holder
// releases, or the predecessor gives up too while the holder still holds
// (a waiter that took the node two ahead's deletion for the head's would
// take the lock from the holder then).
func TestLookaheadWaiterAheadGivesUp(t *testing.T) {
	servers := sharedServers(t)
	for _, predQuits := range []bool{false, true} {
		t.Run(fmt.Sprintf("predecessor gives up=%v", predQuits), func(t *testing.T) {
			path := fmt.Sprintf("/faults/lookahead-gives-up-%v", predQuits)
			ctx := ctxT(t)
			observer := connect(t, servers)
			queue := func(ctx context.Context, n int) *zktest.Pending {
				p := interopAcquireAsync(ctx, newMutex(t, connect(t, servers), path))
				waitForNodes(t, observer, path, n)
				return p
			}
			gaveUp := func(p *zktest.Pending, quit context.CancelFunc, n int, who string) {
				quit()
				p.Failed(t, context.Canceled, who)
				waitForNodes(t, observer, path, n)
			}

			holder := queue(ctx, 1).Acquired(t, "the holder")
			quitCtx, quit := context.WithCancel(ctx)
			defer quit()
			quitter := queue(quitCtx, 2)
			predCtx, predQuit := context.WithCancel(ctx)
			defer predQuit()
			pred := queue(predCtx, 3)
			ours := queue(ctx, 4)
			gaveUp(quitter, quit, 3, "the quitter")
			late := queue(ctx, 4)

			if predQuits {
				gaveUp(pred, predQuit, 3, "the predecessor")
				ours.Waiting(t, "ours, behind the holder")
				require.NoError(t, holder.Release(ctx))
			} else {
				require.NoError(t, holder.Release(ctx))
				predLease := pred.Acquired(t, "the predecessor, after the holder")
				ours.Waiting(t, "ours, behind the predecessor")
				require.NoError(t, predLease.Release(ctx))
			}
			ourLease := ours.Acquired(t, "ours")
			late.Waiting(t, "the late waiter, behind ours")
			require.NoError(t, ourLease.Release(ctx))
			require.NoError(t, late.Acquired(t, "the late waiter, last").Release(ctx))
			waitForNodes(t, observer, path, 0)
		})
	}
}
