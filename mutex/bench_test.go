package mutex_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/google/uuid"
	"github.com/zkrecipes/zkrecipes/integration"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Benchmarks, side by side on one server in one run (run with -count to
// alternate them): this mutex, the floor (the requests a lock cannot avoid,
// straight on go-zookeeper: create, get children, delete) and go-zookeeper's
// own zk.Lock. See docs/benchmarks.md for the command and the results.

// rawConn is a go-zookeeper connection for the floor and zk.Lock.
func rawConn(b *testing.B, servers []string) *zk.Conn {
	b.Helper()
	conn, events, err := zk.Connect(servers, 15*time.Second, zk.WithLogInfo(false), zk.WithLogger(discard{}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(conn.Close)
	deadline := time.After(waitLimit)
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline:
			b.Fatal("no session")
		}
	}
	return conn
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// floor is one uncontended acquire+release with nothing but the requests a
// queue lock needs: create our node, list the queue, delete our node.
func floor(conn *zk.Conn, path string) error {
	node, err := conn.Create(path+"/_c_"+uuid.NewString()+"-lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
	if err != nil {
		return err
	}
	if _, _, err := conn.Children(path); err != nil {
		return err
	}
	return conn.Delete(node, -1)
}

func ensure(b *testing.B, conn *zk.Conn, path string) {
	b.Helper()
	if _, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
		b.Fatal(err)
	}
}

var benchSeq atomic.Int64

func benchPath(kind string) string {
	return fmt.Sprintf("/bench/%s-%d-%d", kind, time.Now().UnixNano(), benchSeq.Add(1))
}

func BenchmarkUncontended(b *testing.B) {
	servers := sharedServers(b)
	ctx := context.Background()
	b.Run("impl=floor", func(b *testing.B) {
		conn := rawConn(b, servers)
		path := benchPath("floor")
		ensure(b, conn, "/bench")
		ensure(b, conn, path)
		b.ReportAllocs()
		for b.Loop() {
			if err := floor(conn, path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=mutex", func(b *testing.B) {
		m := newMutex(b, connect(b, servers), benchPath("mutex"))
		b.ReportAllocs()
		for b.Loop() {
			l, err := m.Acquire(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=zk.Lock", func(b *testing.B) {
		conn := rawConn(b, servers)
		l := zk.NewLock(conn, benchPath("zklock"), zk.WorldACL(zk.PermAll))
		b.ReportAllocs()
		for b.Loop() {
			if err := l.Lock(); err != nil {
				b.Fatal(err)
			}
			if err := l.Unlock(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// lockFunc takes and gives back one lock.
type lockFunc func() error

// contend runs b.N acquisitions split over the lock functions (one per
// session), reports acquisitions per second and the server's requests per
// acquisition (mntr's zk_packets_received).
func contend(b *testing.B, server string, locks []lockFunc) {
	b.Helper()
	before := packets(b, server)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(locks))
	b.ResetTimer()
	start := time.Now()
	for _, lock := range locks {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := lock(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "acq/s")
	b.ReportMetric(float64(packets(b, server)-before)/float64(b.N), "requests/acq")
}

func packets(b *testing.B, server string) int64 {
	b.Helper()
	m, err := integration.Mntr(server)
	if err != nil {
		b.Fatal(err)
	}
	n, err := strconv.ParseInt(m["zk_packets_received"], 10, 64)
	if err != nil {
		b.Fatalf("mntr zk_packets_received %q: %v", m["zk_packets_received"], err)
	}
	return n
}

// noFastHandoff is the mutex's driver with the fast handoff turned off: a
// waiter lists the queue again after every wake-up, as Curator does.
type noFastHandoff struct{ recipes.LeaseDriver }

func (d noFastHandoff) Decide(kids []recipes.Child, ours int) (recipes.Decision, error) {
	dec, err := d.LeaseDriver.Decide(kids, ours)
	dec.FastHandoff, dec.Refresh = false, ""
	return dec, err
}

// noRefresh keeps the fast handoff but does not watch the node two ahead:
// a waiter lists again on the critical path unless its predecessor was the
// head when it last listed.
type noRefresh struct{ recipes.LeaseDriver }

func (d noRefresh) Decide(kids []recipes.Child, ours int) (recipes.Decision, error) {
	dec, err := d.LeaseDriver.Decide(kids, ours)
	dec.Refresh = ""
	return dec, err
}

func queueLockFuncs(b *testing.B, servers []string, path string, n int, driver recipes.Driver) []lockFunc {
	ctx := context.Background()
	locks := make([]lockFunc, n)
	for i := range locks {
		ql, err := recipes.NewQueueLock(connect(b, servers), path, "lock-", []string{"lock-"}, driver, nil)
		if err != nil {
			b.Fatal(err)
		}
		locks[i] = func() error {
			l, err := ql.Acquire(ctx)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}
	}
	return locks
}

func zkLockFuncs(b *testing.B, servers []string, path string, n int) []lockFunc {
	locks := make([]lockFunc, n)
	for i := range locks {
		l := zk.NewLock(rawConn(b, servers), path, zk.WorldACL(zk.PermAll))
		locks[i] = func() error {
			if err := l.Lock(); err != nil {
				return err
			}
			return l.Unlock()
		}
	}
	return locks
}

// BenchmarkContended: sessions contend for one lock; acq/s is the
// throughput of the queue, requests/acq what each acquisition costs the
// server. A predecessor-watch lock stays flat as sessions grow.
func BenchmarkContended(b *testing.B) {
	servers := sharedServers(b)
	for _, n := range []int{4, 16, 64} {
		b.Run(fmt.Sprintf("sessions=%d/impl=mutex", n), func(b *testing.B) {
			contend(b, servers[0], queueLockFuncs(b, servers, benchPath("mutex"), n, recipes.LeaseDriver{Leases: 1, Kind: mutex.LockName}))
		})
		b.Run(fmt.Sprintf("sessions=%d/impl=mutex-no-fast-handoff", n), func(b *testing.B) {
			contend(b, servers[0], queueLockFuncs(b, servers, benchPath("nofast"), n, noFastHandoff{recipes.LeaseDriver{Leases: 1, Kind: mutex.LockName}}))
		})
		b.Run(fmt.Sprintf("sessions=%d/impl=zk.Lock", n), func(b *testing.B) {
			contend(b, servers[0], zkLockFuncs(b, servers, benchPath("zklock"), n))
		})
	}
}

// sideBySide alternates the implementations round by round in one run (the
// machine's noise hits them alike) and reports each one's median seconds per
// operation, and the ratios to the first (the baseline), as metrics.
func sideBySide(b *testing.B, names []string, round func(impl int) (ops int, err error)) {
	b.Helper()
	perOp := make([][]float64, len(names))
	for b.Loop() {
		for i := range names {
			start := time.Now()
			ops, err := round(i)
			if err != nil {
				b.Fatal(err)
			}
			perOp[i] = append(perOp[i], time.Since(start).Seconds()/float64(ops))
		}
	}
	base := median(perOp[0])
	for i, name := range names {
		m := median(perOp[i])
		b.ReportMetric(m*1e6, name+"-µs/op")
		if i > 0 {
			b.ReportMetric(m/base, name+"/"+names[0])
		}
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// BenchmarkSideBySide is the comparison docs/benchmarks.md quotes: run it
// with -benchtime=Nx for N alternating rounds.
func BenchmarkSideBySide(b *testing.B) {
	servers := sharedServers(b)
	ctx := context.Background()
	b.Run("uncontended", func(b *testing.B) {
		const opsPerRound = 50
		conn := rawConn(b, servers)
		ensure(b, conn, "/bench")
		floorPath := benchPath("floor")
		ensure(b, conn, floorPath)
		m := newMutex(b, connect(b, servers), benchPath("mutex"))
		zl := zk.NewLock(rawConn(b, servers), benchPath("zklock"), zk.WorldACL(zk.PermAll))
		impls := []func() error{
			func() error { return floor(conn, floorPath) },
			func() error {
				l, err := m.Acquire(ctx)
				if err != nil {
					return err
				}
				return l.Release(ctx)
			},
			func() error {
				if err := zl.Lock(); err != nil {
					return err
				}
				return zl.Unlock()
			},
		}
		sideBySide(b, []string{"floor", "mutex", "zk.Lock"}, func(i int) (int, error) {
			for range opsPerRound {
				if err := impls[i](); err != nil {
					return 0, err
				}
			}
			return opsPerRound, nil
		})
	})
	b.Run("contended-16", func(b *testing.B) {
		const sessions, acqPerRound = 16, 160
		impls := [][]lockFunc{
			zkLockFuncs(b, servers, benchPath("zklock"), sessions),
			queueLockFuncs(b, servers, benchPath("mutex"), sessions, recipes.LeaseDriver{Leases: 1, Kind: mutex.LockName}),
			queueLockFuncs(b, servers, benchPath("norefresh"), sessions, noRefresh{recipes.LeaseDriver{Leases: 1, Kind: mutex.LockName}}),
			queueLockFuncs(b, servers, benchPath("nofast"), sessions, noFastHandoff{recipes.LeaseDriver{Leases: 1, Kind: mutex.LockName}}),
		}
		sideBySide(b, []string{"zk.Lock", "mutex", "mutex-no-refresh", "mutex-no-fast-handoff"}, func(i int) (int, error) {
			return acqPerRound, runContention(impls[i], acqPerRound)
		})
	})
}

// runContention makes n acquisitions with every lock function contending.
func runContention(locks []lockFunc, n int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(locks))
	for _, lock := range locks {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := lock(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
