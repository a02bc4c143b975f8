package mutex_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
)

// The side-by-side comparison docs/benchmarks.md quotes: the floor,
// go-zookeeper's zk.Lock, Curator's InterProcessMutex (timed in its JVM by
// the interop agent) and this mutex, alternating round by round on one
// server, on loopback and with latency added toward the clients (the
// project's fault proxy), where round trips cost what they cost on a real
// network.

// network is how the clients reach the server.
type network struct {
	name     string
	toClient time.Duration // added to every byte the server sends
}

var networks = []network{{"loopback", 0}, {"1ms-to-client", time.Millisecond}}

// through returns the addresses clients dial to reach servers over n: the
// servers themselves on loopback, else one proxy adding n's latency.
func (n network) through(b *testing.B, servers []string) []string {
	b.Helper()
	if n.toClient == 0 {
		return servers
	}
	p := harness.NewProxy(b, servers[0])
	p.LatencyToClient(b, n.toClient)
	return []string{p.Addr()}
}

// repeat runs op n times, stopping at the first error.
func repeat(op func() error, n int) error {
	for range n {
		if err := op(); err != nil {
			return err
		}
	}
	return nil
}

// handoffFloor is the median time, over n tries, from session a's call to
// delete a node to session w's notification of it: what a lock's handoff
// cannot go below (one delete, one notification), measured on the same
// network and server load as the lock.
func handoffFloor(a, w *zk.Conn, n int) (time.Duration, error) {
	path := benchPath("floor-node")
	var took []time.Duration
	for range n {
		if _, err := a.Create(path, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			return 0, err
		}
		ok, _, ev, err := w.ExistsW(path)
		if err != nil || !ok {
			return 0, fmt.Errorf("watch %s: %v (exists %v)", path, err, ok)
		}
		deleted := make(chan error, 1)
		start := time.Now()
		go func() { deleted <- a.Delete(path, -1) }()
		e := <-ev
		took = append(took, time.Since(start))
		if err := <-deleted; err != nil {
			return 0, err
		}
		if e.Type != zk.EventNodeDeleted {
			return 0, fmt.Errorf("watch %s: %v", path, e.Type)
		}
	}
	return lockbench.Median(took), nil
}

// steadyGaps is the mean time from one holder's start to the next one's
// (gaps, in the order they came) once every one of sessions has queued and
// before the queue drains: the first and last sessions gaps are left out.
// 0 when nothing is left.
func steadyGaps(gaps []time.Duration, sessions int) float64 {
	if len(gaps) <= 2*sessions {
		return 0
	}
	var sum time.Duration
	mid := gaps[sessions : len(gaps)-sessions]
	for _, g := range mid {
		sum += g
	}
	return sum.Seconds() / float64(len(mid))
}

// BenchmarkSideBySide runs the comparison with -benchtime=Nx for N
// alternating rounds: per network, uncontended (one session) and 16
// sessions on one lock.
func BenchmarkSideBySide(b *testing.B) {
	withCurator(b, func(b *testing.B, servers, addrs []string, agent *curator.Agent) {
		b.Run("uncontended", func(b *testing.B) {
			const opsPerRound = 50
			// floor-pipelined is what the machine allows two round trips
			// in this run (the mutex's limit).
			names := []string{"floor", "zk.Lock", "curator", "mutex", "floor-pipelined"}
			path := benchPath("curator")
			ops := uncontendedOps(b, addrs, "floor", "zk.Lock")
			ops = append(ops, nil, uncontendedOp(b, addrs, "mutex"), uncontendedOp(b, addrs, "floor-pipelined"))
			lockbench.SideBySide(b, names, func(i int) (int, error) {
				if ops[i] == nil {
					agent.Contend(b, "mutex", path, 1, opsPerRound, 0, time.Minute)
					return opsPerRound, nil
				}
				return opsPerRound, repeat(ops[i], opsPerRound)
			})
		})
		b.Run("contended-16", func(b *testing.B) {
			const sessions, acqPerRound = 16, 160
			fa, fw := rawConn(b, addrs), rawConn(b, addrs)
			ensure(b, fa, "/bench")
			names := []string{"zk.Lock", "curator", "mutex", "mutex-predecessor-only"}
			impls := [][]func(func()) error{
				zkLocks(b, addrs, benchPath("zklock"), sessions),
				nil,
				queueLocks(b, addrs, benchPath("mutex"), sessions, mutexDriver),
				queueLocks(b, addrs, benchPath("predecessor"), sessions, predecessorDriver),
			}
			path := benchPath("curator")
			agent.Contend(b, "mutex", path, sessions, sessions, 0, time.Minute) // start its sessions
			// Each round of an implementation is paired with a measure of
			// the handoff floor just before it.
			perFloor := make([][]float64, len(names))
			gapPerFloor := make([][]float64, len(names)) // one holder's start to the next one's, in floors
			// A round's time includes its start, every session queueing at
			// once, and its end, the queue draining: steadyPerAcq is the
			// round without them (steadyGaps).
			steadyPerAcq := make([][]float64, len(names))
			reqPerAcq := make([][]float64, len(names)) // requests the server read, per acquisition of a round
			var floors []time.Duration
			lockbench.SideBySide(b, names, func(i int) (int, error) {
				floor, err := handoffFloor(fa, fw, 15)
				if err != nil {
					return 0, err
				}
				floors = append(floors, floor)
				start := time.Now()
				if impls[i] == nil {
					agent.Contend(b, "mutex", path, sessions, acqPerRound, 0, time.Minute)
				} else {
					res, err := lockbench.Contend(servers[0], impls[i], acqPerRound)
					if err != nil {
						return 0, err
					}
					for _, g := range res.Gaps {
						gapPerFloor[i] = append(gapPerFloor[i], g.Seconds()/floor.Seconds())
					}
					steadyPerAcq[i] = append(steadyPerAcq[i], steadyGaps(res.Gaps, sessions))
					reqPerAcq[i] = append(reqPerAcq[i], res.RequestsPerAcq())
				}
				perFloor[i] = append(perFloor[i], acqPerRound/time.Since(start).Seconds()*floor.Seconds())
				return acqPerRound, nil
			})
			b.ReportMetric(float64(lockbench.Median(floors).Microseconds()), "handoff-floor-µs")
			steady := make([]float64, len(names))
			for i := range names {
				steady[i] = lockbench.Median(steadyPerAcq[i])
			}
			for i, name := range names {
				// The rounds' steady state, as BenchmarkContended measures
				// it (one implementation alone, thousands of acquisitions).
				if steady[i] == 0 {
					continue // Curator: timed in its JVM, whole rounds only
				}
				b.ReportMetric(steady[i]*1e6, "steady-"+name+"-µs/acq")
				b.ReportMetric(lockbench.Median(reqPerAcq[i]), name+"-requests/acq")
				if i > 0 {
					b.ReportMetric(steady[i]/steady[0], "steady-"+name+"/"+names[0])
				}
			}
			for i, name := range names {
				// Acquisitions per handoff floor: 1 is the physical limit
				// of a lock (one delete, one notification per handoff).
				b.ReportMetric(lockbench.Median(perFloor[i]), name+"-acq/floor")
				if gaps := gapPerFloor[i]; len(gaps) > 0 {
					// The typical handoff, in floors (1 is the limit);
					// the mean is 1/acq-per-floor.
					b.ReportMetric(lockbench.Median(gaps), name+"-handoff-p50/floor")
					b.ReportMetric(lockbench.Quantile(gaps, 0.9), name+"-handoff-p90/floor")
				}
			}
		})
	})
}

// withCurator runs body on each network, with a Curator agent connected
// over it.
func withCurator(b *testing.B, body func(b *testing.B, servers, addrs []string, agent *curator.Agent)) {
	servers := sharedServers(b)
	if err := curator.Available(); err != nil {
		harness.Unavailable(b, "curator: %v; %s", err, curator.Hint)
	}
	for _, n := range networks {
		b.Run("net="+n.name, func(b *testing.B) {
			addrs := n.through(b, servers)
			body(b, servers, addrs, curator.Start(b, addrs))
		})
	}
}

// BenchmarkContended: sessions contend for one lock, each implementation
// on its own, on each network; acq/s is the queue's throughput,
// requests/acq what each acquisition costs the server (mntr), which a lock
// that watches only a node or two ahead keeps flat as sessions grow.
func BenchmarkContended(b *testing.B) {
	withCurator(b, func(b *testing.B, servers, addrs []string, agent *curator.Agent) {
		for _, sessions := range []int{4, 16, 64} {
			impls := map[string]func() []func(func()) error{
				"zk.Lock": func() []func(func()) error { return zkLocks(b, addrs, benchPath("zklock"), sessions) },
				"mutex": func() []func(func()) error {
					return queueLocks(b, addrs, benchPath("mutex"), sessions, mutexDriver)
				},
				"mutex-predecessor-only": func() []func(func()) error {
					return queueLocks(b, addrs, benchPath("predecessor"), sessions, predecessorDriver)
				},
				"mutex-no-fast-handoff": func() []func(func()) error {
					return queueLocks(b, addrs, benchPath("nofast"), sessions, noFastHandoff{predecessorDriver})
				},
			}
			for _, name := range []string{"zk.Lock", "curator", "mutex", "mutex-predecessor-only", "mutex-no-fast-handoff"} {
				b.Run(fmt.Sprintf("sessions=%d/impl=%s", sessions, name), func(b *testing.B) {
					if name != "curator" {
						lockbench.Run(b, servers[0], impls[name]())
						return
					}
					path := benchPath("curator")
					agent.Contend(b, "mutex", path, sessions, sessions, 0, time.Minute) // start its sessions
					before, err := lockbench.Packets(servers[0])
					if err != nil {
						b.Fatal(err)
					}
					b.ResetTimer()
					took := agent.Contend(b, "mutex", path, sessions, b.N, 0, 10*time.Minute)
					after, err := lockbench.Packets(servers[0])
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(b.N)/took.Seconds(), "acq/s")
					b.ReportMetric(float64(after-before)/float64(b.N), "requests/acq")
				})
			}
		}
	})
}

// BenchmarkClientCost compares what an acquisition costs this process (CPU
// and allocations, the server's work not counted) with zk.Lock's and the
// floor's, uncontended and with 16 sessions on one lock, on loopback.
func BenchmarkClientCost(b *testing.B) {
	servers := sharedServers(b)
	b.Run("uncontended", func(b *testing.B) {
		const opsPerRound = 200
		names := []string{"zk.Lock", "floor", "mutex"}
		ops := uncontendedOps(b, servers, names...)
		lockbench.ClientCost(b, names, func(i int) (int, error) {
			return opsPerRound, repeat(ops[i], opsPerRound)
		})
	})
	b.Run("contended-16", func(b *testing.B) {
		const sessions, acqPerRound = 16, 320
		names := []string{"zk.Lock", "mutex"}
		impls := [][]func(func()) error{
			zkLocks(b, servers, benchPath("zklock"), sessions),
			queueLocks(b, servers, benchPath("mutex"), sessions, mutexDriver),
		}
		lockbench.ClientCost(b, names, func(i int) (int, error) {
			_, err := lockbench.Contend(servers[0], impls[i], acqPerRound)
			return acqPerRound, err
		})
	})
}
