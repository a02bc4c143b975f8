package nodes_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/session"
)

// protectedChildren are parent's children with a protected prefix.
func protectedChildren(t *testing.T, c *session.Client, parent string) []string {
	t.Helper()
	var out []string
	for _, k := range zktest.Children(t, c, parent) {
		if strings.HasPrefix(k, "_c_") {
			out = append(out, k)
		}
	}
	return out
}

// lostCreate starts a protected persistent sequential node on a server of
// its own, through a proxy that holds the server's replies, and waits
// until the server made it: its create's reply is held, then lost with the
// connection (Suspended). It returns the proxy (to Restore), the node, a
// client of the server, the node's parent and its name on the server.
func lostCreate(t *testing.T) (p *harness.Proxy, n *nodes.Persistent, reader *session.Client, parent, made string) {
	t.Helper()
	z := harness.StartZK(t, 1)
	p = harness.NewProxy(t, z.Servers()[0])
	c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(3*time.Second))
	reader = connect(t, z.Servers())
	parent = root(t)
	require.NoError(t, reader.EnsurePath(ctxT(t), parent))
	states, err := c.Subscribe(ctxT(t))
	require.NoError(t, err)
	p.HoldToClient(t)
	n, err = nodes.NewPersistent(c, parent+"/node-", session.PersistentSequential, []byte("x"), nodes.Protected())
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close(ctxT(t)) })
	require.Eventually(t, func() bool { return len(protectedChildren(t, reader, parent)) == 1 },
		waitLimit, 20*time.Millisecond, "the create never reached the server")
	made = protectedChildren(t, reader, parent)[0]
	await(t, states, session.Suspended) // the reply is lost with its connection
	return p, n, reader, parent, made
}

// A protected sequential create whose reply was lost (and whose session
// value ended meanwhile, so the first look for it failed): the node is
// found by its prefix and kept, once.
func TestProtectedLostReply(t *testing.T) {
	p, n, reader, parent, made := lostCreate(t)
	p.Restore(t)
	placed, err := n.Placed(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, parent+"/"+made, placed.Path())
	assert.Equal(t, []string{made}, zktest.Children(t, reader, parent), "one node")
	require.NoError(t, n.Close(ctxT(t)))
	assert.Empty(t, zktest.Children(t, reader, parent))
}

// Close while the first create's outcome is unknown (made on the server,
// its reply not back): the node is found by its prefix and deleted.
func TestProtectedCloseWhileCreateUnknown(t *testing.T) {
	p, n, reader, parent, _ := lostCreate(t)
	closed := make(chan error, 1)
	go func() { closed <- n.Close(ctxT(t)) }()
	_, err := n.Placed(ctxT(t))
	require.ErrorIs(t, err, nodes.ErrClosed)
	p.Restore(t)
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(waitLimit):
		t.Fatal("Close never returned")
	}
	assert.Empty(t, zktest.Children(t, reader, parent), "nothing left behind")
}

// A late copy of the first create (our prefix, another sequence number, as
// the server makes it when the create lands after we looked for it) is
// deleted at the next placement, and at Close.
func TestProtectedStrayDropped(t *testing.T) {
	c := connect(t, sharedServers(t))
	reader := connect(t, sharedServers(t))
	parent := root(t)
	n := keep(t, c, parent+"/node-", session.PersistentSequential, "x", nodes.Protected())
	placed, err := n.Placed(ctxT(t))
	require.NoError(t, err)
	ours := session.BaseName(placed.Path())
	prefix := ours[:len(ours)-len("node-0000000000")]
	stray := func() string {
		s, err := reader.Create(ctxT(t), parent+"/"+prefix+"node-", nil, session.PersistentSequential)
		require.NoError(t, err)
		return s
	}

	first := stray()
	require.NoError(t, reader.Delete(ctxT(t), placed.Path(), -1))
	back := nextPlacement(t, n, placed)
	assert.Equal(t, placed.Path(), back.Path())
	ok, _, err := reader.Exists(ctxT(t), first)
	require.NoError(t, err)
	assert.False(t, ok, "the stray is gone once the node is back")
	assert.Equal(t, []string{ours}, zktest.Children(t, reader, parent))

	stray()
	require.NoError(t, n.Close(ctxT(t)))
	assert.Empty(t, zktest.Children(t, reader, parent), "Close deletes every node of ours")
}
