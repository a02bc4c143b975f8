package mutex_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
	"github.com/zkrecipes/zkrecipes/mutex"
)

// BenchmarkRelay is the handoff with no lock engine: 16 raw go-zookeeper
// sessions in a chain, each watching the previous one's node and deleting
// its own as soon as that node goes (a holder with hold 0, as in
// contended-16). It reports the median and p90 hop in handoff floors over
// -benchtime chains, on each network: what go-zookeeper, the proxy and the
// server give a handoff, against which BenchmarkChain and SideBySide's
// handoff-p50/floor show the lock's own cost.
func BenchmarkRelay(b *testing.B) {
	hopBench(b, func(b *testing.B, addrs []string) func() ([]time.Duration, error) {
		conns := make([]*zk.Conn, 16)
		for i := range conns {
			conns[i] = rawConn(b, addrs)
		}
		return func() ([]time.Duration, error) { return relay(conns, benchPath("relay")) }
	})
}

// BenchmarkChain is BenchmarkRelay with this mutex: 16 sessions queue in
// order behind a holder; each releases as soon as it holds and does not
// queue again, so the lock's other requests of contended-16 (queueing
// again, listing) are absent.
func BenchmarkChain(b *testing.B) {
	hopBench(b, func(b *testing.B, addrs []string) func() ([]time.Duration, error) {
		path := benchPath("chain")
		ms := make([]*mutex.Mutex, 17) // ms[0] holds first
		for i := range ms {
			ms[i] = newMutex(b, connect(b, addrs), path)
		}
		conn := rawConn(b, addrs)
		return func() ([]time.Duration, error) { return chain(conn, path, ms) }
	})
}

// hopBench runs, on each network, one chain from the runner that newChain
// makes per -benchtime iteration, each after measuring the handoff floor,
// and reports the median and p90 hop in floors.
func hopBench(b *testing.B, newChain func(b *testing.B, addrs []string) func() ([]time.Duration, error)) {
	servers := sharedServers(b)
	for _, n := range networks {
		b.Run("net="+n.name, func(b *testing.B) {
			addrs := n.through(b, servers)
			fa, fw := rawConn(b, addrs), rawConn(b, addrs)
			ensure(b, fa, "/bench")
			run := newChain(b, addrs)
			var hops []float64
			for b.Loop() {
				floor, err := handoffFloor(fa, fw, 15)
				if err != nil {
					b.Fatal(err)
				}
				took, err := run()
				if err != nil {
					b.Fatal(err)
				}
				for _, d := range took {
					hops = append(hops, d.Seconds()/floor.Seconds())
				}
			}
			b.ReportMetric(lockbench.Median(hops), "hop-p50/floor")
			b.ReportMetric(lockbench.Quantile(hops, 0.9), "hop-p90/floor")
		})
	}
}

// chain runs one chain of ms at path (see BenchmarkChain), watching the
// queue through conn, and returns each hop's time, from one holder's start
// to the next one's.
func chain(conn *zk.Conn, path string, ms []*mutex.Mutex) ([]time.Duration, error) {
	ctx := context.Background()
	first, err := ms[0].Acquire(ctx)
	if err != nil {
		return nil, err
	}
	held := make([]time.Time, len(ms))
	errs := make(chan error, len(ms)-1)
	for i := 1; i < len(ms); i++ {
		go func() {
			le, err := ms[i].Acquire(ctx)
			if err == nil {
				held[i] = time.Now()
				err = le.Release(ctx)
			}
			errs <- err
		}()
		// Queued before the next one starts.
		for deadline := time.Now().Add(time.Minute); ; {
			kids, _, err := conn.Children(path)
			if err != nil {
				return nil, err
			}
			if len(kids) == i+1 {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("chain: %d of %d queued after a minute", len(kids)-1, i)
			}
		}
	}
	held[0] = time.Now()
	if err := first.Release(ctx); err != nil {
		return nil, err
	}
	return hopsOf(held, errs)
}

// relay runs one chain over conns (see BenchmarkRelay) and returns each
// hop's time, from one session's notice to the next one's.
func relay(conns []*zk.Conn, base string) ([]time.Duration, error) {
	paths := make([]string, len(conns))
	for i, c := range conns {
		paths[i] = fmt.Sprintf("%s-%d", base, i)
		if _, err := c.Create(paths[i], nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			return nil, err
		}
	}
	noticed := make([]time.Time, len(conns))
	errs := make(chan error, len(conns)-1)
	for i := 1; i < len(conns); i++ {
		_, _, ev, err := conns[i].ExistsW(paths[i-1])
		if err != nil {
			return nil, err
		}
		go func() {
			<-ev
			noticed[i] = time.Now()
			errs <- conns[i].Delete(paths[i], -1)
		}()
	}
	noticed[0] = time.Now()
	if err := conns[0].Delete(paths[0], -1); err != nil {
		return nil, err
	}
	return hopsOf(noticed, errs)
}

// hopsOf waits for a chain's links after the first (one error each, nil
// when it passed the lock on) and returns the times between the starts
// at.
func hopsOf(at []time.Time, errs <-chan error) ([]time.Duration, error) {
	for range len(at) - 1 {
		if err := <-errs; err != nil {
			return nil, err
		}
	}
	took := make([]time.Duration, 0, len(at)-1)
	for i := 1; i < len(at); i++ {
		took = append(took, at[i].Sub(at[i-1]))
	}
	return took, nil
}

// BenchmarkRelayLoaded is BenchmarkRelay with 1 ms toward the clients,
// while 16 other sessions keep listing a node (2 requests in flight each),
// and with the handoff floor measured under that traffic too: how much the
// floor itself moves with the server's and the proxy's load on this
// machine (a lock's round carries such traffic; SideBySide measures its
// floor between rounds, on a quiet server).
func BenchmarkRelayLoaded(b *testing.B) {
	servers := sharedServers(b)
	addrs := networks[1].through(b, servers)
	fa, fw := rawConn(b, addrs), rawConn(b, addrs)
	ensure(b, fa, "/bench")
	conns := make([]*zk.Conn, 16)
	loaders := make([]*zk.Conn, 16)
	for i := range conns {
		conns[i], loaders[i] = rawConn(b, addrs), rawConn(b, addrs)
	}
	for _, inFlight := range []int{0, 2} {
		b.Run(fmt.Sprintf("background-in-flight=%d", inFlight), func(b *testing.B) {
			var stop atomic.Bool
			var wg sync.WaitGroup
			var listed atomic.Int64
			for range inFlight {
				for _, c := range loaders {
					wg.Go(func() {
						for !stop.Load() {
							if _, _, err := c.Children("/bench"); err != nil {
								return
							}
							listed.Add(1)
						}
					})
				}
			}
			defer func() { stop.Store(true); wg.Wait() }()
			var hops []float64
			var floors []time.Duration
			start := time.Now()
			for b.Loop() {
				floor, err := handoffFloor(fa, fw, 15)
				if err != nil {
					b.Fatal(err)
				}
				floors = append(floors, floor)
				took, err := relay(conns, benchPath("relay-loaded"))
				if err != nil {
					b.Fatal(err)
				}
				for _, d := range took {
					hops = append(hops, d.Seconds()/floor.Seconds())
				}
			}
			b.ReportMetric(float64(lockbench.Median(floors).Microseconds()), "floor-µs")
			b.ReportMetric(float64(listed.Load())/time.Since(start).Seconds(), "background-req/s")
			b.ReportMetric(lockbench.Median(hops), "hop-p50/floor")
		})
	}
}
