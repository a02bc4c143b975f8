package leader_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
)

// Through a client connected to an observer only (3 voters, 1 observer),
// against a client connected to the voters only: leadership passes both
// ways, a watcher on the observer sees each leader, and the participants
// never lead at once.
func TestObserver(t *testing.T) {
	z := harness.StartZKObserved(t, 3, 1)
	onObserver := []string{z.Observers()[0].Addr()}

	t.Run("handoff", func(t *testing.T) {
		const path = "/observer/handoff"
		ctx := ctxT(t)
		seen := newLatch(t, connect(t, onObserver), path, "watcher").Observe(ctx)
		observed := func(want string) {
			t.Helper()
			for {
				select {
				case l := <-seen:
					if l.ID == want {
						return
					}
				case <-time.After(waitLimit):
					t.Fatalf("the watcher on the observer never saw leader %q", want)
				}
			}
		}
		obs := newLatch(t, connect(t, onObserver), path, "observer")
		vot := newLatch(t, connect(t, z.VoterServers()), path, "voters")

		first, err := obs.Campaign(ctx)
		require.NoError(t, err)
		observed("observer")
		now, err := vot.Leader(ctx)
		require.NoError(t, err)
		assert.Equal(t, "observer", now.ID, "the voters' client sees the observer's client lead")

		pending := zktest.AcquireAsync(func() (recipes.Lease, error) { return vot.Acquire(ctx) })
		pending.Waiting(t, "the voters' client while the observer's client leads")
		require.NoError(t, first.Release(ctx))
		second := pending.Acquired(t, "the voters' client, once the observer's client resigned")
		observed("voters")

		pending = zktest.AcquireAsync(func() (recipes.Lease, error) { return obs.Acquire(ctx) })
		pending.Waiting(t, "the observer's client while the voters' client leads")
		require.NoError(t, second.Release(ctx))
		third := pending.Acquired(t, "the observer's client, told through the observer of the resignation")
		observed("observer")
		assert.Greater(t, zktest.Token(t, second), zktest.Token(t, first))
		assert.Greater(t, zktest.Token(t, third), zktest.Token(t, second))
		require.NoError(t, third.Release(ctx))
		observed("")
	})

	t.Run("contention", func(t *testing.T) {
		const path = "/observer/contention"
		var lockers []recipes.Locker
		for i := range 4 {
			servers := z.VoterServers()
			if i%2 == 0 {
				servers = onObserver
			}
			lockers = append(lockers, newLatch(t, connect(t, servers), path, fmt.Sprint("p", i)))
		}
		lost, err := locktest.Contention(ctxT(t), lockers, 10)
		require.NoError(t, err, "two leaders at once across the observer and the voters")
		require.Zero(t, lost, "leaderships lost with no fault")
	})
}
