package session_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// ZooKeeper's opcodes, as the connection's frames carry them.
const (
	opcodeCreate  = 1
	opcodeDelete  = 2
	opcodeExists  = 3
	opcodeSetData = 5
)

// abandonedCreate returns a client whose create of node (with missing
// parents, so several requests) its caller abandoned while the proxy held
// the requests toward the server, and the proxy, to be restored; and a
// client straight to the server, to look.
func abandonedCreate(t *testing.T, node string) (c, observer *session.Client, p *harness.Proxy) {
	p = harness.NewProxy(t, zktest.Shared(t)[0])
	// A long session timeout: the hold must not make the watchdog drop
	// the connection.
	c = connect(t, []string{p.Addr()}, session.WithSessionTimeout(30*time.Second))
	observer = connect(t, zktest.Shared(t))
	t.Cleanup(func() { _ = observer.Delete(context.Background(), node, -1) })

	p.HoldToServer(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	errc := make(chan error, 1)
	go func() {
		_, err := c.Create(ctx, node, []byte("a"), session.Persistent)
		errc <- err
	}()
	until(t, "the create on the wire", func() bool { return session.PendingRequests(c, opcodeCreate) > 0 })
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	require.Equal(t, 1, session.AbandonedCalls(c))
	return c, observer, p
}

// assertGone checks, once the abandoned create has returned, that node
// is not there.
func assertGone(t *testing.T, c, observer *session.Client, node string) {
	t.Helper()
	until(t, "the abandoned create returned", func() bool { return session.AbandonedCalls(c) == 0 })
	ok, _, err := observer.Exists(ctxT(t), node)
	require.NoError(t, err)
	assert.False(t, ok, "the node the abandoned create made is left behind")
}

// A delete after an abandoned create of its node waits for the create's
// outcome, so it deletes the node and nothing is left. Without the order
// the delete goes out behind the create's first request (answered
// NoNode) and is answered NoNode too; the create then makes the parents
// and the node, which stays behind. Deterministic: the delete is on the
// wire, or waiting, before the proxy lets anything through.
func TestDeleteWaitsForAbandonedCreate(t *testing.T) {
	node := "/abandoned-delete/a/b/node"
	c, observer, p := abandonedCreate(t, node)
	ctx := ctxT(t)

	// A call whose own context ends while it waits returns.
	ctxB0, cancelB0 := context.WithCancel(ctx)
	errB0 := make(chan error, 1)
	go func() {
		_, err := c.Set(ctxB0, node, []byte("b0"), -1)
		errB0 <- err
	}()
	until(t, "the set on the wire or waiting", func() bool {
		return session.PendingRequests(c, opcodeSetData) > 0 || callsWaiting() == 1
	})
	cancelB0()
	require.ErrorIs(t, <-errB0, context.Canceled)

	errB := make(chan error, 1)
	go func() { errB <- c.Delete(ctx, node, -1) }()
	until(t, "the delete on the wire or waiting", func() bool {
		return session.PendingRequests(c, opcodeDelete) > 0 || callsWaiting() == 1
	})
	p.Restore(t)
	require.NoError(t, <-errB, "the delete comes after the create")
	assertGone(t, c, observer, node)
}

// A clean-up that reads before it deletes (as nodes and the engine do):
// the read waits for the abandoned create's outcome, finds the node, and
// the node is deleted. Without the order the read goes out behind the
// create's first request and finds nothing, so nothing is deleted, and
// the node the create then makes stays behind.
func TestReadWaitsForAbandonedCreate(t *testing.T) {
	node := "/abandoned-read/a/b/node"
	c, observer, p := abandonedCreate(t, node)
	ctx := ctxT(t)

	found := make(chan bool, 1)
	errc := make(chan error, 1)
	go func() {
		ok, st, err := c.Exists(ctx, node)
		found <- ok
		if err == nil && ok {
			err = c.Delete(ctx, node, st.Version)
		}
		errc <- err
	}()
	until(t, "the read on the wire or waiting", func() bool {
		return session.PendingRequests(c, opcodeExists) > 0 || callsWaiting() == 1
	})
	p.Restore(t)
	assert.True(t, <-found, "the read comes after the create")
	require.NoError(t, <-errc)
	assertGone(t, c, observer, node)
}

// until polls cond, failing t if it does not hold within waitLimit.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, waitLimit, time.Millisecond, what)
}

// callsWaiting is how many goroutines wait for an abandoned call.
func callsWaiting() int {
	n := 0
	for _, g := range zktest.Goroutines() {
		if strings.Contains(g, "session.(*callOrder).wait(") {
			n++
		}
	}
	return n
}
