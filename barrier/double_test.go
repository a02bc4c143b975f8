package barrier_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// Three Go members, each on a session of its own: no Enter returns before
// the third member's node exists, all return once it does; no Leave
// returns while a member is in, all return once the last leaves; nothing
// is left under the path.
func TestDoubleGoMembers(t *testing.T) {
	servers := sharedServers(t)
	p := pathOf(t)
	observer := zktest.Connect(t, servers)
	var ds []*barrier.Double
	for range 3 {
		ds = append(ds, newDouble(t, zktest.Connect(t, servers), p, 3))
	}
	ctx := ctxT(t)

	entering := []result{enter(ctx, ds[0]), enter(ctx, ds[1])}
	zktest.WaitForNodes(t, observer, p, 2)
	for i, r := range entering {
		r.pending(t, fmt.Sprint("Enter of member ", i))
	}
	entering = append(entering, enter(ctx, ds[2]))
	for i, r := range entering {
		require.NoError(t, r.await(t, fmt.Sprint("Enter of member ", i)))
	}
	assert.ElementsMatch(t, []string{barrier.ReadyNode, path.Base(ds[0].Node()), path.Base(ds[1].Node()), path.Base(ds[2].Node())},
		zktest.Children(t, observer, p))

	// The lowest member stays in: every other Leave must wait for it.
	lowest := lowestOf(ds)
	var leaving []result
	for i, d := range ds {
		if i != lowest {
			leaving = append(leaving, leave(ctx, d))
		}
	}
	// The others' nodes go; the lowest's and ready stay.
	zktest.WaitForNodes(t, observer, p, 2)
	for i, r := range leaving {
		r.pending(t, fmt.Sprint("Leave ", i))
	}
	leaving = append(leaving, leave(ctx, ds[lowest]))
	for i, r := range leaving {
		require.NoError(t, r.await(t, fmt.Sprint("Leave ", i)))
	}
	assert.Empty(t, zktest.Children(t, observer, p), "nodes left under the barrier")
	for _, d := range ds {
		assert.Empty(t, d.Node())
	}
}

// watched waits (bounded) until n sessions have a watch on path
// (ZooKeeper's wchp: each path, then one line per session watching it).
func watched(t testing.TB, server, path string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		out, err := harness.FourLetterWord(server, "wchp")
		if err != nil {
			return false
		}
		count, in := 0, false
		for _, line := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(line, "/"):
				in = line == path
			case in && strings.TrimSpace(line) != "":
				count++
			}
		}
		return count == n
	}, waitLimit, 20*time.Millisecond, "want %d sessions watching %s", n, path)
}

// enterPair enters a member on a and one on b (ds[0] and ds[1]) into
// the double barrier at p for 2, again (after both left) until ds[lowest]
// is the lowest member, and returns them.
func enterPair(t testing.TB, a, b *session.Client, p string, lowest int) []*barrier.Double {
	t.Helper()
	for {
		ds := []*barrier.Double{newDouble(t, a, p, 2), newDouble(t, b, p, 2)}
		for _, r := range []result{enter(ctxT(t), ds[0]), enter(ctxT(t), ds[1])} {
			require.NoError(t, r.await(t, "Enter"))
		}
		if lowestOf(ds) == lowest {
			return ds
		}
		for _, r := range []result{leave(ctxT(t), ds[0]), leave(ctxT(t), ds[1])} {
			require.NoError(t, r.await(t, "Leave"))
		}
	}
}

// lowestOf is the index of the member whose node sorts first.
func lowestOf(ds []*barrier.Double) int {
	low := 0
	for i, d := range ds {
		if path.Base(d.Node()) < path.Base(ds[low].Node()) {
			low = i
		}
	}
	return low
}

// An Enter cancelled while it waits deletes its node and says why.
func TestEnterCancelled(t *testing.T) {
	servers := sharedServers(t)
	p := pathOf(t)
	observer := zktest.Connect(t, servers)
	d := newDouble(t, zktest.Connect(t, servers), p, 2)
	ctx, cancel := context.WithCancelCause(ctxT(t))
	r := enter(ctx, d)
	zktest.WaitForNodes(t, observer, p, 1)
	stop := errors.New("operator gave up")
	cancel(stop)
	err := r.await(t, "Enter")
	assert.ErrorIs(t, err, barrier.ErrNotThrough)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, stop)
	assert.Empty(t, zktest.Children(t, observer, p), "the cancelled member's node is left")
	assert.Empty(t, d.Node())

	// A new Enter with a partner goes through: the first try left nothing.
	other := newDouble(t, zktest.Connect(t, servers), p, 2)
	rs := []result{enter(ctxT(t), d), enter(ctxT(t), other)}
	for _, r := range rs {
		require.NoError(t, r.await(t, "Enter"))
	}
}

// A Leave cancelled while it waits, as the lowest member (which keeps its
// node) and as another (which has deleted it), leaves no node of its own;
// the member that stayed in then leaves alone and nothing is left.
func TestLeaveCancelled(t *testing.T) {
	for _, which := range []string{"lowest", "not lowest"} {
		t.Run(which, func(t *testing.T) {
			servers := sharedServers(t)
			p := pathOf(t)
			observer := zktest.Connect(t, servers)
			ds := []*barrier.Double{
				newDouble(t, zktest.Connect(t, servers), p, 2),
				newDouble(t, zktest.Connect(t, servers), p, 2),
			}
			for _, r := range []result{enter(ctxT(t), ds[0]), enter(ctxT(t), ds[1])} {
				require.NoError(t, r.await(t, "Enter"))
			}
			quitter := lowestOf(ds)
			if which == "not lowest" {
				quitter = 1 - quitter
			}
			ours := ds[quitter].Node()
			ctx, cancel := context.WithCancel(ctxT(t))
			r := leave(ctx, ds[quitter])
			if which == "not lowest" {
				zktest.WaitForNodes(t, observer, p, 2) // ours went, ready stays
			} else {
				// The lowest keeps its node and watches the other's.
				watched(t, servers[0], ds[1-quitter].Node(), 1)
			}
			r.pending(t, "Leave")
			cancel()
			err := r.await(t, "Leave")
			assert.ErrorIs(t, err, barrier.ErrNotThrough)
			assert.ErrorIs(t, err, context.Canceled)
			assert.NotContains(t, zktest.Children(t, observer, p), path.Base(ours))
			assert.Empty(t, ds[quitter].Node())

			require.NoError(t, leave(ctxT(t), ds[1-quitter]).await(t, "Leave"))
			assert.Empty(t, zktest.Children(t, observer, p), "nodes left under the barrier")
		})
	}
}

// The session of a waiting member expires (its connection blackholed past
// the session timeout): Enter returns an error that is ErrMemberLost and
// names the node, and the node is gone.
func TestEnterSessionLost(t *testing.T) {
	z := harness.StartZK(t, 1)
	px := harness.NewProxy(t, z.Servers()[0])
	observer := zktest.Connect(t, z.Servers())
	c := zktest.Connect(t, []string{px.Addr()}, session.WithSessionTimeout(2*time.Second))
	p := pathOf(t)
	d := newDouble(t, c, p, 2)
	r := enter(ctxT(t), d)
	zktest.WaitForNodes(t, observer, p, 1)
	node := zktest.Children(t, observer, p)[0]
	r.pending(t, "Enter")
	px.Blackhole(t)
	err := r.await(t, "Enter")
	assert.ErrorIs(t, err, barrier.ErrMemberLost)
	assert.ErrorIs(t, err, barrier.ErrNotThrough)
	assert.Contains(t, err.Error(), node)
	px.Restore(t)
	zktest.WaitForNodes(t, observer, p, 0)

	// The client goes on with a new session: the member can enter again.
	other := newDouble(t, zktest.Connect(t, z.Servers()), p, 2)
	for _, r := range []result{enter(ctxT(t), d), enter(ctxT(t), other)} {
		require.NoError(t, r.await(t, "Enter"))
	}
}

// The lowest member's session expires while it waits in Leave (its node
// counts): Leave returns ErrMemberLost; the other member, which waited
// for it, goes through.
func TestLeaveSessionLost(t *testing.T) {
	z := harness.StartZK(t, 1)
	px := harness.NewProxy(t, z.Servers()[0])
	observer := zktest.Connect(t, z.Servers())
	cut := zktest.Connect(t, []string{px.Addr()}, session.WithSessionTimeout(2*time.Second))
	p := pathOf(t)
	// The member behind the proxy is the lowest.
	ds := enterPair(t, cut, observer, p, 0)
	ours := path.Base(ds[0].Node())
	r := leave(ctxT(t), ds[0])
	r.pending(t, "Leave of the lowest")
	px.Blackhole(t)
	err := r.await(t, "Leave of the lowest")
	assert.ErrorIs(t, err, barrier.ErrMemberLost)
	assert.Contains(t, err.Error(), ours)
	require.NoError(t, leave(ctxT(t), ds[1]).await(t, "Leave of the other"))
	px.Restore(t)
	assert.Empty(t, zktest.Children(t, observer, p), "nodes left under the barrier")
}

// A member whose connection drops and comes back to the same session
// (Curator's GH-1290: a SyncConnected event let one through) looks again
// and waits on: it goes through only with the second member.
func TestEnterAcrossReconnect(t *testing.T) {
	servers := sharedServers(t)
	px := harness.NewProxy(t, servers[0])
	c := zktest.Connect(t, []string{px.Addr()}, session.WithSessionTimeout(20*time.Second),
		session.WithErrorPolicy(session.OnlyLostIsLost))
	states, err := c.Subscribe(ctxT(t))
	require.NoError(t, err)
	p := pathOf(t)
	observer := zktest.Connect(t, servers)
	d := newDouble(t, c, p, 2)
	r := enter(ctxT(t), d)
	zktest.WaitForNodes(t, observer, p, 1)
	px.Cut(t)
	awaitState(t, states, session.Suspended)
	px.Restore(t)
	got := awaitState(t, states, session.Reconnected)
	s, err := c.Session(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, s.ID(), got.SessionID, "the same session")
	// The member looks again on the reconnection and sets its watch on
	// the ready node again: then it must still be waiting.
	watched(t, servers[0], path.Join(p, barrier.ReadyNode), 1)
	r.pending(t, "Enter after the reconnection")
	require.NoError(t, enter(ctxT(t), newDouble(t, observer, p, 2)).await(t, "Enter of the second"))
	require.NoError(t, r.await(t, "Enter of the first"))
}

// awaitState waits (bounded) for a state change to want.
func awaitState(t testing.TB, states <-chan session.StateChange, want session.State) session.StateChange {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case ch := <-states:
			if ch.State == want {
				return ch
			}
		case <-timeout:
			t.Fatalf("no %v within %v", want, waitLimit)
		}
	}
}

// One Double is one member: a second Enter or Leave while one runs gets
// ErrBusy, and leaves the running one alone.
func TestDoubleBusy(t *testing.T) {
	servers := sharedServers(t)
	p := pathOf(t)
	d := newDouble(t, zktest.Connect(t, servers), p, 2)
	ctx, cancel := context.WithCancel(ctxT(t))
	r := enter(ctx, d)
	zktest.WaitForNodes(t, zktest.Connect(t, servers), p, 1)
	assert.ErrorIs(t, d.Enter(ctxT(t)), barrier.ErrBusy)
	assert.ErrorIs(t, d.Leave(ctxT(t)), barrier.ErrBusy)
	r.pending(t, "Enter")
	cancel()
	assert.ErrorIs(t, r.await(t, "Enter"), context.Canceled)
}

// A client closed while its member waits: Enter returns at once, saying
// so, and the member's node goes with the session.
func TestEnterClientClosed(t *testing.T) {
	servers := sharedServers(t)
	p := pathOf(t)
	observer := zktest.Connect(t, servers)
	c := zktest.Connect(t, servers)
	r := enter(ctxT(t), newDouble(t, c, p, 2))
	zktest.WaitForNodes(t, observer, p, 1)
	c.Close()
	err := r.await(t, "Enter")
	assert.ErrorIs(t, err, barrier.ErrNotThrough)
	assert.ErrorIs(t, err, session.ErrClosed)
	zktest.WaitForNodes(t, observer, p, 0)
}

// Misuse gets its error, and bad input an ErrInvalidArgument naming it.
func TestDoubleMisuse(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	_, err := barrier.New(c, pathOf(t), 0)
	assert.ErrorIs(t, err, barrier.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "threshold 0")
	_, err = barrier.New(nil, "/x", 1)
	assert.ErrorIs(t, err, barrier.ErrInvalidArgument)
	_, err = barrier.New(c, "x/", 1)
	assert.ErrorIs(t, err, barrier.ErrInvalidArgument)
	_, err = barrier.NewBarrier(c, "")
	assert.ErrorIs(t, err, barrier.ErrInvalidArgument)

	d := newDouble(t, c, pathOf(t), 1)
	assert.ErrorIs(t, d.Leave(ctxT(t)), barrier.ErrNotEntered)
	//lint:ignore SA1012 a nil context is the bad input under test
	assert.ErrorIs(t, d.Enter(nil), barrier.ErrInvalidArgument) //nolint:staticcheck
	require.NoError(t, d.Enter(ctxT(t)), "a threshold of one opens at once")
	assert.ErrorIs(t, d.Enter(ctxT(t)), barrier.ErrEntered)
	require.NoError(t, d.Leave(ctxT(t)))
	done, cancel := context.WithCancel(ctxT(t))
	cancel()
	err = d.Enter(done)
	assert.ErrorIs(t, err, barrier.ErrNotThrough)
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, strings.HasPrefix(err.Error(), "barrier: "), err.Error())
}
