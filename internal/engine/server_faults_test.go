package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// The holder's connection is blackholed past the session timeout: its lease
// is cancelled before any other process acquires the lock.
func TestBlackholedHolderIsCancelledBeforeNextAcquires(t *testing.T) {
	z := harness.StartZK(t, 1)
	for _, policy := range []session.ErrorPolicy{session.SuspendedIsLost, session.OnlyLostIsLost} {
		t.Run(fmt.Sprint("policy ", policy), func(t *testing.T) {
			p := harness.NewProxy(t, z.Servers()[0])
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
			assert.Greater(t, zktest.Token(t, next), zktest.Token(t, held))
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
	z := harness.StartZK(t, 1)
	observer := connect(t, z.Servers())
	zktest.EachPolicyThroughProxy(t, z.Servers()[0], func(t *testing.T, p *harness.Proxy,
		c *session.Client, states <-chan session.StateChange, policy session.ErrorPolicy) {
		path := fmt.Sprintf("/faults/cut-create-%d", policy)
		m := newMutex(t, c, path)
		// Make the parent exist so the create is the next request.
		l, err := m.Acquire(ctxT(t))
		require.NoError(t, err)
		require.NoError(t, l.Release(ctxT(t)))

		p.ResetAfter(t, harness.CreateWithZxidSize(path+"/_c_00000000-0000-0000-0000-000000000000-lock-"))
		lease := zktest.AcquireAcrossCut(t, p, states, m.Acquire)
		nl := lease.(znode.Lease)
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
	z := harness.StartZK(t, 3)
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

// ctx ends while the create request is still on its way: Acquire returns at
// once with ctx's error, and the node the create makes is removed.
func TestContextEndsDuringCreate(t *testing.T) {
	z := harness.StartZK(t, 1)
	p := harness.NewProxy(t, z.Servers()[0])
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

// A waiter whose session expires while it waits is not failed: it queues
// again under the next session and gets the lock, and the node of its old
// session is gone.
func TestWaiterSurvivesSessionExpiry(t *testing.T) {
	z := harness.StartZK(t, 1)
	p := harness.NewProxy(t, z.Servers()[0])
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
		assert.NotEqual(t, first.ID(), l.(znode.Lease).SessionID(), "held under the new session")
		assert.Len(t, children(t, observer, path), 1, "the old session's node is gone")
		require.NoError(t, l.Release(ctxT(t)))
	case <-time.After(waitLimit):
		t.Fatal("the waiter never acquired under its new session")
	}
}
