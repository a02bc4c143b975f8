package cache_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// Interoperability with Apache Curator 5.4, run in a JVM by package
// curator, on the same tree of the shared server: a Curator writer under
// Go caches, and a Go writer under Curator's CuratorCache and TreeCache
// beside a Go cache. The agent has no namespace, so these tests connect
// without one, each under a root of its own.

// interopShapes are the three shapes, each for both sides: depth 0 (a
// NodeCache), 1 (a PathChildrenCache) and the whole tree (TreeCache).
var interopShapes = []struct {
	name  string
	depth int // cache.DefaultDepth and curator.AllLevels are both -1
}{{"node", 0}, {"children", 1}, {"tree", cache.DefaultDepth}}

// interopRuns numbers the roots interopRoot gives: go test -count=N runs
// a test N times on one server, under one name.
var interopRuns atomic.Int64

// interopRoot is a root path of t's own (of this run of it) on the shared
// server, for clients without a namespace.
func interopRoot(t *testing.T) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("/cache-interop-%d-%d-%s", run, interopRuns.Add(1), name)
}

// A Curator writer (create, set, delete with children, delete and create
// again, data compressed by Curator's gzip among them) and Go caches of
// each shape: once quiet, each cache's view and the fold of its events are
// the server's tree; with WithDecompress, the data Curator compressed
// reads as what was written.
func TestInteropCuratorWriter(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator writer"))
	c := zktest.Connect(t, servers)
	for _, sh := range interopShapes {
		t.Run(sh.name, func(t *testing.T) {
			root := interopRoot(t)
			a.Create(t, root+"/a/x/deep", []byte("deep")) // its parents made empty
			a.Create(t, root+"/z", []byte("squeezed"), curator.Compressed)
			a.Create(t, root+"/gone", []byte("soon"))
			raw := start(t, c, root, cache.WithDepth(sh.depth))
			plain := start(t, c, root, cache.WithDepth(sh.depth), cache.WithDecompress())
			rawEvents, plainEvents := record(raw.Events()), record(plain.Events())

			a.SetData(t, root, []byte("top"), curator.Compressed)
			a.SetData(t, root+"/a", []byte("a"))
			a.Create(t, root+"/a/y", []byte("new"), curator.Compressed)
			a.SetData(t, root+"/z", []byte("squeezed again"), curator.Compressed)
			a.SetData(t, root+"/a/x/deep", []byte("deeper"))
			a.Delete(t, root+"/gone")
			a.Delete(t, root+"/a/x") // and its child
			a.Create(t, root+"/a/x", []byte("x again"))
			a.Create(t, root+"/b", []byte("b"))
			a.Delete(t, root+"/b") // deleted and created again at once:
			a.Create(t, root+"/b", []byte("b again"))

			want := settle(t, raw, c, root, sh.depth)
			awaitFold(t, rawEvents, nil, want)
			wantPlain := settleTo(t, plain, func() map[string]cache.Node { return gunzipped(t, tree(t, c, root, sh.depth)) })
			awaitFold(t, plainEvents, nil, wantPlain)

			require.True(t, bytes.HasPrefix(want[root].Data, []byte{0x1f, 0x8b}), "%x", want[root].Data)
			require.Equal(t, "top", string(wantPlain[root].Data))
			if sh.depth != 0 {
				require.Equal(t, "squeezed again", string(wantPlain[root+"/z"].Data))
				require.Contains(t, want, root+"/b")
			}
		})
	}
}

// gunzipped is v with the data that is gzip (Curator's compression)
// decompressed, as WithDecompress shows it.
func gunzipped(t testing.TB, v map[string]cache.Node) map[string]cache.Node {
	t.Helper()
	out := make(map[string]cache.Node, len(v))
	for p, n := range v {
		if bytes.HasPrefix(n.Data, []byte{0x1f, 0x8b}) {
			r, err := gzip.NewReader(bytes.NewReader(n.Data))
			require.NoError(t, err, p)
			n.Data, err = io.ReadAll(r)
			require.NoError(t, err, p)
		}
		out[p] = n
	}
	return out
}

// interopStep is one change of the Go writer, followed by a wait until
// every cache shows it: so that neither side folds two changes into one
// event, and both tell the same events.
type interopStep struct {
	name string
	do   func(t *testing.T, c *session.Client, root string) error
}

func set(p string, data string) func(*testing.T, *session.Client, string) error {
	return func(t *testing.T, c *session.Client, root string) error {
		_, err := c.Set(ctxT(t), root+p, []byte(data), -1)
		return err
	}
}

func create(p string, data string) func(*testing.T, *session.Client, string) error {
	return func(t *testing.T, c *session.Client, root string) error {
		_, err := c.Create(ctxT(t), root+p, []byte(data), session.Persistent)
		return err
	}
}

func del(paths ...string) func(*testing.T, *session.Client, string) error {
	return func(t *testing.T, c *session.Client, root string) error {
		for _, p := range paths {
			if err := c.Delete(ctxT(t), root+p, -1); err != nil {
				return err
			}
		}
		return nil
	}
}

var interopSteps = []interopStep{
	{"set the root", set("", "top again")},
	{"create a child", create("/c", "c")},
	{"set a child", set("/a", "a again")},
	{"create a grandchild", create("/a/y", "y")},
	{"set a deep node", set("/a/x/deep", "deeper")},
	{"delete a subtree", del("/a/x/deep", "/a/x")},
	{"delete and create again", func(t *testing.T, c *session.Client, root string) error {
		if err := del("/b")(t, c, root); err != nil {
			return err
		}
		return create("/b", "b again")(t, c, root)
	}},
	{"delete a child", del("/c")},
}

// A Go writer under Curator's CuratorCache and TreeCache and a Go cache,
// each shape on both sides: after each change, Curator's view, the Go
// cache's Snapshot and the server's tree are the same (path, czxid,
// mzxid, version, data), and in the end both caches told the same events
// of each node, in the same order.
func TestInteropCuratorCaches(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator caches"))
	c := zktest.Connect(t, servers)
	for _, kind := range []curator.CacheKind{curator.CuratorCache, curator.TreeCache} {
		for _, sh := range interopShapes {
			t.Run(string(kind)+" "+sh.name, func(t *testing.T) {
				root := interopRoot(t)
				mkTree(t, c, root+"=top", root+"/a=a", root+"/a/x=x", root+"/a/x/deep=deep", root+"/b=b")
				a.StartCache(t, curator.CacheSpec{Kind: kind, Path: root, Depth: sh.depth})
				require.True(t, a.AwaitCache(t, waitLimit), "%s not initialized", kind)
				x := start(t, c, root, cache.WithDepth(sh.depth))
				events := record(x.Events())

				var theirs []curator.Event
				check := func(step string) {
					t.Helper()
					want := settle(t, x, c, root, sh.depth)
					deadline := time.Now().Add(waitLimit)
					for {
						d := same(want, curatorView(a.CacheView(t)))
						if d == "" {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("after %s: Curator's %s never showed the server's tree: %s", step, kind, d)
						}
						time.Sleep(20 * time.Millisecond)
					}
					theirs = append(theirs, a.CacheEvents(t)...)
				}
				check("the first load")
				for _, s := range interopSteps {
					require.NoError(t, s.do(t, c, root), s.name)
					check(s.name)
				}

				// The events may lag the views on either side.
				deadline := time.Now().Add(waitLimit)
				for {
					ours, d := goKinds(events.all()), curatorKinds(theirs)
					if maps.EqualFunc(ours, d, slices.Equal) {
						break
					}
					if time.Now().After(deadline) {
						require.Equal(t, ours, d, "the events of each node, Go's and Curator's %s", kind)
					}
					time.Sleep(20 * time.Millisecond)
					theirs = append(theirs, a.CacheEvents(t)...)
				}
				kinds := goKinds(events.all())
				require.Equal(t, []string{"created", "changed"}, kinds[root])
				if sh.depth != 0 {
					require.Equal(t, []string{"created", "deleted", "created"}, kinds[root+"/b"])
					require.Equal(t, []string{"created", "deleted"}, kinds[root+"/c"])
				}
				a.CloseCache(t)
			})
		}
	}
}

// curatorView is a Curator cache's view keyed by path, as the Go cache's.
func curatorView(nodes []curator.Node) map[string]cache.Node {
	out := make(map[string]cache.Node, len(nodes))
	for _, n := range nodes {
		out[n.Path] = cache.Node{Path: n.Path, Data: n.Data,
			Stat: session.Stat{Czxid: n.Czxid, Mzxid: n.Mzxid, Version: n.Version}}
	}
	return out
}

// goKinds is the Go cache's events of each node, in order: created,
// changed or deleted (Curator's names).
func goKinds(events []cache.Event) map[string][]string {
	out := map[string][]string{}
	for _, ev := range events {
		if ev.Node.Path != "" {
			out[ev.Node.Path] = append(out[ev.Node.Path], strings.ToLower(ev.Type.String()))
		}
	}
	return out
}

// curatorKinds is a Curator cache's events of each node, in order.
func curatorKinds(events []curator.Event) map[string][]string {
	out := map[string][]string{}
	for _, ev := range events {
		if ev.Path != "" {
			out[ev.Path] = append(out[ev.Path], string(ev.Type))
		}
	}
	return out
}
