package mutex_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/curator"
	"github.com/zkrecipes/zkrecipes/internal/harness"
	"github.com/zkrecipes/zkrecipes/internal/lockbench"
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

// roundTrip is the median time of a request on addrs (exists /): the unit
// in which a handoff's cost is counted.
func roundTrip(b *testing.B, addrs []string) time.Duration {
	b.Helper()
	conn := rawConn(b, addrs)
	var took []time.Duration
	for range 50 {
		start := time.Now()
		if _, _, err := conn.Exists("/"); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	return lockbench.Median(took)
}

// BenchmarkSideBySide runs the comparison with -benchtime=Nx for N
// alternating rounds: per network, uncontended (one session) and 16
// sessions on one lock.
func BenchmarkSideBySide(b *testing.B) {
	servers := sharedServers(b)
	if err := curator.Available(); err != nil {
		harness.Unavailable(b, "curator: %v; %s", err, curator.Hint)
	}
	for _, n := range networks {
		b.Run("net="+n.name, func(b *testing.B) {
			addrs := n.through(b, servers)
			agent := curator.Start(b, addrs)
			b.Run("uncontended", func(b *testing.B) {
				const opsPerRound = 50
				names := []string{"floor", "zk.Lock", "curator", "mutex"}
				path := benchPath("curator")
				ops := uncontendedOps(b, addrs, "floor", "zk.Lock")
				ops = append(ops, nil, uncontendedOp(b, addrs, "mutex"))
				lockbench.SideBySide(b, names, func(i int) (int, error) {
					if ops[i] == nil {
						agent.Contend(b, "mutex", path, 1, opsPerRound, 0, time.Minute)
						return opsPerRound, nil
					}
					for range opsPerRound {
						if err := ops[i](); err != nil {
							return 0, err
						}
					}
					return opsPerRound, nil
				})
			})
			b.Run("contended-16", func(b *testing.B) {
				const sessions, acqPerRound = 16, 160
				rtt := roundTrip(b, addrs)
				names := []string{"zk.Lock", "curator", "mutex", "mutex-predecessor-only"}
				impls := [][]func(func()) error{
					zkLocks(b, addrs, benchPath("zklock"), sessions),
					nil,
					queueLocks(b, addrs, benchPath("mutex"), sessions, mutexDriver),
					queueLocks(b, addrs, benchPath("predecessor"), sessions, predecessorDriver),
				}
				path := benchPath("curator")
				agent.Contend(b, "mutex", path, sessions, sessions, 0, time.Minute) // start its sessions
				perSec := make([][]float64, len(names))
				lockbench.SideBySide(b, names, func(i int) (int, error) {
					start := time.Now()
					if impls[i] == nil {
						agent.Contend(b, "mutex", path, sessions, acqPerRound, 0, time.Minute)
					} else if _, err := lockbench.Contend(servers[0], impls[i], acqPerRound); err != nil {
						return 0, err
					}
					perSec[i] = append(perSec[i], acqPerRound/time.Since(start).Seconds())
					return acqPerRound, nil
				})
				b.ReportMetric(rtt.Seconds()*1e6, "rtt-µs")
				for i, name := range names {
					// Handoffs per round trip: 1 is the physical limit of a
					// queue lock (one delete, one notification).
					b.ReportMetric(lockbench.Median(perSec[i])*rtt.Seconds(), name+"-acq/rtt")
				}
			})
		})
	}
}

// BenchmarkRequestsPerAcquisition counts the server's requests per
// acquisition as waiters grow, for every implementation, on each network.
func BenchmarkRequestsPerAcquisition(b *testing.B) {
	servers := sharedServers(b)
	if err := curator.Available(); err != nil {
		harness.Unavailable(b, "curator: %v; %s", err, curator.Hint)
	}
	for _, n := range networks {
		b.Run("net="+n.name, func(b *testing.B) {
			addrs := n.through(b, servers)
			agent := curator.Start(b, addrs)
			for _, sessions := range []int{4, 16, 64} {
				impls := map[string]func() []func(func()) error{
					"zk.Lock": func() []func(func()) error { return zkLocks(b, addrs, benchPath("zklock"), sessions) },
					"mutex": func() []func(func()) error {
						return queueLocks(b, addrs, benchPath("mutex"), sessions, mutexDriver)
					},
					"mutex-predecessor-only": func() []func(func()) error {
						return queueLocks(b, addrs, benchPath("predecessor"), sessions, predecessorDriver)
					},
				}
				for _, name := range []string{"zk.Lock", "curator", "mutex", "mutex-predecessor-only"} {
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
			for range opsPerRound {
				if err := ops[i](); err != nil {
					return 0, err
				}
			}
			return opsPerRound, nil
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
