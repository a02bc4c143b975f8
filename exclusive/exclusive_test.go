package exclusive_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/exclusive"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

func newLock(t testing.TB, c *session.Client, path string) *exclusive.Lock {
	t.Helper()
	l, err := exclusive.New(c, path)
	require.NoError(t, err)
	return l
}

func TestExclusiveContract(t *testing.T) {
	servers := sharedServers(t)
	observer := connect(t, servers)
	var mu sync.Mutex
	proxies := map[int64]*harness.Proxy{}
	locktest.Run(t, locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker {
			p := harness.NewProxy(t, servers[0])
			c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
			s, err := c.Session(ctxT(t))
			require.NoError(t, err)
			mu.Lock()
			proxies[s.ID()] = p
			mu.Unlock()
			return newLock(t, c, "/locktest/"+name)
		},
		Lose: func(t *testing.T, name string, lease recipes.Lease) {
			mu.Lock()
			p := proxies[lease.(znode.Lease).SessionID()]
			mu.Unlock()
			require.NotNil(t, p)
			p.Blackhole(t)
		},
		Leftovers: func(t *testing.T, name string) []string {
			kids, _, err := observer.Children(ctxT(t), "/locktest/"+name)
			if err != nil {
				return nil
			}
			return kids
		},
	})
}

// The connection is cut right after the create request: the lock finds its
// node by its owner and holds it, or creates it again; no orphan, no
// deadlock.
func TestConnectionLossDuringCreate(t *testing.T) {
	z := harness.StartZK(t, 1)
	observer := connect(t, z.Servers())
	zktest.EachPolicyThroughProxy(t, z.Servers()[0], func(t *testing.T, p *harness.Proxy,
		c *session.Client, states <-chan session.StateChange, policy session.ErrorPolicy) {
		path := fmt.Sprintf("/exclusive/cut-%d", policy)
		l := newLock(t, c, path)
		warm, err := l.Acquire(ctxT(t)) // the parent exists from now on
		require.NoError(t, err)
		require.NoError(t, warm.Release(ctxT(t)))

		// Cut right after the whole create reached the server:
		// the server creates the node, its reply is lost.
		p.ResetAfter(t, harness.CreateWithZxidSize(path+"/lock"))
		lease := zktest.AcquireAcrossCut(t, p, states, l.Acquire)
		_, st, err := observer.Get(ctxT(t), path+"/lock")
		require.NoError(t, err)
		s, err := c.Session(ctxT(t))
		require.NoError(t, err)
		assert.Equal(t, s.ID(), st.EphemeralOwner, "the lock node is ours")
		assert.Equal(t, st.Czxid, zktest.Token(t, lease))
		require.NoError(t, lease.Release(ctxT(t)))
		other, err := newLock(t, observer, path).TryAcquire(ctxT(t))
		require.NoError(t, err, "no orphan node blocks the next holder")
		require.NoError(t, other.Release(ctxT(t)))
	})
}

// Release never deletes a node it does not own.
func TestReleaseKeepsAnotherHoldersNode(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	a := connect(t, servers)
	b := connect(t, servers)
	const path = "/exclusive/foreign"
	lease, err := newLock(t, a, path).Acquire(ctx)
	require.NoError(t, err)
	// Someone deletes our node (an operator) and another holder takes it.
	require.NoError(t, b.Delete(ctx, path+"/lock", -1))
	theirs, err := newLock(t, b, path).TryAcquire(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, lease.Release(ctx), recipes.ErrLockLost, "Release reports that the lock was broken")
	ok, st, err := b.Exists(ctx, path+"/lock")
	require.NoError(t, err)
	require.True(t, ok, "our Release deleted the other holder's node")
	assert.Equal(t, zktest.Token(t, theirs), st.Czxid)
	require.NoError(t, theirs.Release(ctx))
}

func TestCancelledWaiterLeavesNothing(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const path = "/exclusive/cancel"
	holder, err := newLock(t, connect(t, servers), path).Acquire(ctx)
	require.NoError(t, err)
	observer := connect(t, servers)
	for range 5 {
		c := connect(t, servers)
		wctx, cancel := ctxWithTimeout(100 * time.Millisecond)
		_, err := newLock(t, c, path).Acquire(wctx)
		cancel()
		assert.ErrorIs(t, err, recipes.ErrNotAcquired)
	}
	kids, _, err := observer.Children(ctx, path)
	require.NoError(t, err)
	assert.Equal(t, []string{"lock"}, kids)
	require.NoError(t, holder.Release(ctx))
}

// GuardedMulti cannot fence the exclusive lock (its node path is shared by
// every holder): it refuses rather than guard nothing.
func TestGuardedMultiRefused(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	c := connect(t, servers)
	lease, err := newLock(t, c, "/exclusive/guard").Acquire(ctx)
	require.NoError(t, err)
	_, err = lease.(znode.Lease).GuardedMulti(ctx, session.CreateOp("/exclusive/guard-write", nil, 0))
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	require.NoError(t, lease.Release(ctx))
}

func TestBadInput(t *testing.T) {
	c := connect(t, sharedServers(t))
	for _, tc := range []struct {
		why  string
		c    *session.Client
		path string
		opts []exclusive.Option
	}{
		{"nil client", nil, "/x", nil},
		{"empty path", c, "", nil},
		{"relative path", c, "rel", nil},
		{"the root", c, "/", nil},
		{"trailing slash", c, "/a/", nil},
		{"nil Option", c, "/x", []exclusive.Option{nil}},
	} {
		_, err := exclusive.New(tc.c, tc.path, tc.opts...)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, tc.why)
	}
}

func TestString(t *testing.T) {
	assert.Equal(t, "exclusive /locks/x", newLock(t, connect(t, sharedServers(t)), "/locks/x").String())
}
