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
	opcodeSetData = 5
)

// A create abandoned by its caller while the connection held its requests,
// then a delete of its path by the same client: the delete waits for the
// create's outcome, so it deletes the node and nothing is left. The create
// makes missing parents, so it is several requests: without the order, the
// delete goes out behind the create's first request (answered NoNode), the
// create then makes the parents and the node, and the node stays behind.
// Deterministic: the delete is on the wire, or waiting for the create,
// before the proxy lets anything through.
func TestWriteWaitsForAbandonedWrite(t *testing.T) {
	p := harness.NewProxy(t, zktest.Shared(t)[0])
	// A long session timeout: the hold must not make the watchdog drop
	// the connection.
	c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(30*time.Second))
	observer := connect(t, zktest.Shared(t))
	ctx := ctxT(t)
	base := "/abandoned-write"
	node := base + "/a/b/node"
	t.Cleanup(func() { _ = observer.Delete(context.Background(), node, -1) })

	p.HoldToServer(t)
	ctxA, cancelA := context.WithCancel(ctx)
	errA := make(chan error, 1)
	go func() {
		_, err := c.Create(ctxA, node, []byte("a"), session.Persistent)
		errA <- err
	}()
	until(t, "the create on the wire", func() bool { return session.PendingRequests(c, opcodeCreate) > 0 })
	cancelA()
	require.ErrorIs(t, <-errA, context.Canceled)
	require.Equal(t, 1, session.AbandonedWrites(c))

	// A write whose own context ends while it waits returns.
	ctxB0, cancelB0 := context.WithCancel(ctx)
	errB0 := make(chan error, 1)
	go func() {
		_, err := c.Set(ctxB0, node, []byte("b0"), -1)
		errB0 <- err
	}()
	until(t, "the set on the wire or waiting", func() bool {
		return session.PendingRequests(c, opcodeSetData) > 0 || writesWaiting() == 1
	})
	cancelB0()
	require.ErrorIs(t, <-errB0, context.Canceled)

	errB := make(chan error, 1)
	go func() { errB <- c.Delete(ctx, node, -1) }()
	until(t, "the delete on the wire or waiting", func() bool {
		return session.PendingRequests(c, opcodeDelete) > 0 || writesWaiting() == 1
	})
	p.Restore(t)
	require.NoError(t, <-errB, "the delete comes after the create")
	until(t, "the abandoned create returned", func() bool { return session.AbandonedWrites(c) == 0 })
	ok, _, err := observer.Exists(ctx, node)
	require.NoError(t, err)
	assert.False(t, ok, "the node the abandoned create made is left behind")
}

// until polls cond, failing t if it does not hold within waitLimit.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, waitLimit, time.Millisecond, what)
}

// writesWaiting is how many goroutines wait in a write's order.
func writesWaiting() int {
	n := 0
	for _, g := range zktest.Goroutines() {
		if strings.Contains(g, "session.(*writeOrder).wait(") {
			n++
		}
	}
	return n
}
