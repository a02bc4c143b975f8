package mutex_test

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
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// acquireAsync starts m.Acquire(ctx) and returns where its result comes.
func acquireAsync(m *mutex.Mutex, ctx context.Context) <-chan recipes.Lease {
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
		for ch := range states {
			if ch.State == session.Suspended {
				break
			}
		}
		p.Restore(t)
		for ch := range states {
			if ch.State == session.Reconnected {
				break
			}
		}
		time.Sleep(500 * time.Millisecond) // time for a re-queue to show, if the waiter made one
		after := children(t, observer, path)
		slices.Sort(after)
		assert.Equal(t, before, after, "the waiter kept its node")

		require.NoError(t, holder.Release(ctx))
		var first recipes.Lease
		select {
		case first = <-waiter:
			require.NotNil(t, first, "the waiter's Acquire failed")
		case l := <-late:
			if l != nil {
				_ = l.Release(ctx)
			}
			t.Fatal("the contender queued after the waiter got the lock first")
		case <-time.After(waitLimit):
			t.Fatal("nobody acquired")
		}
		require.NoError(t, first.Release(ctx))
		select {
		case l := <-late:
			require.NotNil(t, l)
			require.NoError(t, l.Release(ctx))
		case <-time.After(waitLimit):
			t.Fatal("the later contender never acquired")
		}
		waitForNodes(t, observer, path, 0)
	})
}
