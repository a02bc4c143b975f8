package nodes_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/session"
)

// An ensemble of 3 loses its leader (killed) under a protected ephemeral
// sequential node kept through a follower alone: the follower drops its
// clients, so the Placement ends (ErrSuspended); data set meanwhile is
// written once a leader is elected, and the node is back in place at its
// path, once, in the same session (its timeout far longer than an
// election).
func TestLeaderLost(t *testing.T) {
	z := harness.StartZK(t, 3)
	c := connect(t, []string{z.Followers(t)[0].Addr()}, session.WithSessionTimeout(20*time.Second))
	reader := connect(t, z.Servers(), session.WithSessionTimeout(20*time.Second))
	path := root(t) + "/member-"
	n := keep(t, c, path, session.EphemeralSequential, "before", nodes.Protected())
	placed, err := n.Placed(ctxT(t))
	require.NoError(t, err)
	sess := c.CurrentSession().ID()

	z.Leader(t).Kill(t)
	select {
	case <-placed.Done():
	case <-time.After(waitLimit):
		t.Fatal("the placement outlived the leader")
	}
	assert.ErrorIs(t, placed.Err(), session.ErrSuspended)
	require.NoError(t, n.SetData(ctxT(t), []byte("after")))
	back, err := n.Placed(ctxT(t))
	require.NoError(t, err)
	assert.Equal(t, placed.Path(), back.Path(), "the same path")
	st := awaitData(t, reader, placed.Path(), "after")
	assert.Equal(t, sess, st.EphemeralOwner, "the same session")
	assert.Equal(t, []string{session.BaseName(placed.Path())}, zktest.Children(t, reader, session.ParentPath(path)), "one node")
	t.Logf("new leader: %s", z.Leader(t))
}
