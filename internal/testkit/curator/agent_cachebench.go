package curator

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
)

// CacheLoad is one initial load of a Curator cache over an existing tree,
// measured inside the JVM ("cache-load").
type CacheLoad struct {
	// Nodes is how many nodes the loaded cache holds.
	Nodes int
	// Took runs from the cache's start() to its initialized event
	// (System.nanoTime).
	Took time.Duration
	// HeapBytes is the heap the loaded cache retains: the median of five
	// readings of the JVM's used heap, each right after System.gc(), with
	// the cache loaded, less the same before it was built. Noise can make
	// it a little off, even negative for a tiny cache: take the median of
	// several loads (BenchCache does).
	HeapBytes int64
}

// LoadCache makes the agent build a new cache of kind over the whole tree
// at path (beside the cache StartCache started, if any), time its initial
// load, measure the heap it retains, and close it. The agent waits at most
// 5 minutes for the load; LoadCache waits at most within for the reply.
func (a *Agent) LoadCache(t testing.TB, kind CacheKind, path string, within time.Duration) CacheLoad {
	t.Helper()
	checkPath(t, a.name, "LoadCache", path)
	cmd := fmt.Sprintf("cache-load %s %s", kind, path)
	a.Send(t, cmd)
	line := a.Next(t, within)
	var l CacheLoad
	var nanos int64
	if n, err := fmt.Sscanf(line, "loaded %d %d %d", &l.Nodes, &nanos, &l.HeapBytes); err != nil || n != 3 || nanos <= 0 {
		t.Fatalf("%s: reply to %q is %q, want loaded NODES NANOS BYTES\n%s", a.name, cmd, line, a.report())
	}
	l.Took = time.Duration(nanos)
	return l
}

// CacheLatency is the result of one "cache-latency" run.
type CacheLatency struct {
	// Took holds, in write order, the time from each write being sent to
	// the arrival of the cache's changed event with that write's mzxid,
	// both read from the JVM's System.nanoTime: the writer (a session of
	// its own) and the cache are in the one JVM, so no clocks are compared.
	Took []time.Duration
	// Missed counts the writes that got no event of their own: a watch
	// per node cache (TreeCache) folds the writes made before it re-reads
	// a node into one event, with the last one's mzxid.
	Missed int
}

// MeasureCacheLatency makes the agent write n times, rate writes per
// second, 100 B of new data each, on paths in turn (existing nodes under
// the running cache, which must be initialized: AwaitCache), and time each
// write's event. It waits at most within for the reply. The events stay
// in the log CacheEvents returns.
func (a *Agent) MeasureCacheLatency(t testing.TB, n, rate int, paths []string, within time.Duration) CacheLatency {
	t.Helper()
	if n < 1 || rate < 1 || len(paths) == 0 {
		t.Fatalf("%s: MeasureCacheLatency: n %d and rate %d must be positive, and paths given", a.name, n, rate)
	}
	for _, p := range paths {
		checkPath(t, a.name, "MeasureCacheLatency", p)
	}
	cmd := fmt.Sprintf("cache-latency %d %d %s", n, rate, strings.Join(paths, " "))
	a.Send(t, cmd)
	line := a.Next(t, within)
	f := strings.Fields(line)
	bad := func(err error) {
		t.Fatalf("%s: reply to %q is %.200q: %v, want latency MISSED NANOS...\n%s", a.name, cmd, line, err, a.report())
	}
	if len(f) < 2 || f[0] != "latency" {
		bad(fmt.Errorf("no latency"))
	}
	var l CacheLatency
	var err error
	if l.Missed, err = strconv.Atoi(f[1]); err != nil {
		bad(err)
	}
	for _, s := range f[2:] {
		ns, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			bad(err)
		}
		l.Took = append(l.Took, time.Duration(ns))
	}
	if len(l.Took)+l.Missed != n {
		bad(fmt.Errorf("%d timings and %d missed for %d writes", len(l.Took), l.Missed, n))
	}
	return l
}

// CacheBenchSpec says what BenchCache measures.
type CacheBenchSpec struct {
	Kind CacheKind
	// Root is an existing tree (made by the caller) that the caches load.
	Root string
	// Loads is how many times the tree is loaded by a new cache.
	Loads int
	// Writes, Rate and Paths: MeasureCacheLatency's n, rate and paths, on
	// a cache of Kind over Root. No Writes: no latency is measured.
	Writes, Rate int
	Paths        []string
	// Within bounds each reply of the agent.
	Within time.Duration
	// Server, when set (host:port of the one server), counts the requests
	// the server received during the writes (mntr): RequestsPerChange.
	Server string
	// Servers, when set, are the servers a fresh agent JVM connects to,
	// which loads one cache of Kind over Root for HeapPerNode alone. A
	// cache closed in a JVM stays reachable until its watches are gone
	// (a closed TreeCache removes them in the background), and the next
	// load's heap reading then counts it as "before": over the loads of
	// one JVM, TreeCache's heap per node came out negative.
	Servers []string
}

// CacheBench is Curator's side of the cache benchmarks.
type CacheBench struct {
	Kind  CacheKind
	Nodes int
	// Load is the median of the loads' times.
	Load time.Duration
	// HeapPerNode is the heap the loaded cache retains over Nodes, in
	// bytes: of the one load in a fresh JVM when spec.Servers is set,
	// else the median of the loads'.
	HeapPerNode float64
	// LatencyP50 and LatencyP99 are quantiles of the writes' times to
	// their events; Missed counts the writes that had no event of their
	// own.
	LatencyP50, LatencyP99 time.Duration
	Missed                 int
	// RequestsPerChange is what the server received during the writes
	// (spec.Server), less the writes themselves and the count's own
	// request, over the writes: the cache's requests per change, and the
	// sessions' pings meanwhile.
	RequestsPerChange float64
}

// BenchCache measures, in the agent, spec.Loads initial loads of a new
// cache of spec.Kind over the tree at spec.Root (and its heap in a fresh
// agent when spec.Servers is set: it stops at t's cleanup), then
// (spec.Writes > 0)
// the time from a write to its event on such a cache. Every cache it
// starts is closed before it returns.
func BenchCache(t testing.TB, a *Agent, spec CacheBenchSpec) CacheBench {
	t.Helper()
	if spec.Loads < 1 {
		t.Fatalf("%s: BenchCache: %d loads, want at least one", a.name, spec.Loads)
	}
	r := CacheBench{Kind: spec.Kind}
	var took []time.Duration
	var perNode []float64
	for range spec.Loads {
		l := a.LoadCache(t, spec.Kind, spec.Root, spec.Within)
		if l.Nodes == 0 {
			t.Fatalf("%s: BenchCache: the %s cache of %s holds no node", a.name, spec.Kind, spec.Root)
		}
		r.Nodes = l.Nodes
		took = append(took, l.Took)
		perNode = append(perNode, float64(l.HeapBytes)/float64(l.Nodes))
	}
	r.Load = lockbench.Median(took)
	r.HeapPerNode = lockbench.Median(perNode)
	if len(spec.Servers) > 0 {
		fresh := Start(t, spec.Servers, WithName(a.name+": heap of "+string(spec.Kind)))
		l := fresh.LoadCache(t, spec.Kind, spec.Root, spec.Within)
		if l.Nodes != r.Nodes {
			t.Fatalf("%s: BenchCache: a fresh JVM's %s cache of %s holds %d nodes, the others %d", a.name, spec.Kind, spec.Root, l.Nodes, r.Nodes)
		}
		r.HeapPerNode = float64(l.HeapBytes) / float64(l.Nodes)
	}
	if spec.Writes > 0 {
		a.StartCache(t, CacheSpec{Kind: spec.Kind, Path: spec.Root, Depth: AllLevels})
		if !a.AwaitCache(t, spec.Within) {
			t.Fatalf("%s: BenchCache: the %s cache of %s not initialized within %v", a.name, spec.Kind, spec.Root, spec.Within)
		}
		before := packets(t, spec.Server)
		lat := a.MeasureCacheLatency(t, spec.Writes, spec.Rate, spec.Paths, spec.Within)
		if spec.Server != "" {
			r.RequestsPerChange = float64(packets(t, spec.Server)-before-1-int64(spec.Writes)) / float64(spec.Writes)
		}
		a.CloseCache(t)
		r.LatencyP50 = lockbench.Quantile(lat.Took, 0.5)
		r.LatencyP99 = lockbench.Quantile(lat.Took, 0.99)
		r.Missed = lat.Missed
	}
	return r
}

// packets is server's count of received packets (0 for no server).
func packets(t testing.TB, server string) int64 {
	t.Helper()
	if server == "" {
		return 0
	}
	n, err := lockbench.Packets(server)
	if err != nil {
		t.Fatalf("BenchCache: %v", err)
	}
	return n
}

// Report reports r as b's metrics, named after the cache (curator-… or
// tree-…): load-ms, heap-B/node, write-to-event-p50-us, -p99-us, missed.
func (r CacheBench) Report(b *testing.B) {
	b.Helper()
	name := string(r.Kind)
	b.ReportMetric(float64(r.Load)/float64(time.Millisecond), name+"-load-ms")
	b.ReportMetric(r.HeapPerNode, name+"-heap-B/node")
	if r.LatencyP50 > 0 {
		b.ReportMetric(float64(r.LatencyP50)/float64(time.Microsecond), name+"-write-to-event-p50-us")
		b.ReportMetric(float64(r.LatencyP99)/float64(time.Microsecond), name+"-write-to-event-p99-us")
		b.ReportMetric(float64(r.Missed), name+"-missed")
	}
	if r.RequestsPerChange != 0 {
		b.ReportMetric(r.RequestsPerChange, name+"-requests/change")
	}
}
