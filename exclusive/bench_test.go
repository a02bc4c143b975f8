package exclusive_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// BenchmarkHerd measures what the herd costs: waiters, each on its own
// session, contend for the exclusive lock and for the mutex, in one run.
// requests/acq grows with the waiters for the exclusive lock (every release
// wakes every waiter, which lists the children and tries to create the
// node) and stays flat for the mutex; handoff-µs is the median time from a
// release to the next acquisition.
func BenchmarkHerd(b *testing.B) {
	servers := sharedServers(b)
	ctx := context.Background()
	for _, n := range []int{4, 16, 64} {
		for _, impl := range []string{"exclusive", "mutex"} {
			b.Run(fmt.Sprintf("waiters=%d/impl=%s", n, impl), func(b *testing.B) {
				path := fmt.Sprintf("/bench/herd-%s-%d", impl, n)
				lockers := make([]recipes.Locker, n)
				for i := range lockers {
					c := connect(b, servers)
					var err error
					if impl == "exclusive" {
						lockers[i], err = newLockE(c, path)
					} else {
						lockers[i], err = mutex.New(c, path)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				res := lockbench.Run(b, servers[0], lockbench.Lockers(ctx, lockers...))
				b.ReportMetric(float64(lockbench.Median(res.Handoffs).Microseconds()), "handoff-µs")
			})
		}
	}
}
