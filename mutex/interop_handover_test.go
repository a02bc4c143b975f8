package mutex_test

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// TestInteropCuratorHoldsGoWaits: while Curator holds the lock, Go's
// TryAcquire fails with ErrLocked (leaving nothing behind) and Acquire waits
// behind Curator's node; Curator's release hands the lock to Go.
func TestInteropCuratorHoldsGoWaits(t *testing.T) {
	servers := sharedServers(t)
	const lockPath = "/interop-curator-holds"
	a := interopCurator(t, servers, lockPath)
	m := interopMutex(t, servers, lockPath)

	a.DoExpect(t, "acquire", "acquired")
	javaNode := path.Base(a.Node(t, "node"))
	require.Regexp(t, interopNodeName, javaNode)
	interopRequireQueue(t, interopWaitQueue(t, m, 1), []string{javaNode}, []int64{a.Session()})

	_, err := m.TryAcquire(ctxT(t))
	require.ErrorIs(t, err, recipes.ErrLocked)
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	// TryAcquire leaves nothing behind. Its node is deleted in the
	// background (the engine's clean-up; the locktest contract allows it), so
	// another session may still see it for a moment after TryAcquire
	// returned: wait for it to go, then ask Curator.
	interopWaitQueue(t, m, 1)
	require.Equal(t, []string{javaNode}, a.Participants(t))

	// An Acquire that gives up (its context ends) while Curator holds leaves
	// nothing behind either, and does not disturb Curator.
	short, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
	_, err = m.Acquire(short)
	cancel()
	require.ErrorIs(t, err, recipes.ErrNotAcquired)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	interopWaitQueue(t, m, 1)
	require.Equal(t, []string{javaNode}, a.Participants(t))
	a.DoExpect(t, "held", "held true")

	res := interopAcquireAsync(ctxT(t), m)
	ps := interopWaitQueue(t, m, 2) // our node queued behind Curator's
	require.Equal(t, javaNode, ps[0].Name)
	goNode := ps[1].Name
	interopRequireQueue(t, ps, []string{javaNode, goNode}, []int64{a.Session(), ps[1].SessionID})
	require.NotEqual(t, a.Session(), ps[1].SessionID)
	// Curator orders the mixed queue as we do.
	require.Equal(t, []string{javaNode, goNode}, a.Participants(t))
	res.Waiting(t, "Go waiter behind Curator")

	a.DoExpect(t, "release", "released")
	lease := res.Acquired(t, "Go waiter after Curator's release")
	require.Equal(t, goNode, interopLeaseNode(t, lease))
	interopRequireQueue(t, interopWaitQueue(t, m, 1), []string{goNode}, []int64{interopLeaseSession(t, lease)})
	require.Equal(t, []string{goNode}, a.Participants(t))
	a.DoExpect(t, "node", "node none")
	require.NoError(t, lease.Release(ctxT(t)))
	interopWaitQueue(t, m, 0)
}

// TestInteropGoHoldsCuratorWaits: while Go holds the lock, Curator's
// acquire(0 ms) says locked (and leaves nothing behind) and a blocking acquire
// waits behind Go's node; Go's release hands the lock to Curator.
func TestInteropGoHoldsCuratorWaits(t *testing.T) {
	servers := sharedServers(t)
	const lockPath = "/interop-go-holds"
	m := interopMutex(t, servers, lockPath)
	a := interopCurator(t, servers, lockPath)

	lease, err := m.Acquire(ctxT(t))
	require.NoError(t, err)
	goNode := interopLeaseNode(t, lease)
	require.Regexp(t, interopNodeName, goNode)
	require.Equal(t, []string{goNode}, a.Participants(t))

	a.DoExpect(t, "tryacquire", "locked")
	a.DoExpect(t, "tryacquire 200", "locked")
	a.DoExpect(t, "node", "node none")
	interopRequireQueue(t, interopWaitQueue(t, m, 1), []string{goNode}, []int64{interopLeaseSession(t, lease)})
	require.NoError(t, lease.Err(), "Curator's try must not disturb the Go holder")

	a.Send(t, "acquire")
	ps := interopWaitQueue(t, m, 2)
	javaNode := ps[1].Name
	interopRequireQueue(t, ps, []string{goNode, javaNode}, []int64{interopLeaseSession(t, lease), a.Session()})
	a.ExpectNoReply(t, zktest.StillWaiting)

	require.NoError(t, lease.Release(ctxT(t)))
	a.Expect(t, "acquired", waitLimit)
	require.Equal(t, "/interop-go-holds/"+javaNode, a.Node(t, "node"))
	interopRequireQueue(t, interopWaitQueue(t, m, 1), []string{javaNode}, []int64{a.Session()})

	_, err = m.TryAcquire(ctxT(t))
	require.ErrorIs(t, err, recipes.ErrLocked)

	a.DoExpect(t, "release", "released")
	interopWaitQueue(t, m, 0)
	a.DoExpect(t, "release", "error IllegalMonitorStateException: You do not own the lock: "+lockPath)
}

// TestInteropSessionEnd: a holder whose session ends hands the lock over
// across languages. The Go holder's client closes (its session and node go at
// once): the Curator waiter gets the lock. Then the Curator JVM is killed
// while holding: once its session expires, the Go waiter gets the lock.
func TestInteropSessionEnd(t *testing.T) {
	servers := sharedServers(t)
	const lockPath = "/interop-session-end"
	a := curator.Start(t, servers, curator.WithSessionTimeout(2*time.Second))
	a.DoExpect(t, "mutex "+lockPath, "ok")

	hClient := connect(t, servers)
	h, err := mutex.New(hClient, lockPath)
	require.NoError(t, err)
	hLease, err := h.Acquire(ctxT(t))
	require.NoError(t, err)
	a.Send(t, "acquire")
	interopWaitQueue(t, h, 2)
	a.ExpectNoReply(t, zktest.StillWaiting)
	hClient.Close()
	a.Expect(t, "acquired", waitLimit)
	select {
	case <-hLease.Done():
	case <-time.After(waitLimit):
		t.Fatalf("the Go lease outlived its closed client by %v", waitLimit)
	}
	require.ErrorIs(t, hLease.Err(), recipes.ErrLockLost)

	w := interopMutex(t, servers, lockPath)
	res := interopAcquireAsync(ctxT(t), w)
	ps := interopWaitQueue(t, w, 2)
	require.Equal(t, a.Session(), ps[0].SessionID)
	res.Waiting(t, "Go waiter behind Curator")
	a.Kill() // Curator's session, and its node, stay until the session expires
	lease := res.Acquired(t, "Go waiter after Curator's session expired")
	require.Equal(t, ps[1].Name, interopLeaseNode(t, lease))
	require.NoError(t, lease.Release(ctxT(t)))
	interopWaitQueue(t, w, 0)
}
