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

// On a server with extended types the TTL node is a TTL node with a TTL
// child; after Close the server removes both.
func TestTTLNode(t *testing.T) {
	z := harness.StartZKExtended(t)
	c, reader := connect(t, z.Servers()), connect(t, z.Servers())
	path := root(t) + "/ttl"
	n, err := nodes.NewTTL(c, path, 500*time.Millisecond, []byte("data"))
	require.NoError(t, err)
	require.NoError(t, n.WaitForInitialCreate(ctxT(t)))
	awaitData(t, reader, path, "data")
	ok, _, err := reader.Exists(ctxT(t), path+"/"+nodes.TTLChild)
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, n.Close(ctxT(t)))
	_, st, err := reader.Get(ctxT(t), path)
	require.NoError(t, err, "Close leaves the node to the server")
	assert.Zero(t, st.EphemeralOwner)
	awaitGone(t, reader, path) // the TTLs (500ms) and the server's checks (1s) pass
}

// On a server without extended types, a clear error naming the setting.
func TestTTLNodeRefused(t *testing.T) {
	c := connect(t, sharedServers(t))
	path := root(t) + "/ttl"
	n, err := nodes.NewTTL(c, path, time.Second, nil)
	require.NoError(t, err)
	err = n.WaitForInitialCreate(ctxT(t))
	require.ErrorIs(t, err, nodes.ErrCannotCreate)
	require.ErrorIs(t, err, session.ErrTTLDisabled)
	assert.Contains(t, err.Error(), "zookeeper.extendedTypesEnabled=true")
	require.NoError(t, n.Close(ctxT(t)))
	// Nothing is left: a node that never had a child would stay for ever
	// if it were a container.
	ok, _, err := c.Exists(ctxT(t), path)
	require.NoError(t, err)
	assert.False(t, ok, "a TTL node refused by the server left its parent behind")

	p, err := nodes.NewPersistent(c, root(t)+"/p", session.PersistentWithTTL, nil, nodes.WithTTL(time.Second))
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close(context.Background())) }()
	_, err = p.Placed(ctxT(t))
	require.ErrorIs(t, err, session.ErrTTLDisabled)
}
