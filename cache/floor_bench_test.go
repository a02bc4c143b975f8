package cache_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
)

// floorBounds are the bounds on the requests in flight that
// BenchmarkLoadFloor tries.
var floorBounds = []int{4, 16, 64, 128, 256, 1024}

// BenchmarkLoadFloor is the floor of an initial load of BenchmarkCache's
// tree on this machine: the same reads a watch-per-node cache makes (GetW
// and ChildrenW on each node), every path known beforehand, issued by a
// bare go-zookeeper client on a new connection with at most bound
// requests in flight, beside Curator's CuratorCache loading the same tree
// in the agent's JVM, alternating in one run. floor-<bound>-ms and
// curator-load-ms are medians of benchLoads; curator/floor-<bound> is how
// many times faster the floor is. No cache can load faster than its
// reads: where the best floor is under 2x, issue 30's load goal cannot be
// met by a cache that reads every node. Run it with
//
//	ZKR_BENCH_JVM=1 go test -run '^$' -bench '^BenchmarkLoadFloor$' -benchtime 1x -timeout 30m ./cache/
func BenchmarkLoadFloor(b *testing.B) {
	if err := curator.Available(); err != nil {
		harness.Unavailable(b, "%v; %s", err, curator.Hint)
	}
	servers := harness.StartZK(b, 1).Servers()
	const root = "/bench-floor"
	curator.BenchTree(b, acltest.Raw(b, servers), root, benchFan, 100)
	paths := treePaths(root, benchFan)
	a := curator.Start(b, servers, curator.WithName("floor"))

	floors := make(map[int][]time.Duration)
	var theirs []time.Duration
	for b.Loop() {
		for range benchLoads {
			for _, bound := range floorBounds {
				floors[bound] = append(floors[bound], floorLoad(b, servers, paths, bound))
			}
			theirs = append(theirs, a.LoadCache(b, curator.CuratorCache, root, 10*time.Minute).Took)
		}
	}
	b.ReportMetric(0, "ns/op")
	curatorLoad := lockbench.Median(theirs)
	b.ReportMetric(float64(curatorLoad)/float64(time.Millisecond), "curator-load-ms")
	for _, bound := range floorBounds {
		f := lockbench.Median(floors[bound])
		b.Logf("floor with %d in flight: %v (CuratorCache %v: %.2fx)", bound, f, curatorLoad, float64(curatorLoad)/float64(f))
		b.ReportMetric(float64(f)/float64(time.Millisecond), fmt.Sprintf("floor-%d-ms", bound))
		b.ReportMetric(float64(curatorLoad)/float64(f), fmt.Sprintf("curator/floor-%d", bound))
	}
}

// treePaths is every path of the tree curator.BenchTree makes at root
// with fan, the root's first.
func treePaths(root string, fan []int) []string {
	all := []string{root}
	level := []string{root}
	for _, n := range fan {
		var next []string
		for _, p := range level {
			for i := range n {
				next = append(next, fmt.Sprintf("%s/n%d", p, i))
			}
		}
		all = append(all, next...)
		level = next
	}
	return all
}

// floorLoad connects a bare client and times GetW and ChildrenW on each
// of paths, bound requests in flight, from the first request sent to the
// last reply; the connection is closed before it returns.
func floorLoad(b *testing.B, servers []string, paths []string, bound int) time.Duration {
	conn, _, err := zk.Connect(servers, 15*time.Second, zk.WithLogInfo(false), zk.WithLogger(quietLog{}))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if _, _, err := conn.Exists("/"); err != nil { // connected, a session
		b.Fatal(err)
	}
	var next atomic.Int64
	errs := make([]error, bound)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range bound {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= 2*len(paths) {
					return
				}
				p := paths[i/2]
				var err error
				if i%2 == 0 {
					_, _, _, err = conn.GetW(p)
				} else {
					_, _, _, err = conn.ChildrenW(p)
				}
				if err != nil {
					errs[w] = fmt.Errorf("%s: %w", p, err)
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return took
}

type quietLog struct{}

func (quietLog) Printf(string, ...any) {}
