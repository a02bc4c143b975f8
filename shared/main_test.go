package shared_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }

const waitLimit = zktest.WaitLimit

var (
	sharedServers = zktest.Shared
	ctxT          = zktest.Ctx
)

// pathOf is a node path of the test's own, for this run of it.
func pathOf(t testing.TB, name string) string { return zktest.Path(t, "shared", name) }

// next reads the next change within waitLimit.
func next[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v, ok := <-ch:
		require.True(t, ok, "changes closed")
		return v
	case <-time.After(waitLimit):
		t.Fatalf("no change within %v", waitLimit)
	}
	panic("unreachable")
}

func contextT(t testing.TB) (context.Context, context.CancelFunc) {
	return context.WithCancel(ctxT(t))
}

// closed waits until ch is closed, reading what comes before.
func closed[T any](t testing.TB, ch <-chan T) {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("not closed within %v", waitLimit)
		}
	}
}
