package mutex_test

import (
	"path"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/znode"
)

// Revocation across languages, Curator's protocol: the revoke message
// written into the holder's node (Go's znode.Revoke, Curator's
// Revoker.attemptRevoke) reaches a revocable holder of the other language,
// which decides to release.

// TestInteropRevokeCuratorHolder: a Curator holder made revocable
// (makeRevocable) hears Go's znode.Revoke, keeps the lock until it decides,
// then releases; the Go waiter that revoked gets the lock.
func TestInteropRevokeCuratorHolder(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const lockPath = "/interop-revoke-curator"
	a := curator.Start(t, servers)
	a.DoExpect(t, "revocable "+lockPath, "ok")
	a.DoExpect(t, "acquire", "acquired")
	javaNode := path.Base(a.Node(t, "node"))

	c := connect(t, servers)
	w, err := mutex.New(c, lockPath)
	require.NoError(t, err)
	res := interopAcquireAsync(ctx, w)
	ps := interopWaitQueue(t, w, 2)
	require.Equal(t, javaNode, ps[0].Name)
	a.DoExpect(t, "await-revoked 0", "not-revoked")

	require.NoError(t, znode.Revoke(ctx, c, lockPath+"/"+javaNode))
	a.DoExpect(t, "await-revoked "+interopMillis(waitLimit), "revoked")
	a.DoExpect(t, "revocations", "revocations 1")
	// Asked, not forced: the holder still holds until it releases.
	a.DoExpect(t, "held", "held true")
	res.Waiting(t, "Go waiter before Curator's release")
	a.DoExpect(t, "release", "released")
	lease := res.Acquired(t, "Go waiter after the revoked Curator holder released")
	require.Equal(t, ps[1].Name, interopLeaseNode(t, lease))
	require.NoError(t, lease.Release(ctx))
	interopWaitQueue(t, w, 0)
}

// TestInteropRevokeGoHolder: a Go holder made revocable (WithRevocable) is
// told, through its lease's Revoked, when Curator's Revoker.attemptRevoke
// writes into its node; it keeps the lock until it releases, and then the
// Curator waiter gets it. A Go holder that is not revocable is never told.
func TestInteropRevokeGoHolder(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const lockPath = "/interop-revoke-go"
	m, err := mutex.New(connect(t, servers), lockPath, mutex.WithRevocable())
	require.NoError(t, err)
	a := interopCurator(t, servers, lockPath)

	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	zl := lease.(znode.Lease)
	require.NotNil(t, zl.Revoked())
	a.DoExpect(t, "tryacquire 200", "locked")
	select {
	case <-zl.Revoked():
		t.Fatal("told of a revocation before anyone asked")
	default:
	}

	a.DoExpect(t, "revoke "+zl.Node(), "sent")
	select {
	case <-zl.Revoked():
	case <-time.After(waitLimit):
		t.Fatalf("the Go holder was not told of Curator's revocation within %v", waitLimit)
	}
	require.NoError(t, lease.Err(), "a revocation request does not end the lease")
	a.Send(t, "acquire")
	a.ExpectNoReply(t, zktest.StillWaiting) // the holder decides
	require.NoError(t, lease.Release(ctx))
	a.Expect(t, "acquired", waitLimit)

	// Curator's revocation of a Go holder that is not revocable: nothing.
	a.DoExpect(t, "release", "released")
	plain := interopMutex(t, servers, lockPath)
	pl, err := plain.Acquire(ctx)
	require.NoError(t, err)
	require.Nil(t, pl.(znode.Lease).Revoked())
	a.DoExpect(t, "revoke "+pl.(znode.Lease).Node(), "sent")
	a.DoExpect(t, "tryacquire 200", "locked")
	require.NoError(t, pl.Err())
	require.NoError(t, pl.Release(ctx))
	interopWaitQueue(t, plain, 0)
}

// interopMillis is d in whole milliseconds, for the agent's commands.
func interopMillis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
