package session_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// nextEvents reads n events, failing after waitLimit.
func nextEvents(t *testing.T, ch <-chan session.Event, n int) []session.Event {
	t.Helper()
	timeout := time.NewTimer(waitLimit)
	defer timeout.Stop()
	var got []session.Event
	for len(got) < n {
		select {
		case ev, ok := <-ch:
			require.True(t, ok, "notifications closed; got %v", got)
			got = append(got, ev)
		case <-timeout.C:
			t.Fatalf("waited %v for %d events; got %v", waitLimit, n, got)
		}
	}
	return got
}

// The watches of each kind tell their events on Notifications, in the
// server's order, paths without the namespace.
func TestNotificationsKindsAndNamespace(t *testing.T) {
	ctx := ctxT(t)
	ns := fmt.Sprintf("/notify-%d", time.Now().UnixNano())
	c := connect(t, zktest.Shared(t), session.WithNamespace(ns))
	events := notifications(t, c)
	_, err := c.Create(ctx, "/a", nil, session.Persistent)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/b", nil, session.Persistent)
	require.NoError(t, err)

	_, _, err = c.GetWatch(ctx, "/a")
	require.NoError(t, err)
	_, _, err = c.GetWatch(ctx, "/b")
	require.NoError(t, err)
	_, _, err = c.ChildrenWatch(ctx, "/")
	require.NoError(t, err)
	ok, _, err := c.ExistsWatch(ctx, "/c")
	require.NoError(t, err)
	require.False(t, ok)
	_, _, err = c.GetWatch(ctx, "/missing")
	require.ErrorIs(t, err, session.ErrNoNode, "no watch left on a missing node")

	_, err = c.Set(ctx, "/b", []byte("1"), -1)
	require.NoError(t, err)
	_, err = c.Set(ctx, "/a", []byte("1"), -1)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/c", nil, session.Persistent)
	require.NoError(t, err)
	_, err = c.Create(ctx, "/missing", nil, session.Persistent)
	require.NoError(t, err)
	// A watch fires once: this write is told to nobody.
	_, err = c.Set(ctx, "/a", []byte("2"), -1)
	require.NoError(t, err)
	_, _, err = c.ExistsWatch(ctx, "/a")
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, "/a", -1))

	assert.Equal(t, []session.Event{
		{Type: session.EventNodeDataChanged, Path: "/b"},
		{Type: session.EventNodeDataChanged, Path: "/a"},
		{Type: session.EventNodeCreated, Path: "/c"},
		{Type: session.EventNodeChildrenChanged, Path: "/"},
		{Type: session.EventNodeDeleted, Path: "/a"},
	}, nextEvents(t, events, 5))
}

// A reader that reads nothing holds up neither the connection nor the
// other readers: many notifications queue for it, in order, while the
// writes that cause them (answered on the same receive loop) complete.
// And the watches cost no goroutine.
func TestNotificationsSlowReaderInOrder(t *testing.T) {
	ctx := ctxT(t)
	ns := fmt.Sprintf("/notify-slow-%d", time.Now().UnixNano())
	c := connect(t, zktest.Shared(t), session.WithNamespace(ns))
	_, err := c.Create(ctx, "/", nil, session.Persistent)
	require.NoError(t, err)
	slow := notifications(t, c)
	const n = 1000
	for i := range n {
		_, err := c.Create(ctx, fmt.Sprintf("/n%04d", i), nil, session.Persistent)
		require.NoError(t, err)
	}
	before := runtime.NumGoroutine()
	for i := range n {
		_, _, err := c.GetWatch(ctx, fmt.Sprintf("/n%04d", i))
		require.NoError(t, err)
	}
	// The goroutines of the client, the server's connection and the test
	// vary by a few; a goroutine per watch would add n.
	assert.Less(t, runtime.NumGoroutine()-before, n/10, "goroutines added by %d watches", n)

	for i := range n {
		_, err := c.Set(ctx, fmt.Sprintf("/n%04d", i), []byte("x"), -1)
		require.NoError(t, err, "write %d while nobody reads", i)
	}
	got := nextEvents(t, slow, n)
	for i, ev := range got {
		require.Equal(t, session.Event{Type: session.EventNodeDataChanged, Path: fmt.Sprintf("/n%04d", i)}, ev, "event %d", i)
	}
}

// The channel closes when its context ends, and when the client closes;
// Notifications after Close is ErrClosed.
func TestNotificationsEnd(t *testing.T) {
	c := connect(t, zktest.Shared(t))
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := c.Notifications(ctx)
	require.NoError(t, err)
	cancel()
	for range ch {
	}
	all := notifications(t, c)
	c.Close()
	for range all {
	}
	_, err = c.Notifications(ctxT(t))
	assert.ErrorIs(t, err, session.ErrClosed)
	var nilCtx context.Context
	_, err = c.Notifications(nilCtx)
	assert.ErrorIs(t, err, session.ErrInvalidArgument)
}

// A session lost past its timeout ends each of its watches with
// EventNotWatching on Notifications; the watches set in the new session
// tell their events on the same channel.
func TestNotificationsNewSession(t *testing.T) {
	p := harness.NewProxy(t, zktest.Shared(t)[0])
	ns := fmt.Sprintf("/notify-lost-%d", time.Now().UnixNano())
	c := connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second), session.WithNamespace(ns))
	ctx := ctxT(t)
	states := subscribe(t, c)
	events := notifications(t, c)
	_, err := c.Create(ctx, "/a", nil, session.Persistent)
	require.NoError(t, err)
	_, _, err = c.GetWatch(ctx, "/a")
	require.NoError(t, err)

	p.Blackhole(t)
	expect(t, states, session.Suspended)
	expect(t, states, session.Lost)
	p.Restore(t)
	expect(t, states, session.Reconnected)
	gone := nextEvents(t, events, 1)[0]
	assert.Equal(t, session.EventNotWatching, gone.Type)
	assert.Equal(t, "/a", gone.Path)
	assert.True(t, gone.Err != nil, "NotWatching says why")

	_, _, err = c.GetWatch(ctx, "/a")
	require.NoError(t, err)
	_, err = c.Set(ctx, "/a", []byte("x"), -1)
	require.NoError(t, err)
	assert.Equal(t, []session.Event{{Type: session.EventNodeDataChanged, Path: "/a"}}, nextEvents(t, events, 1))
}
