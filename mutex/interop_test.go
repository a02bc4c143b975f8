package mutex_test

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/integration/curator"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Interoperability with Apache Curator's InterProcessMutex, run in a JVM by
// package curator, on the same lock paths of a real ZooKeeper.
//
// Each test has a lock path of its own right under the root.

// interopNodeName is the name of an InterProcessMutex node (protected mode);
// ours must have the same shape.
var interopNodeName = regexp.MustCompile(`^_c_[0-9a-f-]{36}-lock-\d{10}$`)

// interopStillWaiting is how long a waiter is watched to see that it does not get
// the lock while another holds it: a bounded look, not a timing assertion.
const interopStillWaiting = 300 * time.Millisecond

// interopCurator starts a Curator agent with an InterProcessMutex on lockPath.
func interopCurator(t *testing.T, servers []string, lockPath string) *curator.Agent {
	t.Helper()
	a := curator.Start(t, servers)
	a.DoExpect(t, "mutex "+lockPath, "ok")
	return a
}

// interopMutex is a Go mutex on lockPath over a session of its own.
func interopMutex(t *testing.T, servers []string, lockPath string) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(connect(t, servers), lockPath)
	require.NoError(t, err)
	return m
}

type interopResult struct {
	lease recipes.Lease
	err   error
}

// interopAcquireAsync runs m.Acquire(ctx) in a goroutine; ctx ends at t's cleanup,
// so the goroutine cannot outlive the test.
func interopAcquireAsync(ctx context.Context, m *mutex.Mutex) <-chan interopResult {
	out := make(chan interopResult, 1)
	go func() {
		l, err := m.Acquire(ctx)
		out <- interopResult{l, err}
	}()
	return out
}

// interopWaitAcquired waits (bounded) for an asynchronous Acquire to succeed.
func interopWaitAcquired(t *testing.T, what string, res <-chan interopResult) recipes.Lease {
	t.Helper()
	select {
	case r := <-res:
		require.NoError(t, r.err, what)
		return r.lease
	case <-time.After(waitLimit):
		t.Fatalf("%s: not acquired within %v", what, waitLimit)
		return nil
	}
}

// interopRequireWaiting checks, for a short bounded while, that an asynchronous
// Acquire has not returned.
func interopRequireWaiting(t *testing.T, what string, res <-chan interopResult) {
	t.Helper()
	select {
	case r := <-res:
		t.Fatalf("%s: Acquire returned (lease %v, err %v) while the lock is held elsewhere", what, r.lease, r.err)
	case <-time.After(interopStillWaiting):
	}
}

// interopWaitQueue polls the participants of m until there are n, and returns them.
func interopWaitQueue(t *testing.T, m *mutex.Mutex, n int) []recipes.Participant {
	t.Helper()
	var ps []recipes.Participant
	deadline := time.Now().Add(waitLimit)
	for {
		var err error
		ps, err = m.Participants(ctxT(t))
		require.NoError(t, err)
		if len(ps) == n {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock queue: %d participants after %v, want %d: %s", len(ps), waitLimit, n, interopDescribe(ps))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func interopDescribe(ps []recipes.Participant) string {
	s := ""
	for i, p := range ps {
		s += fmt.Sprintf("\n  %d: %s session=0x%x holder=%v", i, p.Node, p.SessionID, p.Holder)
	}
	return s
}

// interopRequireQueue checks the queue: node names (with holder first), owners and
// the Curator name shape of every node.
func interopRequireQueue(t *testing.T, ps []recipes.Participant, nodes []string, sessions []int64) {
	t.Helper()
	require.Len(t, ps, len(nodes), interopDescribe(ps))
	for i, p := range ps {
		require.Regexp(t, interopNodeName, p.Node, "participant %d", i)
		require.Equal(t, nodes[i], p.Node, "participant %d:%s", i, interopDescribe(ps))
		require.Equal(t, sessions[i], p.SessionID, "owner of participant %d:%s", i, interopDescribe(ps))
		require.Equal(t, i == 0, p.Holder, "holder flag of participant %d:%s", i, interopDescribe(ps))
		require.Equal(t, "lock-", p.Kind)
	}
}

// interopLeaseNode is the name (no path) of a Go lease's lock node.
func interopLeaseNode(t *testing.T, l recipes.Lease) string {
	t.Helper()
	nl, ok := l.(recipes.NodeLease)
	require.True(t, ok, "lease %T has no node", l)
	return path.Base(nl.Node())
}

func interopLeaseSession(t *testing.T, l recipes.Lease) int64 {
	t.Helper()
	return l.(recipes.NodeLease).Session().ID()
}

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
	require.Equal(t, javaNode, ps[0].Node)
	goNode := ps[1].Node
	interopRequireQueue(t, ps, []string{javaNode, goNode}, []int64{a.Session(), ps[1].SessionID})
	require.NotEqual(t, a.Session(), ps[1].SessionID)
	// Curator orders the mixed queue as we do.
	require.Equal(t, []string{javaNode, goNode}, a.Participants(t))
	interopRequireWaiting(t, "Go waiter behind Curator", res)

	a.DoExpect(t, "release", "released")
	lease := interopWaitAcquired(t, "Go waiter after Curator's release", res)
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
	javaNode := ps[1].Node
	interopRequireQueue(t, ps, []string{goNode, javaNode}, []int64{interopLeaseSession(t, lease), a.Session()})
	a.ExpectNoReply(t, interopStillWaiting)

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
	javaNode := ps[1].Node
	require.Equal(t, a.Session(), ps[1].SessionID)

	res := interopAcquireAsync(ctxT(t), w2)
	ps = interopWaitQueue(t, h, 3)
	w2Node := ps[2].Node
	w2Session := ps[2].SessionID
	interopRequireQueue(t, ps, []string{hNode, javaNode, w2Node},
		[]int64{interopLeaseSession(t, hLease), a.Session(), w2Session})
	require.Less(t, ps[0].Seq, ps[1].Seq)
	require.Less(t, ps[1].Seq, ps[2].Seq)
	a.ExpectNoReply(t, interopStillWaiting)
	interopRequireWaiting(t, "W2 behind H and Curator", res)

	// H releases: the lock goes to Curator, the next in line.
	require.NoError(t, hLease.Release(ctxT(t)))
	a.Expect(t, "acquired", waitLimit)
	interopRequireWaiting(t, "W2 behind Curator", res)
	interopRequireQueue(t, interopWaitQueue(t, w2, 2), []string{javaNode, w2Node}, []int64{a.Session(), w2Session})
	require.Equal(t, []string{javaNode, w2Node}, a.Participants(t))

	// Curator releases: the lock goes to W2.
	a.DoExpect(t, "release", "released")
	w2Lease := interopWaitAcquired(t, "W2 after Curator's release", res)
	require.Equal(t, w2Node, interopLeaseNode(t, w2Lease))
	require.Greater(t, w2Lease.Token(), hLease.Token(), "fencing tokens across a Curator holder")
	interopRequireQueue(t, interopWaitQueue(t, w2, 1), []string{w2Node}, []int64{w2Session})
	a.DoExpect(t, "tryacquire", "locked")
	require.NoError(t, w2Lease.Release(ctxT(t)))
	interopWaitQueue(t, w2, 0)
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
	names := []string{ps[0].Node, ps[1].Node, ps[2].Node}
	require.Equal(t, javaNode, names[0])
	for _, n := range names {
		require.Regexp(t, interopNodeName, n)
	}
	require.Equal(t, names, a.Participants(t), "Curator's order of the mixed queue")
	kids, _, err := observer.Children(ctxT(t), lockPath)
	require.NoError(t, err)
	require.ElementsMatch(t, names, kids, "nothing but lock nodes under the lock path")

	// Curator stores its participant id (by default its local address) in
	// its node; ours stores nothing unless WithData says so.
	javaData, _, err := observer.Get(ctxT(t), session.JoinPath(lockPath, javaNode))
	require.NoError(t, err)
	t.Logf("Curator's node data: %q", javaData)

	a.DoExpect(t, "release", "released")
	l1 := interopWaitAcquired(t, "W1 after Curator", res1)
	require.Equal(t, names[1], interopLeaseNode(t, l1))
	interopRequireWaiting(t, "W2 behind W1", res2)
	require.Equal(t, names[1:], a.Participants(t))
	require.NoError(t, l1.Release(ctxT(t)))
	l2 := interopWaitAcquired(t, "W2 after W1", res2)
	require.Equal(t, names[2], interopLeaseNode(t, l2))
	require.Greater(t, l2.Token(), l1.Token())
	require.NoError(t, l2.Release(ctxT(t)))
	require.Empty(t, a.Participants(t))
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
	a.ExpectNoReply(t, interopStillWaiting)
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
	interopRequireWaiting(t, "Go waiter behind Curator", res)
	a.Kill() // Curator's session, and its node, stay until the session expires
	lease := interopWaitAcquired(t, "Go waiter after Curator's session expired", res)
	require.Equal(t, ps[1].Node, interopLeaseNode(t, lease))
	require.NoError(t, lease.Release(ctxT(t)))
	interopWaitQueue(t, w, 0)
}
