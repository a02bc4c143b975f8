package shared_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/shared"
)

// A follower whose connection drops and comes back to the same session,
// again and again while the value stays as it is: the client sets its one
// watch on the server again each time, and Changes sets no other. Each
// other would pin a channel in the client (and, carried, a goroutine)
// until the node's next change: one more per reconnection, without bound
// for a value that never changes.
func TestChangesReconnectionsKeepOneWatch(t *testing.T) {
	servers := sharedServers(t)
	p := harness.NewProxy(t, servers[0])
	c := zktest.Connect(t, []string{p.Addr()}, session.WithSessionTimeout(20*time.Second),
		session.WithErrorPolicy(session.OnlyLostIsLost))
	ctx := ctxT(t)
	states, err := c.Subscribe(ctx)
	require.NoError(t, err)
	v, err := shared.NewValue(c, pathOf(t, "value"), []byte("seed"))
	require.NoError(t, err)
	changes, err := v.Changes(ctx)
	require.NoError(t, err)
	assert.Equal(t, "seed", string(next(t, changes).Value))
	first := c.CurrentSession().ID()

	const reconnections = 3
	for range reconnections {
		p.Cut(t)
		zktest.AwaitState(t, states, session.Suspended)
		p.Restore(t)
		zktest.AwaitState(t, states, session.Reconnected)
	}
	require.Equal(t, first, c.CurrentSession().ID(), "the same session throughout")
	// Each reconnection is read again at once, long before the next cut
	// is even noticed; the watches set by then are what counts.
	assert.Equal(t, 1, watchesOfFollower(t, c), "watches of Changes' loop")

	// The one watch still tells a change.
	writer := zktest.Connect(t, servers)
	_, err = writer.Set(ctx, v.Path(), []byte("changed"), -1)
	require.NoError(t, err)
	assert.Equal(t, "changed", string(next(t, changes).Value))
}

// watchesOfFollower counts c's open watches (c has no other user than
// the one goroutine of Changes' loop) once that loop waits (in await,
// between reads): one per watch it set that has not fired. It looks again
// until the loop waits, within waitLimit.
func watchesOfFollower(t testing.TB, c *session.Client) int {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if followerWaits(t) {
			return c.Watches()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the loop of Changes did not wait in await within %v", waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// followerWaits reports whether the one loop of Changes is waiting in
// await now.
func followerWaits(t testing.TB) bool {
	t.Helper()
	waiting := 0
	for _, s := range zktest.Goroutines() {
		if strings.Contains(s, "shared.follow[") && strings.Contains(s, "shared.await(") {
			waiting++
		}
	}
	require.LessOrEqual(t, waiting, 1, "one loop of Changes")
	return waiting == 1
}
