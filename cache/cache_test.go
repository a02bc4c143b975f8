package cache_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// The three shapes, a filter, no data and gzip data, on the first load.
func TestInitialLoad(t *testing.T) {
	c := connect(t, sharedServers(t))
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	_, _ = zw.Write([]byte("plain"))
	require.NoError(t, zw.Close())
	mkTree(t, c, "/load=r", "/load/a=1", "/load/a/x=2", "/load/a/x/deep=3", "/load/b=4", "/load/skip=5", "/load/skip/under=6")
	_, err := c.Create(ctxT(t), "/load/zip", zipped.Bytes(), session.Persistent)
	require.NoError(t, err)

	for _, tc := range []struct {
		name  string
		opts  []cache.Option
		depth int
		want  string
	}{
		{"node", []cache.Option{cache.WithDepth(0)}, 0, "/load"},
		{"children", []cache.Option{cache.WithDepth(1)}, 1, "/load /load/a /load/b /load/skip /load/zip"},
		{"two levels", []cache.Option{cache.WithDepth(2)}, 2, "/load /load/a /load/a/x /load/b /load/skip /load/skip/under /load/zip"},
		{"tree", nil, -1, "/load /load/a /load/a/x /load/a/x/deep /load/b /load/skip /load/skip/under /load/zip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := start(t, c, "/load", tc.opts...)
			got := keyed(x.Snapshot())
			assert.Equal(t, tc.want, paths(got))
			assert.Empty(t, same(tree(t, c, "/load", tc.depth), got))
			all := readUntil(t, x, cache.Initialized)
			assert.Empty(t, same(got, fold(t, all)), "the Created of the first load, then Initialized")
		})
	}

	t.Run("filter", func(t *testing.T) {
		x := start(t, c, "/load", cache.WithFilter(func(p string) bool { return p != "/load/skip" && p != "/load/a/x" }))
		assert.Equal(t, "/load /load/a /load/b /load/zip", paths(keyed(x.Snapshot())))
		assert.Equal(t, []string{"a", "b", "zip"}, x.Children("/load"))
		assert.Empty(t, x.Children("/load/a"))
	})
	t.Run("without data", func(t *testing.T) {
		x := start(t, c, "/load", cache.WithoutData())
		n, ok := x.Get("/load/a")
		require.True(t, ok)
		assert.Nil(t, n.Data)
		assert.Equal(t, int32(1), n.Stat.DataLength)
	})
	t.Run("gzip", func(t *testing.T) {
		x := start(t, c, "/load", cache.WithDecompress(), cache.WithDepth(1))
		n, _ := x.Get("/load/zip")
		assert.Equal(t, "plain", string(n.Data))
		n, _ = x.Get("/load/a")
		assert.Equal(t, "1", string(n.Data), "data that is not gzip is kept")
		raw := start(t, c, "/load", cache.WithDepth(1))
		n, _ = raw.Get("/load/zip")
		assert.Equal(t, zipped.Bytes(), n.Data)
	})
}

// Create, change, delete and re-create, each told once, in order, with the
// node's Stat and data.
func TestEvents(t *testing.T) {
	c := connect(t, sharedServers(t))
	mkTree(t, c, "/ev")
	x := start(t, c, "/ev")
	events := record(x.Events())
	ctx := ctxT(t)

	_, err := c.Create(ctx, "/ev/n", []byte("one"), session.Persistent)
	require.NoError(t, err)
	settle(t, x, c, "/ev", -1)
	_, err = c.Set(ctx, "/ev/n", []byte("two"), -1)
	require.NoError(t, err)
	settle(t, x, c, "/ev", -1)
	require.NoError(t, c.Delete(ctx, "/ev/n", -1))
	settle(t, x, c, "/ev", -1)
	_, err = c.Create(ctx, "/ev/n", []byte("three"), session.Persistent)
	require.NoError(t, err)
	want := settle(t, x, c, "/ev", -1)
	// Deleted and created again between two reads: version 0 both times.
	require.NoError(t, c.Delete(ctx, "/ev/n", -1))
	_, err = c.Create(ctx, "/ev/n", []byte("three"), session.Persistent)
	require.NoError(t, err)
	want2 := settle(t, x, c, "/ev", -1)
	require.NotEqual(t, want["/ev/n"].Stat.Czxid, want2["/ev/n"].Stat.Czxid)

	require.NoError(t, x.Close())
	<-events.done
	var got []string
	for _, ev := range events.all() {
		if ev.Node.Path == "/ev/n" {
			got = append(got, fmt.Sprintf("%v %s v%d", ev.Type, ev.Node.Data, ev.Node.Stat.Version))
		}
	}
	assert.Equal(t, []string{"Created one v0", "Changed two v1", "Deleted two v1", "Created three v0",
		"Deleted three v0", "Created three v0"}, got)
	assert.Empty(t, same(want2, fold(t, events.all())))
}

// A missing path is an empty, initialised view that fills when the path
// appears, and empties when it goes; the cache never creates it.
func TestMissingPath(t *testing.T) {
	c := connect(t, sharedServers(t))
	ctx := ctxT(t)
	x := start(t, c, "/missing/deeper")
	assert.Empty(t, x.Snapshot())
	ok, _, err := c.Exists(ctx, "/missing")
	require.NoError(t, err)
	assert.False(t, ok, "the cache created its path's parent")
	f := x.Freshness()
	assert.True(t, f.Initialized)
	assert.True(t, f.Connected)
	assert.True(t, f.StaleSince.IsZero())

	mkTree(t, c, "/missing", "/missing/deeper=d", "/missing/deeper/kid=k")
	settle(t, x, c, "/missing/deeper", -1)
	assert.Equal(t, []string{"kid"}, x.Children("/missing/deeper"))
	require.NoError(t, c.Delete(ctx, "/missing/deeper/kid", -1))
	require.NoError(t, c.Delete(ctx, "/missing/deeper", -1))
	settle(t, x, c, "/missing/deeper", -1)
	assert.Empty(t, x.Snapshot())
	mkTree(t, c, "/missing/deeper=again")
	settle(t, x, c, "/missing/deeper", -1)
}

// A consumer that never reads blocks neither the cache nor the client:
// the view follows the server, and the events wait, all of them, in order.
func TestSlowConsumer(t *testing.T) {
	c := connect(t, sharedServers(t))
	mkTree(t, c, "/slow")
	x := start(t, c, "/slow", cache.WithDepth(1))
	ctx := ctxT(t)
	const n = 200
	for i := range n {
		_, err := c.Create(ctx, fmt.Sprintf("/slow/n%03d", i), nil, session.Persistent)
		require.NoError(t, err)
	}
	settle(t, x, c, "/slow", 1)
	_, err := c.Set(ctx, "/slow", []byte("still answering"), -1)
	require.NoError(t, err, "the client is not blocked")
	want := settle(t, x, c, "/slow", 1)

	var events []cache.Event
	for len(events) < n+3 { // the root, Initialized, n children, the root's change
		events = append(events, <-x.Events())
	}
	assert.Equal(t, cache.Initialized, events[1].Type)
	assert.Empty(t, same(want, fold(t, events)))
	require.NoError(t, x.Close())
	for range x.Events() { // closed by Close, undelivered events dropped
	}
}

// The client's Close ends the cache: its events close, Initialized says
// closed, and no goroutine is left (TestMain checks).
func TestClientCloseEndsCache(t *testing.T) {
	c := connect(t, sharedServers(t))
	x, err := cache.Start(ctxT(t), c, "/never-there")
	require.NoError(t, err)
	c.Close()
	for range x.Events() {
	}
	require.NoError(t, x.Close())
	require.NoError(t, x.Close(), "twice")
	f := x.Freshness()
	assert.False(t, f.Connected)
}

func TestBadInput(t *testing.T) {
	c := connect(t, sharedServers(t))
	ctx := ctxT(t)
	var nilCtx context.Context
	for name, start := range map[string]func() (*cache.Cache, error){
		"nil client":  func() (*cache.Cache, error) { return cache.Start(ctx, nil, "/a") },
		"bad path":    func() (*cache.Cache, error) { return cache.Start(ctx, c, "a/") },
		"depth":       func() (*cache.Cache, error) { return cache.Start(ctx, c, "/a", cache.WithDepth(-2)) },
		"nil filter":  func() (*cache.Cache, error) { return cache.Start(ctx, c, "/a", cache.WithFilter(nil)) },
		"nil option":  func() (*cache.Cache, error) { return cache.Start(ctx, c, "/a", nil) },
		"nil context": func() (*cache.Cache, error) { return cache.Start(nilCtx, c, "/a") },
	} {
		t.Run(name, func(t *testing.T) {
			x, err := start()
			assert.Nil(t, x)
			assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
		})
	}
}

// WithDecompress keeps as read what is not gzip: data written
// uncompressed, data too short for the magic, and data that starts with
// the magic but does not inflate; the node is cached all the same, with
// its events.
func TestDecompressKeepsPlainData(t *testing.T) {
	c := connect(t, sharedServers(t))
	notGzip := []byte{0x1f, 0x8b, 'n', 'o', 't'}
	mkTree(t, c, "/z=r", "/z/plain=hello", "/z/short=\x1f", "/z/empty=")
	_, err := c.Create(ctxT(t), "/z/magic", notGzip, session.Persistent)
	require.NoError(t, err)
	x := start(t, c, "/z", cache.WithDecompress())
	for p, want := range map[string]string{"/z/plain": "hello", "/z/short": "\x1f", "/z/empty": "", "/z/magic": string(notGzip)} {
		n, ok := x.Get(p)
		require.True(t, ok, p)
		assert.Equal(t, want, string(n.Data), p)
	}
	_, err = c.Set(ctxT(t), "/z/magic", []byte("\x1f\x8bstill not"), -1)
	require.NoError(t, err)
	ev := readUntil(t, x, cache.Changed)
	assert.Equal(t, "\x1f\x8bstill not", string(ev[len(ev)-1].Node.Data))
}
