package curator_test

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
)

// gzipMagic starts every gzip stream: Curator's compressed data.
var gzipMagic = []byte{0x1f, 0x8b}

// serverTree reads the nodes under root, root included, to depth levels
// below it (curator.AllLevels: all), in path order, as a cache shows them.
func serverTree(t *testing.T, raw *zk.Conn, root string, depth int) []curator.Node {
	t.Helper()
	var nodes []curator.Node
	var walk func(p string, level int)
	walk = func(p string, level int) {
		data, st, err := raw.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		require.NoError(t, err, "Get %s", p)
		nodes = append(nodes, curator.Node{Path: p, Stat: curator.Stat{Czxid: st.Czxid, Mzxid: st.Mzxid, Version: st.Version}, Data: data})
		if level == depth {
			return
		}
		kids, _, err := raw.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		require.NoError(t, err, "Children %s", p)
		for _, k := range kids {
			walk(path.Join(p, k), level+1)
		}
	}
	walk(root, 0)
	slices.SortFunc(nodes, func(x, y curator.Node) int { return strings.Compare(x.Path, y.Path) })
	return normalize(nodes)
}

// normalize makes empty data one value: ZooKeeper and Curator give no data
// as nil or as an empty slice.
func normalize(nodes []curator.Node) []curator.Node {
	for i := range nodes {
		if len(nodes[i].Data) == 0 {
			nodes[i].Data = []byte{}
		}
	}
	return nodes
}

// waitEvents collects the cache's events until there are n, or fails t.
func waitEvents(t *testing.T, a *curator.Agent, n int) []curator.Event {
	t.Helper()
	deadline := time.Now().Add(curator.ReplyTimeout)
	var got []curator.Event
	for {
		got = append(got, a.CacheEvents(t)...)
		if len(got) >= n {
			require.Len(t, got, n, "events: %v", got)
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d events, want %d: %v", a.Name(), len(got), n, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitView polls the cache's view until it equals want, or fails t.
func waitView(t *testing.T, a *curator.Agent, want []curator.Node) {
	t.Helper()
	deadline := time.Now().Add(curator.ReplyTimeout)
	for {
		got := normalize(a.CacheView(t))
		if slices.EqualFunc(got, want, equalNode) {
			return
		}
		if time.Now().After(deadline) {
			require.Equal(t, want, got, "%s: the cache's view", a.Name())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func equalNode(x, y curator.Node) bool {
	return x.Path == y.Path && x.Stat == y.Stat && bytes.Equal(x.Data, y.Data)
}

// testWriter: create, set and delete through Curator, checked against the
// server.
func testWriter(t *testing.T, servers []string) {
	b := curator.Start(t, servers, curator.WithName("writer"))
	raw := acltest.Raw(t, servers)
	const root = "/agent-writer"

	b.DoExpect(t, "create "+root, "error IllegalArgumentException: create takes a path, data in hex and optionally ephemeral, sequential, compressed")
	b.DoExpect(t, "create "+root+" - durable", "error IllegalArgumentException: create takes a path, data in hex and optionally ephemeral, sequential, compressed")
	b.DoExpect(t, "set "+root+" - compressed compressed", "error IllegalArgumentException: set takes a path, data in hex and optionally compressed")
	b.DoExpect(t, "create "+root+" zz", "error IllegalArgumentException: data zz: want hex digits, or - for none")

	p, st := b.Create(t, root+"/a/b", []byte("one"))
	require.Equal(t, root+"/a/b", p)
	data, zst, err := raw.Get(p)
	require.NoError(t, err)
	require.Equal(t, "one", string(data))
	require.Equal(t, curator.Stat{Czxid: zst.Czxid, Mzxid: zst.Mzxid, Version: 0}, st)
	parent, _, err := raw.Get(root + "/a")
	require.NoError(t, err)
	require.Empty(t, parent, "a parent Curator made")

	st2 := b.SetData(t, p, []byte("two"))
	require.Equal(t, st.Czxid, st2.Czxid)
	require.Greater(t, st2.Mzxid, st.Mzxid)
	require.Equal(t, int32(1), st2.Version)

	seq, _ := b.Create(t, root+"/e-", nil, curator.Ephemeral, curator.Sequential)
	require.Regexp(t, `^/agent-writer/e-\d{10}$`, seq)
	_, est, err := raw.Get(seq)
	require.NoError(t, err)
	require.Equal(t, b.Session(), est.EphemeralOwner)

	zp, _ := b.Create(t, root+"/z", []byte("squeezed"), curator.Compressed)
	data, _, err = raw.Get(zp)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, gzipMagic), "compressed data %x", data)
	b.SetData(t, zp, []byte("again"), curator.Compressed)
	data, _, err = raw.Get(zp)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, gzipMagic), "compressed data %x", data)

	b.Delete(t, root)
	_, _, err = raw.Get(root)
	require.ErrorIs(t, err, zk.ErrNoNode)
	require.Regexp(t, `^error NoNodeException: .*NoNode for /agent-writer$`, b.Do(t, "delete "+root))
}

// testCaches runs Curator's two caches over a tree that a Curator writer
// and a Go writer change, and compares their views and events with the
// server's.
func testCaches(t *testing.T, servers []string) {
	a := curator.Start(t, servers, curator.WithName("cache"))
	b := curator.Start(t, servers, curator.WithName("writer"))
	raw := acltest.Raw(t, servers)

	a.DoExpect(t, "cache-view", "error IllegalStateException: no cache: send cache PATH DEPTH or treecache PATH DEPTH first")
	a.DoExpect(t, "cache /x", "error IllegalArgumentException: cache takes a path, a depth (or all) and optionally compressed")
	a.DoExpect(t, "treecache /x -1", "error IllegalArgumentException: negative depth -1")

	for _, kind := range []curator.CacheKind{curator.CuratorCache, curator.TreeCache} {
		t.Run(string(kind), func(t *testing.T) {
			root := "/agent-cache/" + string(kind)
			b.Create(t, root+"/a/a1", []byte("a1"))
			b.Create(t, root+"/b", []byte("b"))

			a.StartCache(t, curator.CacheSpec{Kind: kind, Path: root, Depth: curator.AllLevels})
			require.True(t, a.AwaitCache(t, curator.ReplyTimeout))
			want := serverTree(t, raw, root, curator.AllLevels)
			require.Len(t, want, 4)
			waitView(t, a, want)
			// The initial load: a created event per node, then initialized.
			events := waitEvents(t, a, 5)
			require.Equal(t, curator.Event{Type: curator.EventInitialized}, events[4])
			var created []curator.Node
			for _, e := range events[:4] {
				require.Equal(t, curator.EventCreated, e.Type, "%v", e)
				created = append(created, curator.Node{Path: e.Path, Stat: e.Stat})
			}
			slices.SortFunc(created, func(x, y curator.Node) int { return strings.Compare(x.Path, y.Path) })
			for i := range want {
				require.Equal(t, want[i].Path, created[i].Path)
				require.Equal(t, want[i].Stat, created[i].Stat)
			}

			// Curator writes.
			set := b.SetData(t, root+"/b", []byte("b2"))
			require.Equal(t, []curator.Event{{Type: curator.EventChanged, Path: root + "/b", Stat: set}}, waitEvents(t, a, 1))
			old := want[len(want)-1].Stat // root/b before the set
			require.Equal(t, old.Czxid, set.Czxid)
			b.Delete(t, root+"/b")
			require.Equal(t, []curator.Event{{Type: curator.EventDeleted, Path: root + "/b", Stat: set}}, waitEvents(t, a, 1))
			_, again := b.Create(t, root+"/b", []byte("b"))
			require.Equal(t, []curator.Event{{Type: curator.EventCreated, Path: root + "/b", Stat: again}}, waitEvents(t, a, 1))
			require.NotEqual(t, set.Czxid, again.Czxid, "re-created: a new czxid")

			// Go writes.
			_, err := raw.Create(root+"/a/a2", []byte("go"), 0, zk.WorldACL(zk.PermAll))
			require.NoError(t, err)
			_, zst, err := raw.Get(root + "/a/a2")
			require.NoError(t, err)
			require.Equal(t, []curator.Event{{Type: curator.EventCreated, Path: root + "/a/a2",
				Stat: curator.Stat{Czxid: zst.Czxid, Mzxid: zst.Mzxid, Version: zst.Version}}}, waitEvents(t, a, 1))
			_, err = raw.Set(root+"/a/a1", []byte("go a1"), -1)
			require.NoError(t, err)
			require.Equal(t, curator.EventChanged, waitEvents(t, a, 1)[0].Type)
			waitView(t, a, serverTree(t, raw, root, curator.AllLevels))

			a.CloseCache(t)
			a.DoExpect(t, "cache-events", "error IllegalStateException: no cache: send cache PATH DEPTH or treecache PATH DEPTH first")
			b.Delete(t, root)
		})
	}

	t.Run("Depth", func(t *testing.T) {
		root := "/agent-cache/depth"
		b.Create(t, root+"/a/a1/a11", []byte("deep"))
		b.Create(t, root+"/b", []byte("b"))
		for _, kind := range []curator.CacheKind{curator.CuratorCache, curator.TreeCache} {
			for _, depth := range []int{0, 1, 2} {
				a.StartCache(t, curator.CacheSpec{Kind: kind, Path: root, Depth: depth})
				require.True(t, a.AwaitCache(t, curator.ReplyTimeout), "%s depth %d", kind, depth)
				want := serverTree(t, raw, root, depth)
				require.Len(t, want, []int{1, 3, 4}[depth])
				waitView(t, a, want)
				// Events below the depth are not shown either.
				b.SetData(t, root+"/a/a1/a11", []byte(fmt.Sprint("deep ", kind, depth)))
				st := b.SetData(t, root, []byte("marker"))
				events := waitEvents(t, a, len(want)+2)
				require.Equal(t, curator.Event{Type: curator.EventChanged, Path: root, Stat: st}, events[len(events)-1],
					"%s depth %d: %v", kind, depth, events)
			}
		}
		a.CloseCache(t)
		b.Delete(t, root)
	})

	t.Run("Compressed", func(t *testing.T) {
		// Every node compressed: Curator's decompression fails on any other
		// data, even the empty parents that its creatingParentsIfNeeded
		// makes (CuratorCache logs the error and leaves the node out).
		root := "/agent-cache/compressed"
		b.Create(t, root, []byte("top"), curator.Compressed)
		b.Create(t, root+"/z", []byte("squeezed"), curator.Compressed)
		for _, kind := range []curator.CacheKind{curator.CuratorCache, curator.TreeCache} {
			for _, compressed := range []bool{false, true} {
				a.StartCache(t, curator.CacheSpec{Kind: kind, Path: root, Depth: 1, Compressed: compressed})
				require.True(t, a.AwaitCache(t, curator.ReplyTimeout))
				view := a.CacheView(t)
				require.Len(t, view, 2, "%s compressed %v: %v", kind, compressed, view)
				require.Equal(t, root+"/z", view[1].Path)
				if compressed {
					require.Equal(t, "squeezed", string(view[1].Data), "%s", kind)
				} else {
					require.True(t, bytes.HasPrefix(view[1].Data, gzipMagic), "%s: %x", kind, view[1].Data)
				}
			}
		}
		a.CloseCache(t)
		b.Delete(t, root)
	})

	t.Run("Missing", func(t *testing.T) {
		// A cache of a missing path is empty, initialized, and creates
		// nothing; it fills when the path appears.
		root := "/agent-cache/missing"
		for _, kind := range []curator.CacheKind{curator.CuratorCache, curator.TreeCache} {
			a.StartCache(t, curator.CacheSpec{Kind: kind, Path: root, Depth: curator.AllLevels})
			require.True(t, a.AwaitCache(t, curator.ReplyTimeout))
			require.Empty(t, a.CacheView(t))
			require.Equal(t, []curator.Event{{Type: curator.EventInitialized}}, waitEvents(t, a, 1))
			_, _, err := raw.Get(root)
			require.ErrorIs(t, err, zk.ErrNoNode, "%s created the path it watches", kind)
			_, st := b.Create(t, root, []byte("here"))
			require.Equal(t, []curator.Event{{Type: curator.EventCreated, Path: root, Stat: st}}, waitEvents(t, a, 1))
			b.Delete(t, root)
			require.Equal(t, []curator.Event{{Type: curator.EventDeleted, Path: root, Stat: st}}, waitEvents(t, a, 1))
		}
		a.CloseCache(t)
	})
}

// testCacheBench runs the benchmark commands on a small tree.
func testCacheBench(t *testing.T, servers []string) {
	a := curator.Start(t, servers, curator.WithName("bench"))
	const root = "/agent-cache-bench"
	var paths []string
	for i := range 3 {
		for j := range 3 {
			_, _ = a.Create(t, fmt.Sprintf("%s/n%d/m%d", root, i, j), bytes.Repeat([]byte{'x'}, 100))
		}
		paths = append(paths, fmt.Sprintf("%s/n%d", root, i))
	}
	const nodes = 1 + 3 + 9

	a.DoExpect(t, "cache-load nope "+root, "error IllegalArgumentException: cache-load takes curator or tree and a path")
	a.DoExpect(t, "cache-latency 10 100 "+root, "error IllegalStateException: no cache: send cache PATH DEPTH or treecache PATH DEPTH first")
	a.DoExpect(t, "cache-latency 0 100 "+root, "error IllegalArgumentException: cache-latency: N and RATE must be positive")
	for _, kind := range []curator.CacheKind{curator.CuratorCache, curator.TreeCache} {
		l := a.LoadCache(t, kind, root, curator.ReplyTimeout)
		require.Equal(t, nodes, l.Nodes, "%s", kind)
		require.Positive(t, l.Took)

		const writes = 30
		a.StartCache(t, curator.CacheSpec{Kind: kind, Path: root, Depth: curator.AllLevels})
		require.True(t, a.AwaitCache(t, curator.ReplyTimeout))
		before := len(waitEvents(t, a, nodes+1))
		require.Equal(t, nodes+1, before)
		lat := a.MeasureCacheLatency(t, writes, 200, paths, curator.ReplyTimeout)
		require.Equal(t, writes, len(lat.Took)+lat.Missed)
		require.NotEmpty(t, lat.Took, "%s: no write had its event", kind)
		for _, d := range lat.Took {
			require.Positive(t, d)
		}
		// Every timed write was an event of the cache's, in its log.
		changed := 0
		for _, e := range a.CacheEvents(t) {
			require.Equal(t, curator.EventChanged, e.Type)
			changed++
		}
		require.GreaterOrEqual(t, changed, len(lat.Took))
		a.CloseCache(t)

		r := curator.BenchCache(t, a, curator.CacheBenchSpec{Kind: kind, Root: root, Loads: 3,
			Writes: 10, Rate: 100, Paths: paths, Within: curator.ReplyTimeout, Servers: servers})
		require.Equal(t, nodes, r.Nodes)
		require.Positive(t, r.Load)
		require.Positive(t, r.LatencyP50)
		require.GreaterOrEqual(t, r.LatencyP99, r.LatencyP50)
	}
}
