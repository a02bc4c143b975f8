package cache_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/session"
)

// memTree is the tree: 3 levels below the root (10, 10 and 99 per
// parent: 10,011 nodes with the root), 100 B of data in each node.
var memTree = [3]int{10, 10, 99}

const memData = 100

// BenchmarkMemoryPerNode measures what a cache of memTree holds once
// initialised: the goroutines it adds and the Go heap it retains (after a
// GC), per cached node, each the median of the iterations (run it with
// -benchtime=3x). data+path/node is what the nodes themselves are: their
// data and their path, the yardstick.
func BenchmarkMemoryPerNode(b *testing.B) {
	c := connect(b, sharedServers(b))
	paths := mkBigTree(b, c, "/mem")
	var own int
	for _, p := range paths {
		own += len(p) + memData
	}
	var heaps, gors []float64
	for b.Loop() {
		heap0, gor0 := heapNow()
		x, err := cache.Start(ctxT(b), c, "/mem")
		require.NoError(b, err)
		require.NoError(b, x.Initialized(ctxT(b)))
		heap1, gor1 := heapNow()
		require.Len(b, x.Snapshot(), len(paths))
		heaps = append(heaps, float64(heap1-heap0)/float64(len(paths)))
		gors = append(gors, float64(gor1-gor0)/float64(len(paths)))
		require.NoError(b, x.Close())
	}
	b.ReportMetric(median(heaps), "heapB/node")
	b.ReportMetric(median(gors), "goroutines/node")
	b.ReportMetric(float64(own)/float64(len(paths)), "data+pathB/node")
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

// mkBigTree creates memTree under root, each level's creates in flight
// together, and returns every path, the root's first.
func mkBigTree(b *testing.B, c *session.Client, root string) []string {
	b.Helper()
	data := make([]byte, memData)
	all := []string{root}
	level := []string{root}
	_, err := c.Create(ctxT(b), root, data, session.Persistent)
	require.NoError(b, err)
	for _, n := range memTree {
		var next []string
		for _, p := range level {
			for i := range n {
				next = append(next, fmt.Sprintf("%s/n%02d", p, i))
			}
		}
		sem := make(chan struct{}, 64)
		var wg sync.WaitGroup
		errs := make([]error, len(next))
		for i, p := range next {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = c.Create(ctxT(b), p, data, session.Persistent)
				<-sem
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(b, err)
		}
		all = append(all, next...)
		level = next
	}
	return all
}
