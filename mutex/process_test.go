package mutex_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Why here and not in internal/engine: the holder child process is built
// by this package's TestMain, with mutex.New.

// newHolderLocker builds the lock a holder child process takes.
func newHolderLocker(c *session.Client, path, _ string) (recipes.Locker, error) {
	return mutex.New(c, path)
}

// A holder process killed with SIGKILL: the next waiter acquires once the
// server expires the dead process's session.
func TestHolderKilled(t *testing.T) {
	servers := sharedServers(t)
	const path = "/faults/sigkill"
	holder := zktest.StartHolder(t, servers, path, "mutex", 2*time.Second)

	m := newMutex(t, connect(t, servers), path)
	_, err := m.TryAcquire(ctxT(t))
	require.ErrorIs(t, err, recipes.ErrLocked, "the holder process holds the lock")

	holder.Kill(t)
	lease, err := m.Acquire(ctxT(t)) // bounded by waitLimit: well past the 2s session timeout
	require.NoError(t, err, "the waiter never acquired after the holder was killed")
	parts, err := m.Participants(ctxT(t))
	require.NoError(t, err)
	require.Len(t, parts, 1)
	assert.True(t, parts[0].Holder)
	require.NoError(t, lease.Release(ctxT(t)))
}
