package mutex_test

import (
	"testing"

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
