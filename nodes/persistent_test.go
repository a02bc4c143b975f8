package nodes_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// A node deleted by another client is made again, with its data; the
// placement of the deleted one ends with ErrDeleted.
func TestRecreatedAfterDelete(t *testing.T) {
	for _, mode := range []session.CreateMode{session.Ephemeral, session.Persistent, session.Container} {
		t.Run(mode.String(), func(t *testing.T) {
			c, other := connect(t, sharedServers(t)), connect(t, sharedServers(t))
			path := root(t) + "/node"
			n := keep(t, c, path, mode, "mine")
			p, err := n.Placed(ctxT(t))
			require.NoError(t, err)
			require.Equal(t, path, p.Path())
			require.EqualValues(t, 1, p.Generation())
			require.NoError(t, other.Delete(ctxT(t), path, -1))
			q := nextPlacement(t, n, p)
			require.ErrorIs(t, p.Err(), nodes.ErrDeleted)
			assert.Equal(t, path, q.Path())
			st := awaitData(t, other, path, "mine")
			assert.Greater(t, st.Czxid, p.Stat().Czxid, "a new node")
			require.NoError(t, n.Close(ctxT(t)))
			require.ErrorIs(t, q.Err(), nodes.ErrClosed)
			awaitGone(t, other, path)
		})
	}
}

// A node found in place with other data gets ours.
func TestDataSetWhenFound(t *testing.T) {
	c := connect(t, sharedServers(t))
	path := root(t) + "/node"
	_, err := c.Create(ctxT(t), path, []byte("theirs"), session.Persistent)
	require.NoError(t, err)
	keep(t, c, path, session.Persistent, "mine")
	awaitData(t, c, path, "mine")
}

// A sequential node keeps its first path (with its protected prefix) when
// it is made again.
func TestSequentialKeepsItsPath(t *testing.T) {
	for _, protected := range []bool{false, true} {
		name := "plain"
		var opts []nodes.Option
		if protected {
			name, opts = "protected", []nodes.Option{nodes.Protected()}
		}
		t.Run(name, func(t *testing.T) {
			c, other := connect(t, sharedServers(t)), connect(t, sharedServers(t))
			base := root(t) + "/member-"
			n := keep(t, c, base, session.EphemeralSequential, "x", opts...)
			first := n.Path()
			leaf := session.BaseName(first)
			if protected {
				prefix, rest, ok := strings.Cut(leaf, "-member-")
				require.True(t, ok, leaf)
				require.True(t, strings.HasPrefix(prefix, "_c_"), leaf)
				require.Len(t, prefix, len("_c_")+36, leaf)
				leaf = "member-" + rest
			}
			require.Regexp(t, `^member-\d{10}$`, leaf)
			p, err := n.Placed(ctxT(t))
			require.NoError(t, err)
			require.NoError(t, other.Delete(ctxT(t), first, -1))
			q := nextPlacement(t, n, p)
			assert.Equal(t, first, q.Path())
			assert.Equal(t, first, n.Path())
			kids, _, err := other.Children(ctxT(t), session.ParentPath(base))
			require.NoError(t, err)
			assert.Equal(t, []string{session.BaseName(first)}, kids)
		})
	}
}

// SetData writes to the node in place, and the latest data wins.
func TestSetData(t *testing.T) {
	c := connect(t, sharedServers(t))
	path := root(t) + "/node"
	n := keep(t, c, path, session.Ephemeral, "one")
	require.NoError(t, n.SetData(ctxT(t), []byte("two")))
	data, _, err := c.Get(ctxT(t), path)
	require.NoError(t, err)
	assert.Equal(t, "two", string(data))
	assert.Equal(t, "two", string(n.Data()))
}

// Bad input is an ErrInvalidArgument error, with no goroutine left.
func TestBadInput(t *testing.T) {
	c := connect(t, sharedServers(t))
	for name, f := range map[string]func() error{
		"nil client":  func() error { _, err := nodes.NewPersistent(nil, "/a", session.Persistent, nil); return err },
		"bad path":    func() error { _, err := nodes.NewPersistent(c, "a", session.Persistent, nil); return err },
		"root":        func() error { _, err := nodes.NewPersistent(c, "/", session.Persistent, nil); return err },
		"bad mode":    func() error { _, err := nodes.NewPersistent(c, "/a", session.CreateMode(9), nil); return err },
		"ttl without": func() error { _, err := nodes.NewPersistent(c, "/a", session.PersistentWithTTL, nil); return err },
		"ttl on plain": func() error {
			_, err := nodes.NewPersistent(c, "/a", session.Persistent, nil, nodes.WithTTL(1))
			return err
		},
		"nil option": func() error { _, err := nodes.NewPersistent(c, "/a", session.Persistent, nil, nil); return err },
		"nil retry": func() error {
			_, err := nodes.NewPersistent(c, "/a", session.Persistent, nil, nodes.WithRetry(nil))
			return err
		},
		"zero ttl node":  func() error { _, err := nodes.NewTTL(c, "/a", 0, nil); return err },
		"member id":      func() error { _, err := nodes.NewGroupMember(c, "/g", "a/b", nil); return err },
		"empty id":       func() error { _, err := nodes.NewGroupMember(c, "/g", "", nil); return err },
		"group path":     func() error { _, err := nodes.NewGroupMember(c, "g", "a", nil); return err },
		"nil ctx placed": func() error { return placedNil(t, c) },
	} {
		err := f()
		require.Error(t, err, name)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, name)
	}
}

func placedNil(t *testing.T, c *session.Client) error {
	n, err := nodes.NewPersistent(c, root(t), session.Ephemeral, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, n.Close(context.Background())) }()
	//lint:ignore SA1012 the nil context is the bad input under test
	_, err = n.Placed(nil) //nolint:staticcheck
	return err
}

// Close stops the keeping before it deletes, and a second Close is a
// no-op; waits after Close say ErrClosed.
func TestCloseTwice(t *testing.T) {
	c := connect(t, sharedServers(t))
	path := root(t) + "/node"
	n := keep(t, c, path, session.Persistent, "x")
	require.NoError(t, n.Close(ctxT(t)))
	require.NoError(t, n.Close(ctxT(t)))
	ok, _, err := c.Exists(ctxT(t), path)
	require.NoError(t, err)
	assert.False(t, ok)
	_, err = n.Placed(ctxT(t))
	assert.ErrorIs(t, err, nodes.ErrClosed)
	assert.ErrorIs(t, n.SetData(ctxT(t), nil), nodes.ErrClosed)
}

// A node another client deletes and makes again at once, with its own
// data (one multi, so the keeper's watch fires on a node that is back
// already), is not ours: the placement ends with ErrDeleted and the node
// gets our data, as after a plain delete.
func TestReplacedNodeIsNotOurs(t *testing.T) {
	c, other := connect(t, sharedServers(t)), connect(t, sharedServers(t))
	path := root(t) + "/node"
	n := keep(t, c, path, session.Persistent, "mine")
	p, err := n.Placed(ctxT(t))
	require.NoError(t, err)
	_, err = other.Multi(ctxT(t), session.DeleteOp(path, -1), session.CreateOp(path, []byte("theirs"), session.Persistent))
	require.NoError(t, err)
	q := nextPlacement(t, n, p)
	require.ErrorIs(t, p.Err(), nodes.ErrDeleted)
	st := awaitData(t, other, path, "mine")
	assert.Greater(t, st.Czxid, p.Stat().Czxid, "the node that replaced ours")
	assert.Equal(t, st.Czxid, q.Stat().Czxid)
}
