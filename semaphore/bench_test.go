package semaphore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// BenchmarkSemaphore compares this semaphore with Curator's
// InterProcessSemaphoreV2 (the agent's contend command) on one server in
// one run: 1 or 16 sessions take turns at a semaphore of 4 leases, one
// lease per acquisition, acquire then release at once (50 leases a round
// with 1 session, 160 with 16).
//
// The implementations alternate round by round (lockbench.SideBySide,
// Curator's as the baseline: its µs/op and ratio are Go's wall clock over
// a whole round, the request counting included, alike for both).
// leases/s is timed inside each implementation (ours by lockbench.Contend,
// Curator's in the JVM), and requests/lease is mntr's count over the
// round. Medians of the rounds; run with -benchtime Nx for N rounds.
// docs/benchmarks.md has the command and the results.
func BenchmarkSemaphore(b *testing.B) {
	if err := curator.Available(); err != nil {
		harness.Unavailable(b, "%v; %s", err, curator.Hint)
	}
	const benchMax = 4
	servers := sharedServers(b)
	for _, bc := range []struct{ sessions, leases int }{{1, 50}, {16, 160}} {
		b.Run(fmt.Sprintf("sessions=%d", bc.sessions), func(b *testing.B) {
			path := fmt.Sprintf("/bench-semaphore/%d-%d", bc.sessions, time.Now().UnixNano())
			lockers := make([]recipes.Locker, bc.sessions)
			for i := range lockers {
				lockers[i] = newSemaphore(b, connect(b, servers), path+"/ours", benchMax).Locker(1)
			}
			locks := lockbench.Lockers(context.Background(), lockers...)
			agent := curator.Start(b, servers, curator.WithName("curator semaphore"))

			// Each round's leases per second and requests per lease, by
			// implementation: Curator's (0), ours (1).
			var perSecond, perLease [2][]float64
			round := func(impl int) (int, error) {
				if impl == 1 {
					res, err := lockbench.Contend(servers[0], locks, bc.leases)
					perSecond[1] = append(perSecond[1], res.PerSecond())
					perLease[1] = append(perLease[1], res.RequestsPerAcq())
					return bc.leases, err
				}
				before, err := lockbench.Packets(servers[0])
				if err != nil {
					return 0, err
				}
				took := agent.Contend(b, "semaphore", path+"/curator", bc.sessions, bc.leases, benchMax, waitLimit)
				after, err := lockbench.Packets(servers[0])
				perSecond[0] = append(perSecond[0], float64(bc.leases)/took.Seconds())
				perLease[0] = append(perLease[0], float64(after-before)/float64(bc.leases))
				return bc.leases, err
			}
			// One round of each first, not counted: Curator's sessions are
			// made on first use, and both sides load their code.
			for impl := range 2 {
				if _, err := round(impl); err != nil {
					b.Fatal(err)
				}
				perSecond[impl], perLease[impl] = nil, nil
			}

			lockbench.SideBySide(b, []string{"curator", "ours"}, round)
			for i, name := range []string{"curator", "ours"} {
				b.ReportMetric(lockbench.Median(perSecond[i]), name+"-leases/s")
				b.ReportMetric(lockbench.Median(perLease[i]), name+"-requests/lease")
			}
			b.ReportMetric(lockbench.Median(perSecond[1])/lockbench.Median(perSecond[0]), "ours/curator-leases/s")
		})
	}
}
