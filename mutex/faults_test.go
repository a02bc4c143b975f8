package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/integration"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/session"
)

func newMutex(t testing.TB, c *session.Client, path string) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(c, path)
	require.NoError(t, err)
	return m
}

// children lists a lock path (nil when it does not exist).
func children(t testing.TB, c *session.Client, path string) []string {
	t.Helper()
	kids, _, err := c.Children(ctxT(t), path)
	if err != nil {
		return nil
	}
	return kids
}

// waitForNodes waits (bounded) until path has n children.
func waitForNodes(t testing.TB, c *session.Client, path string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(children(t, c, path)) == n },
		waitLimit, 20*time.Millisecond, "want %d nodes under %s, have %v", n, path, children(t, c, path))
}

// The holder's connection is blackholed past the session timeout: its lease
// is cancelled before any other process acquires the lock.
func TestBlackholedHolderIsCancelledBeforeNextAcquires(t *testing.T) {
	z := integration.StartZK(t, 1)
	for _, policy := range []session.ErrorPolicy{session.SuspendedIsLost, session.OnlyLostIsLost} {
		t.Run(fmt.Sprint("policy ", policy), func(t *testing.T) {
			p := integration.NewProxy(t, z.Servers()[0])
			path := fmt.Sprintf("/faults/blackhole-%d", policy)
			holderClient := connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second),
				session.WithErrorPolicy(policy))
			waiterClient := connect(t, z.Servers())
			ctx := ctxT(t)

			held, err := newMutex(t, holderClient, path).Acquire(ctx)
			require.NoError(t, err)
			var holderDone atomic.Bool
			context.AfterFunc(held.Context(), func() { holderDone.Store(true) })

			acquired := make(chan recipes.Lease, 1)
			go func() {
				l, err := newMutex(t, waiterClient, path).Acquire(ctx)
				assert.NoError(t, err)
				assert.True(t, holderDone.Load(), "the waiter acquired while the old holder's lease was live")
				acquired <- l
			}()
			p.Blackhole(t)
			var next recipes.Lease
			select {
			case next = <-acquired:
			case <-time.After(waitLimit):
				t.Fatal("the waiter never acquired")
			}
			require.NotNil(t, next)
			assert.ErrorIs(t, context.Cause(held.Context()), recipes.ErrLockLost)
			assert.Greater(t, next.Token(), held.Token())
			p.Restore(t)
			assert.ErrorIs(t, held.Release(ctx), recipes.ErrLockLost)
			require.NoError(t, next.Release(ctx))
			waitForNodes(t, waiterClient, path, 0)
		})
	}
}

// The connection is cut after the create request reached the server and
// before its reply came back: no orphan node, no deadlock.
func TestConnectionCutBetweenCreateAndReply(t *testing.T) {
	z := integration.StartZK(t, 1)
	observer := connect(t, z.Servers())
	zktest.EachPolicyThroughProxy(t, z.Servers()[0], func(t *testing.T, p *integration.Proxy,
		c *session.Client, states <-chan session.StateChange, policy session.ErrorPolicy) {
		path := fmt.Sprintf("/faults/cut-create-%d", policy)
		m := newMutex(t, c, path)
		// Make the parent exist so the create is the next request.
		l, err := m.Acquire(ctxT(t))
		require.NoError(t, err)
		require.NoError(t, l.Release(ctxT(t)))

		p.ResetAfter(t, integration.CreateWithZxidSize(path+"/_c_00000000-0000-0000-0000-000000000000-lock-"))
		lease := zktest.AcquireAcrossCut(t, p, states, m.Acquire)
		nl := lease.(recipes.NodeLease)
		require.Eventually(t, func() bool {
			kids := children(t, observer, path)
			return len(kids) == 1 && kids[0] == session.BaseName(nl.Node())
		}, waitLimit, 50*time.Millisecond, "want only our node, got %v", children(t, observer, path))

		// Another contender is not blocked by an orphan.
		require.NoError(t, lease.Release(ctxT(t)))
		other, err := newMutex(t, observer, path).TryAcquire(ctxT(t))
		require.NoError(t, err)
		require.NoError(t, other.Release(ctxT(t)))
		assert.Empty(t, children(t, observer, path))
	})
}

// The ensemble's leader is killed while many sessions contend: exclusion
// holds throughout and the work goes on.
func TestLeaderKilledWhileContending(t *testing.T) {
	z := integration.StartZK(t, 3)
	const contenders, rounds = 6, 150
	lockers := make([]recipes.Locker, contenders)
	for i := range lockers {
		lockers[i] = newMutex(t, connect(t, z.Servers(), session.WithSessionTimeout(10*time.Second)), "/faults/leader")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitLimit)
	defer cancel()
	done := make(chan struct{})
	var lost int64
	var err error
	go func() {
		defer close(done)
		lost, err = locktest.Contention(ctx, lockers, rounds)
	}()
	time.Sleep(500 * time.Millisecond) // let the contention get going
	z.Leader(t).Kill(t)
	<-done
	require.NoError(t, err, "exclusion violated or work stopped")
	t.Logf("%d leases ended while held (suspension at the leader's death)", lost)
	z.Leader(t)
}

func TestErrorsAreSentinels(t *testing.T) {
	_, err := mutex.New(nil, "/x")
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	c := connect(t, sharedServers(t))
	for _, p := range []string{"", "x", "/a/", "/a//b", "/a/./b", "/a\x00"} {
		_, err := mutex.New(c, p)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "%q", p)
		assert.ErrorIs(t, err, session.ErrInvalidArgument, "%q", p)
	}
	_, err = mutex.New(c, "/")
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "the root cannot be a lock path")
	_, err = mutex.New(c, "/x", nil)
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.False(t, errors.Is(err, recipes.ErrLocked))
}

// An operator deletes the holder's node (breaking the lock): the next
// contender gets the lock, and the old holder's Release says the lock was
// lost rather than returning nil.
func TestNodeDeletedUnderHolder(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	const path = "/faults/deleted"
	holder, err := newMutex(t, connect(t, servers), path).Acquire(ctx)
	require.NoError(t, err)
	operator := connect(t, servers)
	require.NoError(t, operator.Delete(ctx, holder.(recipes.NodeLease).Node(), -1))
	next, err := newMutex(t, connect(t, servers), path).TryAcquire(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, holder.Release(ctx), recipes.ErrLockLost)
	require.NoError(t, next.Release(ctx))
}

// Release ends the lease's context before the node goes: by the time anyone
// can see the node deleted (and so take the lock), the old lease is over.
func TestReleaseEndsLeaseBeforeDeleting(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	observer := connect(t, servers)
	for range 20 {
		lease, err := newMutex(t, connect(t, servers), "/faults/release-order").Acquire(ctx)
		require.NoError(t, err)
		_, _, ev, err := observer.GetW(ctx, lease.(recipes.NodeLease).Node())
		require.NoError(t, err)
		released := make(chan error, 1)
		go func() { released <- lease.Release(ctx) }()
		e := <-ev
		require.Equal(t, zk.EventNodeDeleted, e.Type)
		assert.ErrorIs(t, lease.Err(), recipes.ErrReleased, "the node was gone while the lease was live")
		require.NoError(t, <-released)
	}
}

// A re-entered lease released after the lock was lost reports the loss too.
func TestNestedReleaseAfterLoss(t *testing.T) {
	z := integration.StartZK(t, 1)
	p := integration.NewProxy(t, z.Servers()[0])
	ctx := ctxT(t)
	m := newMutex(t, connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second)), "/faults/nested")
	outer, err := m.Acquire(ctx)
	require.NoError(t, err)
	inner, err := m.Acquire(outer.Context())
	require.NoError(t, err)
	p.Blackhole(t)
	select {
	case <-inner.Done():
	case <-time.After(waitLimit):
		t.Fatal("lease not ended by the partition")
	}
	assert.ErrorIs(t, inner.Release(ctx), recipes.ErrLockLost)
	assert.ErrorIs(t, outer.Release(ctx), recipes.ErrLockLost)
	p.Restore(t)
}

// With lookahead, waiters also watch the node two ahead and may take the
// lock without listing: the exclusion oracle still holds.
func TestLookaheadExclusion(t *testing.T) {
	servers := sharedServers(t)
	lockers := make([]recipes.Locker, 6)
	for i := range lockers {
		m, err := mutex.New(connect(t, servers), "/faults/lookahead", mutex.WithLookahead())
		require.NoError(t, err)
		lockers[i] = m
	}
	lost, err := locktest.Contention(ctxT(t), lockers, 30)
	require.NoError(t, err)
	assert.Zero(t, lost)
}

// ctx ends while the create request is still on its way: Acquire returns at
// once with ctx's error, and the node the create makes is removed.
func TestContextEndsDuringCreate(t *testing.T) {
	z := integration.StartZK(t, 1)
	p := integration.NewProxy(t, z.Servers()[0])
	observer := connect(t, z.Servers())
	const path = "/faults/cancel-create"
	m := newMutex(t, connect(t, []string{p.Addr()}, session.WithSessionTimeout(20*time.Second)), path)
	warm, err := m.Acquire(ctxT(t)) // the parent exists from now on
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctxT(t)))

	p.Latency(t, 300*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = m.Acquire(ctx)
	assert.ErrorIs(t, err, recipes.ErrNotAcquired)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	p.Restore(t)
	waitForNodes(t, observer, path, 0)
}

// Release while the connection is cut: the lease ends at once, Release says
// the delete goes on in the background, and once the connection is back the
// node is gone.
func TestReleaseDuringCut(t *testing.T) {
	z := integration.StartZK(t, 1)
	p := integration.NewProxy(t, z.Servers()[0])
	observer := connect(t, z.Servers())
	const path = "/faults/release-cut"
	c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(30*time.Second),
		session.WithErrorPolicy(session.OnlyLostIsLost))
	lease, err := newMutex(t, c, path).Acquire(ctxT(t))
	require.NoError(t, err)

	p.Cut(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	assert.Error(t, lease.Release(ctx), "the delete could not be made")
	assert.ErrorIs(t, lease.Err(), recipes.ErrReleased, "the lease ends at Release all the same")
	assert.Len(t, children(t, observer, path), 1, "the node is still there while the connection is cut")
	p.Restore(t)
	waitForNodes(t, observer, path, 0)
}

// A waiter whose session expires while it waits is not failed: it queues
// again under the next session and gets the lock, and the node of its old
// session is gone.
func TestWaiterSurvivesSessionExpiry(t *testing.T) {
	z := integration.StartZK(t, 1)
	p := integration.NewProxy(t, z.Servers()[0])
	observer := connect(t, z.Servers())
	const path = "/faults/waiter-expiry"
	holder, err := newMutex(t, observer, path).Acquire(ctxT(t))
	require.NoError(t, err)

	wc := connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
	states, err := wc.Subscribe(ctxT(t))
	require.NoError(t, err)
	first, err := wc.Session(ctxT(t))
	require.NoError(t, err)
	got := make(chan recipes.Lease, 1)
	go func() {
		l, err := newMutex(t, wc, path).Acquire(ctxT(t))
		if assert.NoError(t, err) {
			got <- l
		}
		close(got)
	}()
	waitForNodes(t, observer, path, 2) // the waiter queued

	p.Blackhole(t)
	for ch := range states {
		if ch.State == session.Lost {
			break
		}
	}
	p.Restore(t)
	for ch := range states {
		if ch.State == session.Reconnected {
			break
		}
	}
	require.NoError(t, holder.Release(ctxT(t)))
	select {
	case l, ok := <-got:
		require.True(t, ok, "the waiter's Acquire failed")
		assert.NotEqual(t, first.ID(), l.(recipes.NodeLease).Session().ID(), "held under the new session")
		assert.Len(t, children(t, observer, path), 1, "the old session's node is gone")
		require.NoError(t, l.Release(ctxT(t)))
	case <-time.After(waitLimit):
		t.Fatal("the waiter never acquired under its new session")
	}
}
