package nodes_test

import (
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Interoperability with Apache Curator 5.4's PersistentNode and
// GroupMember, run in a JVM by package curator, on the shared server. The
// agent has no namespace; the tests' roots are absolute, as for any
// client.

// A Go member and a Curator member of one group: each sees the other with
// its data, the other's change of data, and the other leaving.
func TestInteropGroupMember(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator member"))
	c := connect(t, servers)
	group := root(t)
	g, err := nodes.NewGroupMember(c, group, "go", []byte("g1"))
	require.NoError(t, err)
	a.JoinGroup(t, group, "java", []byte("j1"))
	both := map[string]string{"go": "g1", "java": "j1"}
	awaitMembers(t, g, both)
	awaitJavaMembers(t, a, group, both)

	require.NoError(t, g.SetThisData(ctxT(t), []byte("g2")))
	a.SetGroupData(t, group, []byte("j2"))
	both = map[string]string{"go": "g2", "java": "j2"}
	awaitMembers(t, g, both)
	awaitJavaMembers(t, a, group, both)

	require.NoError(t, g.Close(ctxT(t)))
	awaitJavaMembers(t, a, group, map[string]string{"java": "j2"})
	a.LeaveGroup(t, group)
	awaitGone(t, c, group+"/java")
}

// awaitJavaMembers waits until the agent's GroupMember of group sees want,
// bounded by waitLimit.
func awaitJavaMembers(t *testing.T, a *curator.Agent, group string, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		got := map[string]string{}
		for id, d := range a.GroupMembers(t, group) {
			got[id] = string(d)
		}
		if maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Curator member sees %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// interopModes are the create modes both sides keep a node of: plain, and
// Curator's protected ephemeral sequential (as its discovery and leader
// recipes use).
var interopModes = []struct {
	name      string
	mode      session.CreateMode
	java      curator.NodeMode
	protected bool
}{
	{"persistent", session.Persistent, curator.NodePersistent, false},
	{"protected ephemeral sequential", session.EphemeralSequential, curator.NodeEphemeralSequential, true},
}

// A Go node that Curator deletes: its Placement ends with ErrDeleted, and
// it is back at its path with its data.
func TestInteropGoNodeDeletedByCurator(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator deleter"))
	c := connect(t, servers)
	for _, m := range interopModes {
		t.Run(m.name, func(t *testing.T) {
			var opts []nodes.Option
			if m.protected {
				opts = append(opts, nodes.Protected())
			}
			n := keep(t, c, root(t)+"/node", m.mode, "go", opts...)
			placed, err := n.Placed(ctxT(t))
			require.NoError(t, err)
			a.Delete(t, placed.Path())
			back := nextPlacement(t, n, placed)
			assert.ErrorIs(t, placed.Err(), nodes.ErrDeleted)
			assert.Equal(t, placed.Path(), back.Path(), "the same path")
			awaitData(t, c, placed.Path(), "go")
		})
	}
}

// A Curator PersistentNode that Go deletes is back at its path with its
// data; Curator's Close deletes it.
func TestInteropCuratorNodeDeletedByGo(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator keeper"))
	c := connect(t, servers)
	for _, m := range interopModes {
		t.Run(m.name, func(t *testing.T) {
			base := root(t) + "/node"
			path := a.StartPersistentNode(t, base, m.java, []byte("java"), m.protected, waitLimit)
			require.NotEmpty(t, path, "Curator made no node within %v", waitLimit)
			before := awaitData(t, c, path, "java")
			require.NoError(t, c.Delete(ctxT(t), path, -1))
			after := awaitData(t, c, path, "java")
			assert.Greater(t, after.Czxid, before.Czxid, "made again")
			assert.Equal(t, path, a.PersistentNodePath(t, base), "the same path")
			a.ClosePersistentNode(t, base)
			awaitGone(t, c, path)
		})
	}
}
