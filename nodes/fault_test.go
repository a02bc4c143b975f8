package nodes_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/session"
)

// An ephemeral node through a fault: its placement ends with the
// session's cause; data set meanwhile (its SetData timing out) is what the
// node holds once back; it is back once, at its path.
func TestFaults(t *testing.T) {
	z := harness.StartZK(t, 1)
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, p *harness.Proxy, states <-chan session.StateChange)
		heal  func(t *testing.T, p *harness.Proxy)
		lost  bool
	}{
		{name: "cut", fault: func(t *testing.T, p *harness.Proxy, _ <-chan session.StateChange) { p.Cut(t) },
			heal: func(t *testing.T, p *harness.Proxy) { p.Restore(t) }},
		{name: "blackhole past the session timeout", lost: true,
			fault: func(t *testing.T, p *harness.Proxy, states <-chan session.StateChange) {
				p.Blackhole(t)
				await(t, states, session.Lost)
			},
			heal: func(t *testing.T, p *harness.Proxy) { p.Restore(t) }},
		{name: "server restart",
			fault: func(t *testing.T, _ *harness.Proxy, _ <-chan session.StateChange) { z.Members()[0].Stop(t) },
			heal:  func(t *testing.T, _ *harness.Proxy) { z.Members()[0].Start(t); z.WaitReady(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := harness.NewProxy(t, z.Servers()[0])
			c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
			reader := connect(t, z.Servers(), session.WithSessionTimeout(20*time.Second))
			states, err := c.Subscribe(ctxT(t))
			require.NoError(t, err)
			path := root(t) + "/member-"
			n := keep(t, c, path, session.EphemeralSequential, "before", nodes.Protected())
			placed, err := n.Placed(ctxT(t))
			require.NoError(t, err)
			tc.fault(t, p, states)
			select {
			case <-placed.Done():
			case <-time.After(waitLimit):
				t.Fatal("the placement outlived the fault")
			}
			assert.ErrorIs(t, placed.Err(), session.ErrSuspended)
			short, cancel := context.WithTimeout(ctxT(t), 50*time.Millisecond)
			err = n.SetData(short, []byte("during"))
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded, "not written while disconnected")
			tc.heal(t, p)
			back, err := n.Placed(ctxT(t))
			require.NoError(t, err)
			assert.Equal(t, placed.Path(), back.Path(), "the same path")
			awaitData(t, reader, placed.Path(), "during")
			kids, _, err := reader.Children(ctxT(t), session.ParentPath(path))
			require.NoError(t, err)
			assert.Equal(t, []string{session.BaseName(placed.Path())}, kids, "one node")
			if tc.lost {
				_, st, err := reader.Get(ctxT(t), placed.Path())
				require.NoError(t, err)
				assert.Equal(t, c.CurrentSession().ID(), st.EphemeralOwner, "made by the new session")
			}
		})
	}
}

// Close during a cut stops the keeping first: once the connection is
// back the node is deleted and stays so (CURATOR-164).
func TestCloseDuringCut(t *testing.T) {
	z := harness.StartZK(t, 1)
	p := harness.NewProxy(t, z.Servers()[0])
	c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(10*time.Second))
	reader := connect(t, z.Servers())
	path := root(t) + "/node"
	n := keep(t, c, path, session.Persistent, "x")
	placed, err := n.Placed(ctxT(t))
	require.NoError(t, err)
	p.Cut(t)
	<-placed.Done()
	closed := make(chan error, 1)
	go func() { closed <- n.Close(ctxT(t)) }()
	_, err = n.Placed(ctxT(t))
	require.ErrorIs(t, err, nodes.ErrClosed, "closed before the connection is back")
	p.Restore(t)
	require.NoError(t, <-closed)
	awaitGone(t, reader, path)
	// A reconnection after Close makes nothing: the client's next
	// connection finds no keeper.
	p.Cut(t)
	p.Restore(t)
	_, err = c.Session(ctxT(t))
	require.NoError(t, err)
	_, _, err = c.Exists(ctxT(t), "/") // one round trip on the new connection
	require.NoError(t, err)
	ok, _, err := reader.Exists(ctxT(t), path)
	require.NoError(t, err)
	assert.False(t, ok)
}
