package barrier_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/barrier"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestMain(m *testing.M) { zktest.Main(m) }

const waitLimit = zktest.WaitLimit

var (
	sharedServers = zktest.Shared
	ctxT          = zktest.Ctx
)

// run tells this test process's nodes from an earlier process's on a
// shared server; runs numbers the paths of one process.
var (
	run  = time.Now().UnixNano()
	runs atomic.Int64
)

// pathOf is a barrier path of t's own (of this run of it) on the shared
// server, for clients without a namespace (as the Curator agent is).
func pathOf(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/barrier-test-%d/%s-%d", run, name, runs.Add(1))
}

// result is the outcome of a wait run in the background.
type result chan error

// async runs f on a goroutine of its own.
func async(f func() error) result {
	r := make(result, 1)
	go func() { r <- f() }()
	return r
}

// pending fails t if the wait has ended.
func (r result) pending(t testing.TB, what string) {
	t.Helper()
	select {
	case err := <-r:
		t.Fatalf("%s ended early: %v", what, err)
	default:
	}
}

// await waits (bounded) for the wait's end and returns its error.
func (r result) await(t testing.TB, what string) error {
	t.Helper()
	select {
	case err := <-r:
		return err
	case <-time.After(waitLimit):
		t.Fatalf("%s did not end within %v", what, waitLimit)
		return nil
	}
}

// newDouble is a member of the double barrier at path for n members.
func newDouble(t testing.TB, c *session.Client, path string, n int) *barrier.Double {
	t.Helper()
	d, err := barrier.New(c, path, n)
	require.NoError(t, err)
	return d
}

// enter starts d's Enter with ctx.
func enter(ctx context.Context, d *barrier.Double) result {
	return async(func() error { return d.Enter(ctx) })
}

// leave starts d's Leave with ctx.
func leave(ctx context.Context, d *barrier.Double) result {
	return async(func() error { return d.Leave(ctx) })
}
