package barrier_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// A member that is not the lowest deletes its node in Leave; the
// connection drops once the delete reached the server, before its reply
// (the server applied it). The client tries the delete again on its new
// connection to the same session and meets NoNode: its own delete, not a
// loss. Leave goes on, waits for the lowest and returns nil, as the
// lowest does; nothing is left under the path.
//
// The cut counts bytes from the Leave's first request: a request of the
// client's own sent meanwhile (a ping, a round of proof) moves it earlier,
// so the client is let prove its session first (no round is due then for
// a quarter of the session timeout, its pings every third of it).
func TestLeaveDeleteReplyLost(t *testing.T) {
	servers := sharedServers(t)
	px := harness.NewProxy(t, servers[0])
	cut := zktest.Connect(t, []string{px.Addr()}, session.WithSessionTimeout(30*time.Second))
	observer := zktest.Connect(t, servers)
	p := pathOf(t)
	// The member behind the proxy is not the lowest: it lists, watches
	// the lowest and deletes its node.
	ds := enterPair(t, cut, observer, p, 1)
	zktest.AwaitProven(t, cut)
	states, err := cut.Subscribe(ctxT(t))
	require.NoError(t, err)

	px.ResetAfter(t, pathRequestSize(p)+pathRequestSize(ds[1].Node())+deleteSize(ds[0].Node()))
	r := leave(ctxT(t), ds[0])
	zktest.AwaitState(t, states, session.Suspended)
	px.Restore(t)
	zktest.WaitForNodes(t, observer, p, 2) // the lowest and ready
	r.pending(t, "Leave before the lowest left")
	require.NoError(t, leave(ctxT(t), ds[1]).await(t, "Leave of the lowest"))
	require.NoError(t, r.await(t, "Leave whose delete's reply was lost"))
	assert.Empty(t, zktest.Children(t, observer, p), "nodes left under the barrier")
}

// pathRequestSize is the size on the wire, length prefix included, of a
// request that carries a path and a watch flag (getChildren2, exists).
func pathRequestSize(path string) int64 { return 4 + 4 + 4 + 4 + int64(len(path)) + 1 }

// deleteSize is the size on the wire of a delete of path.
func deleteSize(path string) int64 { return 4 + 4 + 4 + 4 + int64(len(path)) + 4 }
