package cache_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/session"
)

// A cache's watches cost no goroutine: a cache of n nodes (each with a
// data and a children watch) adds a few goroutines, not some per node.
// Another user's watches on the same client's cached nodes change nothing
// in its events.
func TestWatchesCostNoGoroutine(t *testing.T) {
	c := connect(t, sharedServers(t))
	const n = 200
	mkTree(t, c, "/cost")
	for i := range n {
		mkTree(t, c, fmt.Sprintf("/cost/n%03d=x", i))
	}
	runtime.GC()
	before := runtime.NumGoroutine()
	x := start(t, c, "/cost")
	// Its own few, the session's streams of it, and the client's
	// and the test's, which vary by a few.
	assert.Less(t, runtime.NumGoroutine()-before, n/10, "goroutines added by a cache of %d nodes", n+1)
	require.Len(t, x.Snapshot(), n+1)
	r := record(x.Events())

	ctx := ctxT(t)
	_, _, err := c.GetWatch(ctx, "/cost/n000")
	require.NoError(t, err)
	_, err = c.Set(ctx, "/cost/n000", []byte("y"), -1)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, "/cost/n001", -1))
	_, err = c.Create(ctx, "/cost/n001", []byte("z"), session.Persistent)
	require.NoError(t, err)
	want := settle(t, x, c, "/cost", -1)
	assert.Equal(t, "y", string(want["/cost/n000"].Data))
	// The Created of the load, Initialized, then Changed, Deleted and
	// Created: nothing more for the other watch.
	const events = n + 1 + 1 + 3
	deadline := time.Now().Add(waitLimit)
	for len(r.all()) < events && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := r.all()
	require.Len(t, got, events)
	assert.Empty(t, same(want, fold(t, got)), "the events tell the server's tree")
}
