package engine_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// acquireAsync starts m.Acquire(ctx) and returns where its result comes.
func acquireAsync(m recipes.Locker, ctx context.Context) <-chan recipes.Lease {
	got := make(chan recipes.Lease, 1)
	go func() {
		l, err := m.Acquire(ctx)
		if err != nil {
			l = nil
		}
		got <- l
	}()
	return got
}

// A waiter whose connection drops while its session survives keeps its node
// and its place in the queue, under either policy (Curator keeps a waiter's
// node across a reconnect). Under the default policy it used to delete its
// node and queue again at the tail, behind those who came after it.
func TestWaiterKeepsItsPlaceAcrossASuspension(t *testing.T) {
	server := sharedServers(t)[0]
	observer := connect(t, []string{server})
	zktest.EachPolicyThroughProxy(t, server, func(t *testing.T, p *harness.Proxy,
		c *session.Client, states <-chan session.StateChange, policy session.ErrorPolicy) {
		path := fmt.Sprintf("/faults/keep-place-%d", policy)
		ctx := ctxT(t)
		holder, err := newMutex(t, observer, path).Acquire(ctx)
		require.NoError(t, err)
		waiter := acquireAsync(newMutex(t, c, path), ctx)
		waitForNodes(t, observer, path, 2)
		late := acquireAsync(newMutex(t, connect(t, []string{server}), path), ctx)
		waitForNodes(t, observer, path, 3)
		before := children(t, observer, path)
		slices.Sort(before)

		p.Cut(t)
		awaitState(t, states, session.Suspended)
		p.Restore(t)
		awaitState(t, states, session.Reconnected)
		time.Sleep(500 * time.Millisecond) // time for a re-queue to show, if the waiter made one
		after := children(t, observer, path)
		slices.Sort(after)
		assert.Equal(t, before, after, "the waiter kept its node")

		handOffInOrder(t, ctx, holder, waiter, late)
		waitForNodes(t, observer, path, 0)
	})
}

// The connection drops after the waiter's create reached the server and
// before its reply came back (the proxy holds the server's replies, then
// cuts the connection, and the reply with it): after the reconnection the
// waiter finds its node by its protected prefix and keeps it, so a
// contender that queued meanwhile stays behind it, under either policy.
// Under the default policy the waiter used to delete that node and queue
// again, behind the contender.
func TestWaiterKeepsItsPlaceWhenItsCreateReplyIsLost(t *testing.T) {
	server := sharedServers(t)[0]
	observer := connect(t, []string{server})
	zktest.EachPolicyThroughProxy(t, server, func(t *testing.T, p *harness.Proxy,
		c *session.Client, states <-chan session.StateChange, policy session.ErrorPolicy) {
		path := fmt.Sprintf("/faults/reply-lost-%d", policy)
		ctx := ctxT(t)
		holder, err := newMutex(t, observer, path).Acquire(ctx)
		require.NoError(t, err)
		id := c.CurrentSession().ID()

		p.HoldToClient(t) // the server hears the waiter; the waiter hears nothing
		waiter := acquireAsync(newMutex(t, c, path), ctx)
		ours := nodeOfSession(t, observer, path, id)
		p.Cut(t) // the create's reply, held by the proxy, is dropped
		awaitState(t, states, session.Suspended)
		late := acquireAsync(newMutex(t, connect(t, []string{server}), path), ctx)
		waitForNodes(t, observer, path, 3)
		p.Restore(t)
		require.Equal(t, id, awaitState(t, states, session.Reconnected).SessionID, "the session survived")

		got := handOffInOrder(t, ctx, holder, waiter, late)
		assert.Equal(t, ours, session.BaseName(got), "granted on the node its lost create made")
		waitForNodes(t, observer, path, 0)
	})
}

// awaitState reads states until want, bounded by waitLimit.
func awaitState(t *testing.T, states <-chan session.StateChange, want session.State) session.StateChange {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case ch, ok := <-states:
			require.True(t, ok, "state channel closed before %v", want)
			if ch.State == want {
				return ch
			}
		case <-timeout:
			t.Fatalf("no %v within %v", want, waitLimit)
		}
	}
}

// nodeOfSession waits (bounded) for a node under path whose ephemeral owner
// is session id, and returns its name.
func nodeOfSession(t *testing.T, c *session.Client, path string, id int64) string {
	t.Helper()
	var name string
	require.Eventually(t, func() bool {
		for _, n := range children(t, c, path) {
			if _, st, err := c.Get(ctxT(t), path+"/"+n); err == nil && st.EphemeralOwner == id {
				name = n
				return true
			}
		}
		return false
	}, waitLimit, 20*time.Millisecond, "no node of session 0x%x under %s", id, path)
	return name
}

// handOffInOrder releases holder and checks that first is granted the lock
// before second, then releases first's lease and waits for second's. It
// returns the lock node first was granted on.
func handOffInOrder(t *testing.T, ctx context.Context, holder recipes.Lease, first, second <-chan recipes.Lease) string {
	t.Helper()
	require.NoError(t, holder.Release(ctx))
	var got recipes.Lease
	select {
	case got = <-first:
		require.NotNil(t, got, "the first waiter's Acquire failed")
	case l := <-second:
		if l != nil {
			_ = l.Release(ctx)
		}
		t.Fatal("the contender queued second got the lock first")
	case <-time.After(waitLimit):
		t.Fatal("nobody acquired")
	}
	node := got.(znode.Lease).Node()
	require.NoError(t, got.Release(ctx))
	select {
	case l := <-second:
		require.NotNil(t, l)
		require.NoError(t, l.Release(ctx))
	case <-time.After(waitLimit):
		t.Fatal("the contender queued second never acquired")
	}
	return node
}
