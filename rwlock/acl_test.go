package rwlock_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// TestCreatorOnlyACL: under a creator-only ACL, a client without the
// credentials can neither disturb the writer nor take either half, and
// another session of the same user queues and writes after the release
// (acltest.Run for the write half).
func TestCreatorOnlyACL(t *testing.T) {
	servers := sharedServers(t)
	t.Run("write", func(t *testing.T) {
		acltest.Run(t, servers, acltest.Backend{
			New: func(t testing.TB, c *session.Client, path string) recipes.Locker {
				return newRW(t, c, path).WriteLock()
			},
			Queues: true,
		})
	})
	t.Run("read", func(t *testing.T) {
		// Readers share: the user's second reader would not wait, so the
		// read half gets the stranger's part of the scenario only.
		ctx := ctxT(t)
		root := acltest.Root()
		lockPath := root + "/lock"
		reader := connect(t, servers, acltest.Options()...)
		lease, err := newRW(t, reader, lockPath).ReadLock().Acquire(ctx)
		require.NoError(t, err)
		acltest.RequireTree(t, acltest.Raw(t, servers), root, lease.(znode.Lease).Node())
		_, err = newRW(t, connect(t, servers), lockPath).ReadLock().Acquire(ctx)
		acltest.RequireNoAuth(t, err, lockPath, "the stranger's read")
		require.NoError(t, lease.Err(), "the reader's lease after the stranger's try")
		require.NoError(t, lease.Release(ctx))
	})
}
