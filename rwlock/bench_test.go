package rwlock_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/lockbench"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// BenchmarkReaders: readers, each on its own session, take and release the
// read lock in a loop; they all hold it at once. acq/s should grow with the
// readers until the server is the limit; requests/acq stays flat (a reader
// with no writer ahead never waits or watches).
func BenchmarkReaders(b *testing.B) {
	servers := sharedServers(b)
	ctx := context.Background()
	for _, n := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("readers=%d", n), func(b *testing.B) {
			path := fmt.Sprintf("/bench/readers-%d", n)
			locks := make([]func(func()) error, n)
			for i := range locks {
				var r recipes.Locker = newRW(b, connect(b, servers), path).ReadLock()
				locks[i] = func(held func()) error {
					l, err := r.Acquire(ctx)
					if err != nil {
						return err
					}
					held()
					return l.Release(ctx)
				}
			}
			b.ResetTimer()
			res, err := lockbench.Contend(servers[0], locks, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(res.PerSecond(), "acq/s")
			b.ReportMetric(res.RequestsPerAcq(), "requests/acq")
		})
	}
}
