package discovery_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestMain(m *testing.M) { zktest.Main(m) }

var (
	sharedServers = zktest.Shared
	ctxT          = zktest.Ctx
)

// run tells this test process's nodes from an earlier process's on a
// shared server.
var run = time.Now().UnixNano()

// bases numbers the base paths basePath gives: go test -count=N runs a
// test N times on one server, under one name.
var bases atomic.Int64

// basePath is a registry root of t's own (of this run of it) on the
// shared server. The agent has no namespace, so neither do the clients.
func basePath(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/discovery-test-%d-%d-%s", run, bases.Add(1), name)
}

// writeInstance writes inst's node under base with its encoding and its
// type's create mode, its parents made persistent, as a registration
// will; it returns the node's path (with its suffix, for a sequential
// one).
func writeInstance(t testing.TB, c *session.Client, base string, inst discovery.Instance) string {
	t.Helper()
	path, err := discovery.InstancePath(base, inst)
	require.NoError(t, err)
	mode, err := inst.Type.CreateMode()
	require.NoError(t, err)
	data, err := inst.Encode()
	require.NoError(t, err)
	require.NoError(t, c.EnsurePath(ctxT(t), session.ParentPath(path)))
	created, err := c.Create(ctxT(t), path, data, mode)
	require.NoError(t, err)
	return created
}

// removeNodes deletes paths in order, a child before its parent. The
// service and base nodes are containers, which the server deletes itself
// once their last child is gone (every second on the harness's servers):
// one already gone is what was asked.
func removeNodes(t testing.TB, c *session.Client, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := c.Delete(ctxT(t), p, -1); err != nil && !errors.Is(err, session.ErrNoNode) {
			require.NoError(t, err)
		}
	}
}
