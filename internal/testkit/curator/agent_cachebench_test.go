package curator_test

import (
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// Curator's side of issue 30's cache benchmarks, on the tree:
// 10 nodes under the root, 10 under each of them, 99 under each of those
// (10,010 nodes and the root), 100 B of data each, made by Go. Per
// iteration, for CuratorCache and TreeCache: five initial loads (median
// time, median retained heap per node), then 1,000 writes at 1,000 per
// second on 100 of the leaves, each timed to its event.
//
// Each cache's heap is measured in a fresh agent JVM (CacheBenchSpec's
// Servers): over the loads of one JVM, a closed TreeCache stays
// reachable until it has removed its 10,000 watches in the background,
// and TreeCache's heap per node came out negative.
//
// Run it with
//
//	ZKR_BENCH_JVM=1 go test -run '^$' -bench CuratorCaches -benchtime 1x ./internal/testkit/curator/
func BenchmarkCuratorCaches(b *testing.B) {
	if err := curator.Available(); err != nil {
		harness.Unavailable(b, "%v; %s", err, curator.Hint)
	}
	servers := harness.StartZK(b, 1).Servers()
	const root = "/bench-cache"
	leaves := curator.BenchTree(b, acltest.Raw(b, servers), root, []int{10, 10, 99}, 100)
	paths := make([]string, 0, 100)
	for i := 0; len(paths) < cap(paths); i += len(leaves) / cap(paths) {
		paths = append(paths, leaves[i])
	}
	a := curator.Start(b, servers, curator.WithName("bench"))
	var results []curator.CacheBench
	for b.Loop() {
		results = results[:0]
		for _, kind := range []curator.CacheKind{curator.CuratorCache, curator.TreeCache} {
			results = append(results, curator.BenchCache(b, a, curator.CacheBenchSpec{Kind: kind, Root: root, Loads: 5,
				Writes: 1000, Rate: 1000, Paths: paths, Within: 10 * time.Minute, Servers: servers}))
		}
	}
	b.ReportMetric(0, "ns/op")
	for _, r := range results {
		b.Logf("%s: %d nodes, load %v, %.0f B/node, write to event p50 %v p99 %v, %d of 1000 writes without an event of their own",
			r.Kind, r.Nodes, r.Load, r.HeapPerNode, r.LatencyP50, r.LatencyP99, r.Missed)
		r.Report(b)
	}
}
