package mutex_test

import (
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// TestInteropFIFOQueue: one fair queue across the two languages. Go holder
// H, then Curator C, then Go waiter W2: H's release goes to C (not W2), C's
// release to W2.
func TestInteropFIFOQueue(t *testing.T) {
	servers := sharedServers(t)
	const lockPath = "/interop-fifo"
	h := interopMutex(t, servers, lockPath)
	w2 := interopMutex(t, servers, lockPath)
	a := interopCurator(t, servers, lockPath)

	hLease, err := h.Acquire(ctxT(t))
	require.NoError(t, err)
	hNode := interopLeaseNode(t, hLease)

	a.Send(t, "acquire")
	ps := interopWaitQueue(t, h, 2)
	javaNode := ps[1].Name
	require.Equal(t, a.Session(), ps[1].SessionID)

	res := interopAcquireAsync(ctxT(t), w2)
	ps = interopWaitQueue(t, h, 3)
	w2Node := ps[2].Name
	w2Session := ps[2].SessionID
	interopRequireQueue(t, ps, []string{hNode, javaNode, w2Node},
		[]int64{interopLeaseSession(t, hLease), a.Session(), w2Session})
	require.Less(t, ps[0].Seq, ps[1].Seq)
	require.Less(t, ps[1].Seq, ps[2].Seq)
	a.ExpectNoReply(t, zktest.StillWaiting)
	res.Waiting(t, "W2 behind H and Curator")

	// H releases: the lock goes to Curator, the next in line.
	require.NoError(t, hLease.Release(ctxT(t)))
	a.Expect(t, "acquired", waitLimit)
	res.Waiting(t, "W2 behind Curator")
	interopRequireQueue(t, interopWaitQueue(t, w2, 2), []string{javaNode, w2Node}, []int64{a.Session(), w2Session})
	require.Equal(t, []string{javaNode, w2Node}, a.Participants(t))

	// Curator releases: the lock goes to W2.
	a.DoExpect(t, "release", "released")
	w2Lease := res.Acquired(t, "W2 after Curator's release")
	require.Equal(t, w2Node, interopLeaseNode(t, w2Lease))
	require.Greater(t, zktest.Token(t, w2Lease), zktest.Token(t, hLease), "fencing tokens across a Curator holder")
	interopRequireQueue(t, interopWaitQueue(t, w2, 1), []string{w2Node}, []int64{w2Session})
	a.DoExpect(t, "tryacquire", "locked")
	require.NoError(t, w2Lease.Release(ctxT(t)))
	interopWaitQueue(t, w2, 0)
}

// TestInteropWaitGone: a Go client waits for Curator's holder's node to
// go, and is told when Curator releases.
func TestInteropWaitGone(t *testing.T) {
	servers := sharedServers(t)
	const lockPath = "/interop-wait-gone"
	w := connect(t, servers)
	m := interopMutex(t, servers, lockPath)
	a := interopCurator(t, servers, lockPath)
	a.DoExpect(t, "acquire", "acquired")
	ps := interopWaitQueue(t, m, 1)
	require.Equal(t, a.Session(), ps[0].SessionID)

	res := make(chan error, 1)
	go func() {
		g, err := ps[0].WaitGone(ctxT(t), w)
		if err == nil && g != (znode.Gone{}) {
			err = fmt.Errorf("reported %+v, want deleted", g)
		}
		res <- err
	}()
	a.DoExpect(t, "release", "released")
	select {
	case err := <-res:
		require.NoError(t, err)
	case <-time.After(waitLimit):
		t.Fatal("WaitGone did not return after Curator's release")
	}
}

// TestInteropNodeNames: our nodes and Curator's have the same shape, and
// both sides see the same queue in the same order, whoever holds.
func TestInteropNodeNames(t *testing.T) {
	servers := sharedServers(t)
	const lockPath = "/interop-names"
	observer := connect(t, servers)
	a := interopCurator(t, servers, lockPath)
	w1 := interopMutex(t, servers, lockPath)
	w2 := interopMutex(t, servers, lockPath)

	a.DoExpect(t, "acquire", "acquired")
	javaNode := path.Base(a.Node(t, "node"))
	res1 := interopAcquireAsync(ctxT(t), w1)
	interopWaitQueue(t, w1, 2)
	res2 := interopAcquireAsync(ctxT(t), w2)
	ps := interopWaitQueue(t, w1, 3)
	names := []string{ps[0].Name, ps[1].Name, ps[2].Name}
	require.Equal(t, javaNode, names[0])
	for _, n := range names {
		require.Regexp(t, interopNodeName, n)
	}
	require.Equal(t, names, a.Participants(t), "Curator's order of the mixed queue")
	for _, p := range ps {
		// Created is the node's ctime, Curator's node's as ours.
		ok, st, err := observer.Exists(ctxT(t), p.Path)
		require.NoError(t, err)
		require.True(t, ok, p.Path)
		require.Equal(t, time.UnixMilli(st.Ctime), p.Created, "Created of %s", p.Name)
	}
	kids, _, err := observer.Children(ctxT(t), lockPath)
	require.NoError(t, err)
	require.ElementsMatch(t, names, kids, "nothing but lock nodes under the lock path")

	// Curator stores its participant id (by default its local address) in
	// its node; ours stores nothing unless WithData says so.
	javaData, _, err := observer.Get(ctxT(t), session.JoinPath(lockPath, javaNode))
	require.NoError(t, err)
	t.Logf("Curator's node data: %q", javaData)

	a.DoExpect(t, "release", "released")
	l1 := res1.Acquired(t, "W1 after Curator")
	require.Equal(t, names[1], interopLeaseNode(t, l1))
	res2.Waiting(t, "W2 behind W1")
	require.Equal(t, names[1:], a.Participants(t))
	require.NoError(t, l1.Release(ctxT(t)))
	l2 := res2.Acquired(t, "W2 after W1")
	require.Equal(t, names[2], interopLeaseNode(t, l2))
	require.Greater(t, zktest.Token(t, l2), zktest.Token(t, l1))
	require.NoError(t, l2.Release(ctxT(t)))
	require.Empty(t, a.Participants(t))
}
