package cache_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
	"github.com/zkrecipes/zkrecipes/session"
)

// The benchmark's shape: issue 30's tree and write load.
const (
	benchLoads  = 5    // initial loads, of which the median
	benchWrites = 1000 // writes timed to their events
	benchRate   = 1000 // writes per second
	benchPaths  = 100  // leaves the writes go to, in turn
	benchQuiet  = 2 * time.Second
)

// benchFan is the tree: 10 nodes under the root, 10 under each, 99 under
// each of those (10,010 nodes and the root), 100 B of data each.
var benchFan = []int{10, 10, 99}

// BenchmarkCache is issue 30's Performance section: the Go cache beside
// Curator 5.4's CuratorCache and TreeCache (run by the agent, timed in the
// JVM) on one ZooKeeper of its own, on the tree of benchFan, after one
// load of each cache not counted (the server's JIT warms up on the first
// loads). For the Go cache, each on a new session:
//
//   - go-load-ms: the median of benchLoads initial loads, from Start to
//     the Initialized event read;
//   - go-heap-B/node, go-stack-B/node, go-goroutines/node: what a loaded
//     cache holds (runtime.ReadMemStats after runtime.GC, HeapAlloc and
//     StackInuse, and runtime.NumGoroutine, loaded less before), medians;
//     data+path-B/node is what the nodes hold, the yardstick;
//   - go-requests/node: the server's received packets (mntr) during a
//     load over its nodes;
//   - go-write-to-event-p50-us, -p99-us: benchWrites writes at benchRate
//     per second, by another session of this process, on benchPaths
//     leaves in turn, each timed from its send to the arrival of the
//     cache's Changed event with its mzxid (one clock, this process's);
//     go-missed counts the writes with no event of their own;
//   - go-requests/change: the server's received packets during the
//     writes, less the writes and mntr's own, over the writes (the
//     sessions' pings are in it).
//
// Curator's figures are curator.BenchCache's (curator-… and tree-…), and
// the ratios go-load/curator-load and go-load/tree-load. Run it with
//
//	ZKR_BENCH_JVM=1 go test -run '^$' -bench '^BenchmarkCache$' -benchtime 1x -timeout 30m ./cache/
//
// docs/benchmarks-cache.md has the figures.
func BenchmarkCache(b *testing.B) {
	if err := curator.Available(); err != nil {
		harness.Unavailable(b, "%v; %s", err, curator.Hint)
	}
	servers := harness.StartZK(b, 1).Servers()
	const root = "/bench-cache"
	leaves := curator.BenchTree(b, acltest.Raw(b, servers), root, benchFan, 100)
	var paths []string
	for i := 0; len(paths) < benchPaths; i += len(leaves) / benchPaths {
		paths = append(paths, leaves[i])
	}
	a := curator.Start(b, servers, curator.WithName("bench"))
	// Warm-up, not counted: the server's JIT compiles its read path
	// during the first loads, which were the Go cache's.
	benchLoad(b, servers, root)
	for _, kind := range []curator.CacheKind{curator.CuratorCache, curator.TreeCache} {
		a.LoadCache(b, kind, root, 10*time.Minute)
	}

	var ours goBench
	var theirs []curator.CacheBench
	for b.Loop() {
		ours = benchGo(b, servers, root, paths)
		theirs = theirs[:0]
		for _, kind := range []curator.CacheKind{curator.CuratorCache, curator.TreeCache} {
			theirs = append(theirs, curator.BenchCache(b, a, curator.CacheBenchSpec{Kind: kind, Root: root,
				Loads: benchLoads, Writes: benchWrites, Rate: benchRate, Paths: paths, Within: 10 * time.Minute,
				Server: servers[0], Servers: servers}))
		}
	}
	b.ReportMetric(0, "ns/op")
	ours.report(b)
	for _, r := range theirs {
		b.Logf("%s: %d nodes, load %v, %.0f B/node, write to event p50 %v p99 %v, %d of %d writes without an event of their own, %.2f requests/change",
			r.Kind, r.Nodes, r.Load, r.HeapPerNode, r.LatencyP50, r.LatencyP99, r.Missed, benchWrites, r.RequestsPerChange)
		r.Report(b)
		b.ReportMetric(float64(ours.load)/float64(r.Load), "go/"+string(r.Kind)+"-load")
	}
}

// goBench is the Go cache's side of BenchmarkCache.
type goBench struct {
	nodes                   int
	load                    time.Duration
	heap, stack, goroutines float64 // per node
	dataPath                float64 // the nodes' data and path, per node
	loadRequests            float64 // per node
	p50, p99                time.Duration
	missed                  int
	changeRequests          float64
}

func (r goBench) report(b *testing.B) {
	b.Logf("go: %d nodes, load %v, heap %.0f B/node + stack %.0f B/node, %.2f goroutines/node (data+path %.0f B/node), %.2f requests/node, write to event p50 %v p99 %v, %d of %d writes without an event of their own, %.2f requests/change",
		r.nodes, r.load, r.heap, r.stack, r.goroutines, r.dataPath, r.loadRequests, r.p50, r.p99, r.missed, benchWrites, r.changeRequests)
	b.ReportMetric(float64(r.load)/float64(time.Millisecond), "go-load-ms")
	b.ReportMetric(r.heap, "go-heap-B/node")
	b.ReportMetric(r.stack, "go-stack-B/node")
	b.ReportMetric(r.goroutines, "go-goroutines/node")
	b.ReportMetric(r.dataPath, "data+path-B/node")
	b.ReportMetric(r.loadRequests, "go-requests/node")
	b.ReportMetric(float64(r.p50)/float64(time.Microsecond), "go-write-to-event-p50-us")
	b.ReportMetric(float64(r.p99)/float64(time.Microsecond), "go-write-to-event-p99-us")
	b.ReportMetric(float64(r.missed), "go-missed")
	b.ReportMetric(r.changeRequests, "go-requests/change")
}

// benchGo measures the Go cache: benchLoads loads, then the writes.
func benchGo(b *testing.B, servers []string, root string, paths []string) goBench {
	var r goBench
	var took []time.Duration
	var heap, stack, goroutines, requests []float64
	for range benchLoads {
		l := benchLoad(b, servers, root)
		r.nodes, r.dataPath = l.nodes, l.dataPath
		took = append(took, l.took)
		heap = append(heap, l.heap)
		stack = append(stack, l.stack)
		goroutines = append(goroutines, l.goroutines)
		requests = append(requests, l.requests)
	}
	r.load = lockbench.Median(took)
	r.heap, r.stack = lockbench.Median(heap), lockbench.Median(stack)
	r.goroutines, r.loadRequests = lockbench.Median(goroutines), lockbench.Median(requests)
	r.p50, r.p99, r.missed, r.changeRequests = benchLatency(b, servers, root, paths)
	return r
}

// benchLoadResult is one load of benchLoad, per node but nodes and took.
type benchLoadResult struct {
	nodes                             int
	took                              time.Duration
	heap, stack, goroutines, dataPath float64
	requests                          float64
}

// benchLoad loads the tree at root into a new cache on a new session and
// measures it; both are closed before it returns.
func benchLoad(b *testing.B, servers []string, root string) benchLoadResult {
	ctx := benchCtx(b)
	c, err := session.Connect(ctx, servers, session.WithLogger(nil))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	p0 := benchPackets(b, servers[0])

	start := time.Now()
	x, err := cache.Start(ctx, c, root)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	for ev := range x.Events() { // a consumer reads them: none left queued
		if ev.Type == cache.Initialized {
			break
		}
	}
	took := time.Since(start)

	p1 := benchPackets(b, servers[0])
	runtime.GC()
	runtime.ReadMemStats(&after)
	g1 := runtime.NumGoroutine()
	nodes := x.Snapshot()
	n := float64(len(nodes))
	var dataPath int
	for _, node := range nodes {
		dataPath += len(node.Data) + len(node.Path)
	}
	return benchLoadResult{
		nodes:      len(nodes),
		took:       took,
		heap:       float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n,
		stack:      float64(int64(after.StackInuse)-int64(before.StackInuse)) / n,
		goroutines: float64(g1-g0) / n,
		dataPath:   float64(dataPath) / n,
		requests:   float64(p1-p0-1) / n, // less p0's mntr
	}
}

// benchLatency writes benchWrites times, benchRate per second, 100 B of
// new data each, on paths in turn, from a session of its own, under a
// cache of root on another, and times each write to its Changed event.
func benchLatency(b *testing.B, servers []string, root string, paths []string) (p50, p99 time.Duration, missed int, requests float64) {
	ctx := benchCtx(b)
	c, err := session.Connect(ctx, servers, session.WithLogger(nil))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	w, err := session.Connect(ctx, servers, session.WithLogger(nil))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	x, err := cache.Start(ctx, c, root)
	if err != nil {
		b.Fatal(err)
	}

	var mu sync.Mutex
	arrived := map[int64]time.Time{} // by mzxid, the first Changed's
	last := time.Now()               // the last event's arrival
	read := make(chan struct{})
	go func() {
		defer close(read)
		for ev := range x.Events() {
			now := time.Now()
			mu.Lock()
			if _, ok := arrived[ev.Node.Stat.Mzxid]; ev.Type == cache.Changed && !ok {
				arrived[ev.Node.Stat.Mzxid] = now
			}
			last = now
			mu.Unlock()
		}
	}()
	defer func() { x.Close(); <-read }()
	if err := x.Initialized(ctx); err != nil {
		b.Fatal(err)
	}

	before := benchPackets(b, servers[0])
	sent := make([]time.Time, benchWrites)
	mzxid := make([]int64, benchWrites)
	errs := make(chan error, benchWrites)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range benchWrites {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / benchRate)))
		data := make([]byte, 100)
		copy(data, fmt.Sprint(i)) // new data every write
		sent[i] = time.Now()
		wg.Go(func() {
			st, err := w.Set(ctx, paths[i%len(paths)], data, -1)
			if err != nil {
				errs <- err
				return
			}
			mzxid[i] = st.Mzxid
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	// Wait until every write has its event, or none came for benchQuiet.
	for {
		mu.Lock()
		matched, quiet := 0, time.Since(last)
		for _, z := range mzxid {
			if _, ok := arrived[z]; ok {
				matched++
			}
		}
		mu.Unlock()
		if matched == benchWrites || quiet > benchQuiet {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	after := benchPackets(b, servers[0])

	var lat []time.Duration
	mu.Lock()
	for i, z := range mzxid {
		if at, ok := arrived[z]; ok {
			lat = append(lat, at.Sub(sent[i]))
		} else {
			missed++
		}
	}
	mu.Unlock()
	requests = float64(after-before-1-benchWrites) / benchWrites
	return lockbench.Quantile(lat, 0.5), lockbench.Quantile(lat, 0.99), missed, requests
}

func benchPackets(b *testing.B, server string) int64 {
	n, err := lockbench.Packets(server)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// benchCtx bounds the benchmark's calls; it ends at b's cleanup.
func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	return ctx
}
