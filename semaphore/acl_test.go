package semaphore_test

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/semaphore"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/shared"
	"github.com/zkrecipes/zkrecipes/znode"
)

// TestCreatorOnlyACL: under a creator-only ACL, the semaphore's nodes
// (leases, locks, their lease and lock nodes, a SharedCount's node) are
// the user's; a client without the credentials can neither disturb the
// holder nor take a lease, and another session of the same user waits and
// takes it (acltest.Run).
func TestCreatorOnlyACL(t *testing.T) {
	servers := sharedServers(t)
	t.Run("Semaphore", func(t *testing.T) {
		acltest.Run(t, servers, acltest.Backend{
			New: func(t testing.TB, c *session.Client, path string) recipes.Locker {
				return newSemaphore(t, c, path, 1).Locker(1)
			},
			Queues: true,
		})
	})
	t.Run("Mutex", func(t *testing.T) {
		acltest.Run(t, servers, acltest.Backend{
			New: func(t testing.TB, c *session.Client, path string) recipes.Locker {
				m, err := semaphore.NewMutex(c, path)
				require.NoError(t, err)
				return m
			},
			Queues: true,
		})
	})
	t.Run("SharedCount", func(t *testing.T) {
		var countPath string
		acltest.Run(t, servers, acltest.Backend{
			New: func(t testing.TB, c *session.Client, p string) recipes.Locker {
				countPath = path.Join(path.Dir(p), "count") // under the scenario's root: its ACL is checked
				count, err := shared.NewCount(c, countPath, 1)
				require.NoError(t, err)
				s, err := semaphore.NewWithCount(c, p, count)
				require.NoError(t, err)
				return s.Locker(1)
			},
			Queues: true,
		})
		owner := connect(t, servers, acltest.Options()...)
		stranger := connect(t, servers)
		ctx := ctxT(t)
		count, err := shared.NewCount(stranger, countPath, 1)
		require.NoError(t, err)
		_, _, err = count.Get(ctx)
		require.ErrorIs(t, err, session.ErrNoAuth, "the stranger reads the count")
		ok, err := count.TrySet(ctx, 5, -1)
		require.ErrorIs(t, err, session.ErrNoAuth, "the stranger writes the count")
		require.False(t, ok)
		require.NoError(t, owner.Delete(ctx, countPath, -1)) // persistent: nothing left behind
	})
}

// TestInteropCreatorOnlyACL: Go and Curator (the agent's WithDigestAuth:
// authorization and an ACLProvider of CREATOR_ALL_ACL) as the same user
// share a semaphore of one lease both ways, every node either makes is the
// user's, and neither a Curator nor a Go client without the credentials
// can take a lease.
func TestInteropCreatorOnlyACL(t *testing.T) {
	servers := interopAvailable(t)
	ctx := ctxT(t)
	root := acltest.Root()
	p := root + "/sem"
	leases := path.Join(p, semaphore.LeasesNode)
	raw := acltest.Raw(t, servers)
	s := newSemaphore(t, connect(t, servers, acltest.Options()...), p, 1)
	goStranger := newSemaphore(t, connect(t, servers), p, 1)
	a := curator.Start(t, servers, curator.WithName("curator "+acltest.User),
		curator.WithDigestAuth(acltest.User, acltest.Password))
	a.DoExpect(t, "semaphore "+p+" 1", "ok")
	stranger := interopAgent(t, servers, "curator stranger", "semaphore "+p+" 1")
	strangerRefused := func() {
		t.Helper()
		reply := stranger.Do(t, "sem-acquire")
		require.True(t, strings.HasPrefix(reply, "error ") && strings.Contains(reply, "NoAuth"),
			"the Curator stranger's sem-acquire: %q, want an error with NoAuth", reply)
		stranger.DoExpect(t, "sem-held", "held 0")
	}

	// Go holds; Curator waits for room (holding the semaphore's lock).
	lease, err := s.Acquire(ctx, 1)
	require.NoError(t, err)
	a.Send(t, "sem-acquire")
	acltest.WaitChildren(t, raw, leases, 2)
	acltest.RequireTree(t, raw, root, lease.(znode.Lease).Node())
	a.ExpectNoReply(t, zktest.StillWaiting)
	strangerRefused()
	require.NoError(t, lease.Err(), "Go's lease after the stranger's acquire")
	require.NoError(t, lease.Release(ctx))
	a.Expect(t, "acquired", curator.ReplyTimeout)

	// Curator holds; Go waits.
	javaNodes := a.List(t, "sem-nodes", "nodes")
	require.Len(t, javaNodes, 1)
	acltest.RequireTree(t, raw, root, path.Join(leases, javaNodes[0]))
	_, err = goStranger.Acquire(ctx, 1)
	acltest.RequireNoAuth(t, err, p, "the Go stranger's Acquire while Curator holds")
	strangerRefused()
	res := zktest.AcquireAsync(func() (recipes.Lease, error) { return s.Acquire(ctx, 1) })
	acltest.WaitChildren(t, raw, leases, 2)
	acltest.RequireTree(t, raw, root, path.Join(leases, javaNodes[0]))
	res.Waiting(t, "Go behind Curator")
	a.DoExpect(t, "sem-release", "released 1")
	lease = res.Acquired(t, "Go after Curator's release")
	require.NoError(t, lease.Release(ctx))
	acltest.WaitChildren(t, raw, leases, 0)
}
