package barrier

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// Enter's member is for the session Enter read first; when the client
// moved to a new session before the create (between Session and the
// follower's subscription, or by a retry of the create on the new
// connection), the create makes the node in the new session, and join
// finds it owned by that one. That node is ours (the name is new), alive
// with the client's session: left behind, the other members would count
// a member that is gone. join must delete it as it reports the loss.
func TestJoinInLaterSessionRemovesNode(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := zktest.Ctx(t)
	c := zktest.Connect(t, servers)
	// A session that ended: the one the member was meant to belong to.
	gone := zktest.Connect(t, servers)
	old, err := gone.Session(ctx)
	require.NoError(t, err)
	gone.Close()

	p := zktest.Path(t, "barrier", "join")
	d, err := New(c, p, 2)
	require.NoError(t, err)
	name := uuid.NewString()
	m := &member{c: c, path: session.JoinPath(p, name), name: name, owner: old.ID()}
	f, err := follow(ctx, m)
	require.NoError(t, err)
	defer f.stop()

	err = d.join(f)
	assert.ErrorIs(t, err, ErrMemberLost)
	assert.ErrorIs(t, err, ErrNotThrough)
	ok, _, err := c.Exists(ctx, m.path)
	require.NoError(t, err)
	assert.False(t, ok, "the node made in the later session is left behind")
}
