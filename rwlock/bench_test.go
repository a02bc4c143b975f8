package rwlock_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
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
			readers := make([]recipes.Locker, n)
			for i := range readers {
				readers[i] = newRW(b, connect(b, servers), path).ReadLock()
			}
			lockbench.Run(b, servers[0], lockbench.Lockers(ctx, readers...))
		})
	}
}
