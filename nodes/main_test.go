package nodes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestMain(m *testing.M) { zktest.Main(m) }

const waitLimit = zktest.WaitLimit

var (
	sharedServers = zktest.Shared
	ctxT          = zktest.Ctx
	await         = zktest.AwaitState
)

// run tells this test process's nodes from an earlier process's on a
// shared server; runs tells the tests (and their -count runs) apart.
var (
	run  = time.Now().UnixNano()
	runs atomic.Int64
)

// root is a fresh path for one test.
func root(t testing.TB) string {
	return fmt.Sprintf("/nodes-test-%d/%s-%d", run, strings.ReplaceAll(t.Name(), "/", "_"), runs.Add(1))
}

// connect is zktest.Connect.
func connect(t testing.TB, servers []string, opts ...session.Option) *session.Client {
	t.Helper()
	return zktest.Connect(t, servers, opts...)
}

// keep starts a Persistent, closed at t's cleanup, and waits for it.
func keep(t testing.TB, c *session.Client, path string, mode session.CreateMode, data string, opts ...nodes.Option) *nodes.Persistent {
	t.Helper()
	n, err := nodes.NewPersistent(c, path, mode, []byte(data), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	require.NoError(t, n.WaitForInitialCreate(ctxT(t)))
	return n
}

// nextPlacement waits for the placement after p.
func nextPlacement(t testing.TB, n *nodes.Persistent, p *nodes.Placement) *nodes.Placement {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(waitLimit):
		t.Fatalf("placement %d of %s never ended", p.Generation(), p.Path())
	}
	q, err := n.Placed(ctxT(t))
	require.NoError(t, err)
	require.Greater(t, q.Generation(), p.Generation())
	return q
}

// awaitData waits until path holds want, bounded by waitLimit.
func awaitData(t testing.TB, c *session.Client, path, want string) *session.Stat {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		data, st, err := c.Get(ctxT(t), path)
		if err == nil && string(data) == want {
			return st
		}
		if err != nil && !errors.Is(err, session.ErrNoNode) {
			require.NoError(t, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never held %q (last: %q, %v)", path, want, data, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitGone waits until path is gone, bounded by waitLimit.
func awaitGone(t testing.TB, c *session.Client, path string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		ok, _, err := c.Exists(ctxT(t), path)
		require.NoError(t, err)
		if !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never went", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
