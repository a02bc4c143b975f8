package session_test

import (
	"context"
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

// withNodeA connects to servers in a namespace of its own (named from
// prefix), in which it creates /a.
func withNodeA(t *testing.T, prefix string, servers []string, opts ...session.Option) (*session.Client, string) {
	t.Helper()
	ns := fmt.Sprintf("/%s-%d", prefix, time.Now().UnixNano())
	c := connect(t, servers, append(opts, session.WithNamespace(ns))...)
	_, err := c.Create(ctxT(t), "/a", nil, session.Persistent)
	require.NoError(t, err)
	return c, ns
}

// watched sets a watch on path with read (c.GetW, c.ExistsW or
// c.ChildrenW) and returns its channel.
func watched[T any](t *testing.T, read func(context.Context, string) (T, *session.Stat, <-chan session.Event, error), path string) <-chan session.Event {
	t.Helper()
	_, _, ch, err := read(ctxT(t), path)
	require.NoError(t, err)
	return ch
}

// A watch outlives a reconnection of its session: go-zookeeper sets it
// again on the new connection, and the server tells it of a change made
// while the client was away, through the event callback the watch table
// is fed from.
func TestWatchAcrossReconnection(t *testing.T) {
	servers := zktest.Shared(t)
	p := harness.NewProxy(t, servers[0])
	c, ns := withNodeA(t, "watch-reconnect", []string{p.Addr()}, session.WithSessionTimeout(6*time.Second))
	other := connect(t, servers, session.WithNamespace(ns))
	ctx := ctxT(t)
	states := subscribe(t, c)
	_, err := c.Create(ctx, "/b", nil, session.Persistent)
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
	c, _ := withNodeA(t, "watch-expiry", []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
	ctx := ctxT(t)
	states := subscribe(t, c)
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

// Watches of one path fire on the events of their kind only, each once:
// two data watches together, an exists watch of a node that exists as a
// data watch, an exists watch of a missing node on its creation, a child
// watch on a child's creation (not on a write of the node's data) and on
// the node's deletion, with a data and an exists watch beside it.
func TestWatchesOfOnePath(t *testing.T) {
	servers := zktest.Shared(t)
	c, ns := withNodeA(t, "watch-kinds", servers)
	other := connect(t, servers, session.WithNamespace(ns))
	ctx := ctxT(t)
	data1, data2 := watched(t, c.GetW, "/a"), watched(t, c.GetW, "/a")
	exists, kids, created := watched(t, c.ExistsW, "/a"), watched(t, c.ChildrenW, "/a"), watched(t, c.ExistsW, "/a/k")
	assert.Equal(t, 5, c.Watches())

	_, err := other.Set(ctx, "/a", []byte("x"), -1)
	require.NoError(t, err)
	changed := session.Event{Type: session.EventNodeDataChanged, Path: "/a"}
	for what, ch := range map[string]<-chan session.Event{"first data watch": data1, "second data watch": data2, "exists watch": exists} {
		assert.Equal(t, changed, watchEvent(t, ch, what), what)
		_, open := <-ch
		assert.False(t, open, "%s: its channel closes after its one event", what)
	}
	_, err = other.Create(ctx, "/a/k", nil, session.Persistent)
	require.NoError(t, err)
	assert.Equal(t, session.Event{Type: session.EventNodeCreated, Path: "/a/k"}, watchEvent(t, created, "exists watch of a missing node"))
	// Had the data write fired it, the child watch would tell NodeDataChanged.
	assert.Equal(t, session.Event{Type: session.EventNodeChildrenChanged, Path: "/a"}, watchEvent(t, kids, "child watch"))
	assert.Equal(t, 0, c.Watches(), "every watch fired")

	require.NoError(t, other.Delete(ctx, "/a/k", -1))
	data1, exists, kids = watched(t, c.GetW, "/a"), watched(t, c.ExistsW, "/a"), watched(t, c.ChildrenW, "/a")
	require.NoError(t, other.Delete(ctx, "/a", -1))
	deleted := session.Event{Type: session.EventNodeDeleted, Path: "/a"}
	for what, ch := range map[string]<-chan session.Event{"data watch": data1, "exists watch": exists, "child watch": kids} {
		assert.Equal(t, deleted, watchEvent(t, ch, what), what)
	}
	assert.Equal(t, 0, c.Watches(), "every watch fired")
}

// Closing the client ends every watch with EventNotWatching, which says
// the connection was closed.
func TestWatchEndsWithClose(t *testing.T) {
	c, _ := withNodeA(t, "watch-close", zktest.Shared(t))
	data, exists, kids := watched(t, c.GetW, "/a"), watched(t, c.ExistsW, "/missing"), watched(t, c.ChildrenW, "/")

	c.Close()
	for what, ch := range map[string]<-chan session.Event{"data watch": data, "exists watch": exists, "child watch": kids} {
		e := watchEvent(t, ch, what)
		assert.Equal(t, session.EventNotWatching, e.Type, what)
		assert.ErrorIs(t, e.Err, session.ErrClosing, what)
	}
	assert.Equal(t, 0, c.Watches(), "every watch ended")
}
