package semaphore_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/semaphore"
)

// Through a client connected to an observer only (3 voters, 1 observer),
// against a client connected to the voters only: both count against one
// limit, a waiter on either side is granted the permits the other gives
// back, and the semaphore mutex excludes across them.
func TestObserver(t *testing.T) {
	z := harness.StartZKObserved(t, 3, 1)
	onObserver := []string{z.Observers()[0].Addr()}

	t.Run("permits", func(t *testing.T) {
		const path, max = "/observer/permits", 3
		ctx := ctxT(t)
		obs := newSemaphore(t, connect(t, onObserver), path, max)
		voters := connect(t, z.VoterServers())
		vot := newSemaphore(t, voters, path, max)

		two, err := obs.Acquire(ctx, 2)
		require.NoError(t, err)
		one, err := vot.Acquire(ctx, 1)
		require.NoError(t, err)
		_, err = vot.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, recipes.ErrLocked, "the voters' client counts the observer's client's permits")
		_, err = obs.TryAcquire(ctx, 1)
		require.ErrorIs(t, err, recipes.ErrLocked, "the observer's client counts the voters' client's permit")

		pending := zktest.AcquireAsync(func() (recipes.Lease, error) { return vot.Acquire(ctx, 2) })
		pending.Waiting(t, "the voters' client, for 2 permits of 3 with all taken")
		require.NoError(t, two.Release(ctx))
		two = pending.Acquired(t, "the voters' client, once the observer's client gave back 2")

		pending = zktest.AcquireAsync(func() (recipes.Lease, error) { return obs.Acquire(ctx, 1) })
		pending.Waiting(t, "the observer's client, with all permits taken")
		require.NoError(t, one.Release(ctx))
		one = pending.Acquired(t, "the observer's client, told through the observer of the permit given back")
		held, err := obs.Leases(ctx)
		require.NoError(t, err)
		require.Len(t, held, max, "the observer lists the leases of both sides")

		require.NoError(t, one.Release(ctx))
		require.NoError(t, two.Release(ctx))
		require.Zero(t, leases(t, voters, path))
	})

	t.Run("mutex contention", func(t *testing.T) {
		const path = "/observer/mutex"
		var lockers []recipes.Locker
		for i := range 4 {
			servers := z.VoterServers()
			if i%2 == 0 {
				servers = onObserver
			}
			m, err := semaphore.NewMutex(connect(t, servers), path)
			require.NoError(t, err)
			lockers = append(lockers, m)
		}
		lost, err := locktest.Contention(ctxT(t), lockers, 10)
		require.NoError(t, err, "two holders at once across the observer and the voters")
		require.Zero(t, lost, "leases lost with no fault")
	})
}
