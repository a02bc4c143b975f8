package session_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

func watchEvent(t *testing.T, ch <-chan session.Event, what string) session.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		require.True(t, ok, "%s: the channel closed without an event", what)
		return e
	case <-time.After(waitLimit):
		t.Fatalf("%s: no event", what)
	}
	return session.Event{}
}

// A watch outlives a reconnection of its session: go-zookeeper sets it
// again on the new connection, and the server tells it of a change made
// while the client was away, through the event callback the watch table
// is fed from.
func TestWatchAcrossReconnection(t *testing.T) {
	servers := zktest.Shared(t)
	p := harness.NewProxy(t, servers[0])
	ns := fmt.Sprintf("/watch-reconnect-%d", time.Now().UnixNano())
	c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(6*time.Second), session.WithNamespace(ns))
	other := connect(t, servers, session.WithNamespace(ns))
	ctx := ctxT(t)
	states := subscribe(t, c)
	_, err := c.Create(ctx, "/a", nil, session.Persistent)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/b", nil, session.Persistent)
	require.NoError(t, err)
	_, _, data, err := c.GetW(ctx, "/a")
	require.NoError(t, err)
	_, _, kids, err := c.ChildrenW(ctx, "/")
	require.NoError(t, err)
	_, _, quiet, err := c.GetW(ctx, "/b")
	require.NoError(t, err)
	assert.Equal(t, 3, c.Watches())

	p.Cut(t)
	expect(t, states, session.Suspended)
	require.NoError(t, other.Delete(ctx, "/a", -1))
	p.Restore(t)
	expect(t, states, session.Reconnected)
	assert.Equal(t, session.Event{Type: session.EventNodeDeleted, Path: "/a"}, watchEvent(t, data, "data watch"))
	assert.Equal(t, session.Event{Type: session.EventNodeChildrenChanged, Path: "/"}, watchEvent(t, kids, "child watch"))

	// The watch on the node nobody changed is still set, on the new
	// connection.
	_, err = other.Set(ctx, "/b", []byte("x"), -1)
	require.NoError(t, err)
	assert.Equal(t, session.Event{Type: session.EventNodeDataChanged, Path: "/b"}, watchEvent(t, quiet, "untouched watch"))
	assert.Equal(t, 0, c.Watches(), "every watch fired")
}

// When the session expires, every watch it held ends with
// EventNotWatching, which says why.
func TestWatchEndsWithSession(t *testing.T) {
	p := harness.NewProxy(t, zktest.Shared(t)[0])
	ns := fmt.Sprintf("/watch-expiry-%d", time.Now().UnixNano())
	c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second), session.WithNamespace(ns))
	ctx := ctxT(t)
	states := subscribe(t, c)
	_, err := c.Create(ctx, "/a", nil, session.Persistent)
	require.NoError(t, err)
	_, _, data, err := c.GetW(ctx, "/a")
	require.NoError(t, err)
	_, _, exists, err := c.ExistsW(ctx, "/missing")
	require.NoError(t, err)

	p.Blackhole(t)
	expect(t, states, session.Suspended)
	expect(t, states, session.Lost)
	p.Restore(t)
	for what, ch := range map[string]<-chan session.Event{"data watch": data, "exists watch": exists} {
		e := watchEvent(t, ch, what)
		assert.Equal(t, session.EventNotWatching, e.Type, what)
		assert.Error(t, e.Err, "%s: NotWatching says why", what)
	}
	assert.Equal(t, 0, c.Watches(), "every watch ended")
}
