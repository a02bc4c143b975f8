package cache_test

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
)

// memData is the bytes of data in each node of the tree.
const memData = 100

// BenchmarkMemoryPerNode measures what a cache of BenchmarkCache's tree
// (benchFan) holds once initialised and its events read: the goroutines
// it adds and the Go heap it retains (after a GC), per cached node, each
// the median of the iterations (run it with -benchtime=3x).
// data+path/node is what the nodes themselves are: their data and their
// path, the yardstick. zk-watches-B/node is the part of the heap
// no cache on go-zookeeper can cut: what a bare go-zookeeper client
// retains for a GetW and a ChildrenW on each node (its watcher map, keyed
// by full path, and a channel per watch), measured the same way.
func BenchmarkMemoryPerNode(b *testing.B) {
	servers := sharedServers(b)
	root := "/mem-" + time.Now().Format("150405.000000")
	curator.BenchTree(b, acltest.Raw(b, servers), root, benchFan, memData)
	paths := treePaths(root, benchFan)
	var own int
	for _, p := range paths {
		own += len(p) + memData
	}
	var heaps, gors, floors []float64
	for b.Loop() {
		// A session per cache: a closed cache's watches stay in the
		// client's watcher map until they fire, and a later cache's
		// watches on the same paths would be counted at less.
		c := zktest.Connect(b, servers)
		heap0, gor0 := heapNow()
		x, err := cache.Start(ctxT(b), c, root)
		require.NoError(b, err)
		for ev := range x.Events() { // a consumer reads them: none left queued
			if ev.Type == cache.Initialized {
				break
			}
		}
		heap1, gor1 := heapNow()
		require.Len(b, x.Snapshot(), len(paths))
		heaps = append(heaps, float64(heap1-heap0)/float64(len(paths)))
		gors = append(gors, float64(gor1-gor0)/float64(len(paths)))
		require.NoError(b, x.Close())
		c.Close()
		floors = append(floors, watchFloor(b, servers, paths))
	}
	b.ReportMetric(median(heaps), "heapB/node")
	b.ReportMetric(median(gors), "goroutines/node")
	b.ReportMetric(median(floors), "zk-watchesB/node")
	b.ReportMetric(float64(own)/float64(len(paths)), "data+pathB/node")
}

// watchFloor is the heap per node a bare go-zookeeper client retains
// after a GetW and a ChildrenW on each of paths, the replies dropped.
func watchFloor(b *testing.B, servers []string, paths []string) float64 {
	conn, _, err := zk.Connect(servers, 15*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLog{}))
	require.NoError(b, err)
	defer conn.Close()
	_, _, err = conn.Exists("/") // connected: its buffers are in heap0
	require.NoError(b, err)
	heap0, _ := heapNow()
	for _, p := range paths {
		_, _, _, err := conn.GetW(p)
		require.NoError(b, err)
		_, _, _, err = conn.ChildrenW(p)
		require.NoError(b, err)
	}
	heap1, _ := heapNow()
	return float64(heap1-heap0) / float64(len(paths))
}

// heapNow is the live Go heap after a full collection, and the number of
// goroutines.
func heapNow() (int64, int) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc), runtime.NumGoroutine()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
