package cache_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/cache"
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
// shared server.
var run = time.Now().UnixNano()

// connect is zktest.Connect in a namespace of the test's own (of this
// run of it: go test -count=N runs a test N times on one server), shared
// by every client the test connects: the tests' fixed paths never meet
// another run's nodes.
func connect(t testing.TB, servers []string, opts ...session.Option) *session.Client {
	t.Helper()
	return zktest.Connect(t, servers, append([]session.Option{session.WithNamespace(namespaceOf(t))}, opts...)...)
}

// namespaces holds the namespace of each running test. A test's own
// number tells its runs apart: its testing.T's address does not, as a
// later run may get the memory of an earlier one.
var namespaces struct {
	sync.Mutex
	of   map[testing.TB]string
	runs int
}

func namespaceOf(t testing.TB) string {
	namespaces.Lock()
	defer namespaces.Unlock()
	if ns, ok := namespaces.of[t]; ok {
		return ns
	}
	if namespaces.of == nil {
		namespaces.of = map[testing.TB]string{}
	}
	namespaces.runs++
	ns := fmt.Sprintf("/cache-test-%d/%s-%d", run, strings.ReplaceAll(t.Name(), "/", "_"), namespaces.runs)
	namespaces.of[t] = ns
	t.Cleanup(func() {
		namespaces.Lock()
		defer namespaces.Unlock()
		delete(namespaces.of, t)
	})
	return ns
}

// start starts a cache on path, closed at t's cleanup, and waits for its
// first load.
func start(t testing.TB, c *session.Client, path string, opts ...cache.Option) *cache.Cache {
	t.Helper()
	x, err := cache.Start(ctxT(t), c, path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, x.Close()) })
	require.NoError(t, x.Initialized(ctxT(t)))
	return x
}

// recorder reads a cache's events as they come, on its own goroutine, and
// notes when each came.
type recorder struct {
	mu     sync.Mutex
	events []cache.Event
	at     []time.Time // at[i]: when events[i] was read
	done   chan struct{}
}

func record(events <-chan cache.Event) *recorder {
	r := &recorder{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ev := range events {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.at = append(r.at, time.Now())
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *recorder) all() []cache.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// since returns the events read at or after from, and when each was read.
func (r *recorder) since(from time.Time) ([]cache.Event, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := 0
	for i < len(r.at) && r.at[i].Before(from) {
		i++
	}
	return slices.Clone(r.events[i:]), slices.Clone(r.at[i:])
}

// readUntil reads x's events up to and including the first of type want.
func readUntil(t testing.TB, x *cache.Cache, want cache.EventType) []cache.Event {
	t.Helper()
	timeout := time.NewTimer(waitLimit)
	defer timeout.Stop()
	var events []cache.Event
	for {
		select {
		case ev, ok := <-x.Events():
			require.True(t, ok, "events closed before %v", want)
			events = append(events, ev)
			if ev.Type == want {
				return events
			}
		case <-timeout.C:
			t.Fatalf("no %v within %v", want, waitLimit)
		}
	}
}

// fold is the view the events tell, keyed by path: what a consumer that
// applies them holds. It fails t on an event that contradicts the view
// folded so far (a Created of a node there, a Changed or Deleted of one
// not there, a Changed to another czxid or an older mzxid).
func fold(t testing.TB, events []cache.Event) map[string]cache.Node {
	t.Helper()
	view := map[string]cache.Node{}
	for i, ev := range events {
		old, had := view[ev.Node.Path]
		switch ev.Type {
		case cache.Created:
			require.False(t, had, "event %d: Created of %s, already there", i, ev.Node.Path)
			view[ev.Node.Path] = ev.Node
		case cache.Changed:
			require.True(t, had, "event %d: Changed of %s, not there", i, ev.Node.Path)
			require.Equal(t, old.Stat.Czxid, ev.Node.Stat.Czxid, "event %d: Changed of %s to another czxid", i, ev.Node.Path)
			require.Greater(t, ev.Node.Stat.Mzxid, old.Stat.Mzxid, "event %d: Changed of %s not in zxid order", i, ev.Node.Path)
			view[ev.Node.Path] = ev.Node
		case cache.Deleted:
			require.True(t, had, "event %d: Deleted of %s, not there", i, ev.Node.Path)
			delete(view, ev.Node.Path)
		}
	}
	return view
}

// tree reads the subtree at root from the server, to depth (-1: all),
// with the data as stored.
func tree(t testing.TB, c *session.Client, root string, depth int) map[string]cache.Node {
	t.Helper()
	ctx := ctxT(t)
	out := map[string]cache.Node{}
	var walk func(p string, level int)
	walk = func(p string, level int) {
		data, st, err := c.Get(ctx, p)
		if errors.Is(err, session.ErrNoNode) {
			return
		}
		require.NoError(t, err)
		out[p] = cache.Node{Path: p, Data: data, Stat: *st}
		if depth >= 0 && level >= depth {
			return
		}
		kids, _, err := c.Children(ctx, p)
		if errors.Is(err, session.ErrNoNode) {
			return
		}
		require.NoError(t, err)
		for _, k := range kids {
			walk(session.JoinPath(p, k), level+1)
		}
	}
	walk(root, 0)
	return out
}

// keyed is a snapshot keyed by path.
func keyed(nodes []cache.Node) map[string]cache.Node {
	out := map[string]cache.Node{}
	for _, n := range nodes {
		out[n.Path] = n
	}
	return out
}

// same reports the first difference between two views, by path, czxid,
// mzxid, version and data ("" when none).
func same(want, got map[string]cache.Node) string {
	for _, p := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[p]
		w := want[p]
		switch {
		case !ok:
			return "missing " + p
		case g.Stat.Czxid != w.Stat.Czxid || g.Stat.Mzxid != w.Stat.Mzxid || g.Stat.Version != w.Stat.Version:
			return "stat of " + p
		case string(g.Data) != string(w.Data):
			return "data of " + p
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			return "extra " + p
		}
	}
	return ""
}

// settle waits until the cache shows what the server holds at root (the
// writers are quiet), bounded by waitLimit; it fails t with the last
// difference.
func settle(t testing.TB, x *cache.Cache, reader *session.Client, root string, depth int) map[string]cache.Node {
	t.Helper()
	return settleTo(t, x, func() map[string]cache.Node { return tree(t, reader, root, depth) })
}

// settleTo waits until the cache's view is what want reads (once the
// writers are quiet), bounded by waitLimit, and returns it; it fails t
// with the last difference.
func settleTo(t testing.TB, x *cache.Cache, want func() map[string]cache.Node) map[string]cache.Node {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		w := want()
		d := same(w, keyed(x.Snapshot()))
		if d == "" {
			return w
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cache never showed the server's tree: %s", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// paths is the sorted paths of a view.
func paths(v map[string]cache.Node) string {
	return strings.Join(slices.Sorted(maps.Keys(v)), " ")
}

// mkTree creates the persistent nodes given as path=data.
func mkTree(t testing.TB, c *session.Client, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		p, data, _ := strings.Cut(n, "=")
		_, err := c.Create(ctxT(t), p, []byte(data), session.Persistent)
		require.NoError(t, err)
	}
}
