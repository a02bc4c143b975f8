package counter_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/counter"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

// Curator's DistributedAtomicLong and Go's Long increment one node at the
// same time: every increment reported applied is in the final value, and
// no other. Optimistic, each side may give up some (Curator's
// succeeded() false, Go's ErrNotApplied); promoted to the lock after one
// try, the two queue on the same InterProcessMutex nodes and none gives
// up. Then each reads and compare-and-sets what the other wrote.
func TestInteropCuratorAtomicLong(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator atomic"))
	for _, tc := range []struct {
		name     string
		promoted bool
	}{
		{"optimistic", false},
		{"promoted", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const javaN, goWriters, goN = 60, 2, 30
			path, lockPath := pathOf(t, "n"), pathOf(t, "lock")
			opts := []counter.Option{counter.WithRetry(session.ExponentialBackoff{MaxRetries: 20})}
			cmd := fmt.Sprintf("atomic-long %s 20", path)
			if tc.promoted {
				opts = []counter.Option{counter.WithRetry(session.NoRetry{}), counter.WithLock(lockPath)}
				cmd = fmt.Sprintf("atomic-long %s 0 %s", path, lockPath)
			}
			a.DoExpect(t, cmd, "ok")
			l, err := counter.NewLong(zktest.Connect(t, servers), path, opts...)
			require.NoError(t, err)

			a.Send(t, fmt.Sprintf("atomic-inc %d", javaN))
			var wg sync.WaitGroup
			var mu sync.Mutex
			var goApplied int64
			var goErrs []error
			for range goWriters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range goN {
						_, err := l.Increment(ctxT(t))
						mu.Lock()
						if err == nil {
							goApplied++
						} else {
							goErrs = append(goErrs, err)
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			var javaApplied, javaFailed int64
			reply := a.Next(t, curator.ReplyTimeout)
			_, err = fmt.Sscanf(reply, "incremented %d %d", &javaApplied, &javaFailed)
			require.NoError(t, err, "reply %q", reply)
			for _, err := range goErrs {
				require.ErrorIs(t, err, counter.ErrNotApplied, "the only error without faults")
			}
			n, err := l.Get(ctxT(t))
			require.NoError(t, err)
			assert.Equal(t, javaApplied+goApplied, n, "every applied increment, Java's (%d) and Go's (%d), and no other", javaApplied, goApplied)
			t.Logf("applied: Java %d of %d, Go %d of %d", javaApplied, javaN, goApplied, goWriters*goN)
			if tc.promoted {
				assert.Zero(t, javaFailed, "Java gave up")
				assert.Empty(t, goErrs, "Go gave up")
				assert.Empty(t, zktest.Children(t, zktest.Connect(t, servers), lockPath), "no lock node left")
			}

			// Each reads and compare-and-sets the other's writes.
			a.DoExpect(t, "atomic-get", fmt.Sprintf("long %d", n))
			a.DoExpect(t, fmt.Sprintf("atomic-cas %d -3", n), fmt.Sprintf("applied %d", n))
			r, err := l.CompareAndSet(ctxT(t), n, 7)
			require.ErrorIs(t, err, counter.ErrNotApplied)
			assert.Equal(t, int64(-3), r.Pre)
			_, err = l.CompareAndSet(ctxT(t), -3, 1<<40)
			require.NoError(t, err)
			a.DoExpect(t, "atomic-get", fmt.Sprintf("long %d", int64(1<<40)))
			a.DoExpect(t, "atomic-cas 5 6", fmt.Sprintf("not-applied %d", int64(1<<40)))
		})
	}
}
