package compatbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Benchmarks of the compat Redis locks against their Go peers, side by side
// on the same local redis-server(s) in one run (issue 10).
// docs/benchmarks.md has the commands and the results.

// benchLimit bounds each benchmark's work: every context is under it.
const benchLimit = 20 * time.Minute

// bounded is a context that ends after d or at b's cleanup.
func bounded(b *testing.B, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	b.Cleanup(cancel)
	return ctx
}

// servers starts n local redis servers and returns their addresses and an
// admin client of each (for INFO; not counted).
func servers(b *testing.B, n int) ([]string, []*redis.Client) {
	b.Helper()
	rs := harness.StartRedisN(b, n)
	addrs := make([]string, n)
	admins := make([]*redis.Client, n)
	for i, r := range rs {
		addrs[i] = r.Addr()
		admins[i] = redis.NewClient(&redis.Options{Addr: r.Addr()})
		b.Cleanup(func() { _ = admins[i].Close() })
	}
	matured(b, admins)
	return addrs, admins
}

// matured waits (a bounded loop) until every server's LASTSAVE (its start:
// the harness's servers never save) is a second and benchTTL behind its
// clock. Before that a young server is quiet for redislock and redlock
// (a restart less than a TTL ago may have forgotten a holder), and
// redislock takes even a lock released in this run through its full
// path, with INFO: a benchmark would time what only a server's first
// seconds cost.
func matured(b *testing.B, admins []*redis.Client) {
	b.Helper()
	ctx := context.Background()
	for _, a := range admins {
		for try := 0; ; try++ {
			last, err := a.LastSave(ctx).Result()
			if err != nil {
				b.Fatalf("LASTSAVE: %v", err)
			}
			now, err := a.Time(ctx).Result()
			if err != nil {
				b.Fatalf("TIME: %v", err)
			}
			left := time.Unix(last+1, 0).Add(benchTTL).Sub(now)
			if left <= 0 {
				break
			}
			if try == 10 {
				b.Fatalf("the server at %s stayed young: LASTSAVE %d, clock %v", a.Options().Addr, last, now)
			}
			time.Sleep(left + 50*time.Millisecond)
		}
	}
}

// table prints a benchmark's table to the standard output (b.Log's output
// is cut to ten lines for benchmarks).
func table(b *testing.B, format string, args ...any) {
	fmt.Printf("=== %s: %s\n", b.Name(), fmt.Sprintf(format, args...))
}

// open opens a client of im, closed at b's cleanup.
func open(b *testing.B, im impl, addrs []string, name string, ctr *Counter) client {
	b.Helper()
	c, err := im.open(addrs, name, ctr)
	if err != nil {
		b.Fatalf("%s: %v", im.name, err)
	}
	b.Cleanup(func() { _ = c.close() })
	return c
}

// once takes and releases the lock once.
func once(ctx context.Context, c client) error {
	release, err := c.lock(ctx)
	if err != nil {
		return err
	}
	return release(ctx)
}

// BenchmarkCompatUncontended: acquire+release with no contention on one
// Redis. Each iteration makes 50 operations of each implementation, in
// blocks of one implementation, the blocks in a random order. It reports
// each one's median operation in µs and its ratio to the floor's, the same
// for the mean, the mean CPU time of this process per operation (read
// around each operation, so that a burst of load on the machine falls on
// every implementation alike), and then, from a pass of countingOps
// operations of each alone, the commands each sends and Redis executes,
// and Redis's CPU, per operation.
func BenchmarkCompatUncontended(b *testing.B) {
	addrs, admins := servers(b, 1)
	uncontended(b, addrs, admins, []impl{floorImpl, redislockImpl, bsmImpl(0), redsyncImpl("redsync", nil), rueidislockImpl(0)})
}

// BenchmarkCompatRedlockUncontended is BenchmarkCompatUncontended over
// three servers: the floor's SET NX and compare-and-delete sent to all
// three at once, this repository's redlock, and redsync.
func BenchmarkCompatRedlockUncontended(b *testing.B) {
	addrs, admins := servers(b, 3)
	uncontended(b, addrs, admins, []impl{floor3Impl, redlockImpl, redsyncImpl("redsync3", nil)})
}

// perIteration is how many operations of each implementation one
// iteration of an uncontended benchmark makes.
const perIteration = 50

// countingOps is how many operations of each implementation the counting
// pass makes, each implementation alone.
const countingOps = 1000

func uncontended(b *testing.B, addrs []string, admins []*redis.Client, impls []impl) {
	ctx := bounded(b, benchLimit)
	clients := make([]client, len(impls))
	ctrs := make([]*Counter, len(impls))
	for i, im := range impls {
		ctrs[i] = NewCounter()
		clients[i] = open(b, im, addrs, "uncontended-"+im.name, ctrs[i])
		for range 20 { // connections, scripts loaded
			if err := once(ctx, clients[i]); err != nil {
				b.Fatalf("%s: %v", im.name, err)
			}
		}
	}
	took := make([][]float64, len(impls))
	clientCPU := make([]time.Duration, len(impls))
	for b.Loop() {
		// Each implementation's operations back to back, the blocks in a
		// random order: an operation that follows another implementation's
		// is up to a fifth slower (after rueidislock's the most), so
		// alternating operation by operation measures the neighbours too.
		for _, i := range rand.Perm(len(impls)) {
			for range perIteration {
				c0 := processCPU(b)
				start := time.Now()
				if err := once(ctx, clients[i]); err != nil {
					b.Fatalf("%s: %v", impls[i].name, err)
				}
				took[i] = append(took[i], time.Since(start).Seconds())
				clientCPU[i] += processCPU(b) - c0
			}
		}
	}
	b.StopTimer()
	// The counting pass: each alone, so that INFO commandstats is its own.
	sent := make([]Counts, len(impls))
	exec := make([]Counts, len(impls))
	for i, im := range impls {
		s0 := ctrs[i].Snapshot()
		e0, err := CommandStats(ctx, admins...)
		if err != nil {
			b.Fatal(err)
		}
		for range countingOps {
			if err := once(ctx, clients[i]); err != nil {
				b.Fatalf("%s: %v", im.name, err)
			}
		}
		e1, err := CommandStats(ctx, admins...)
		if err != nil {
			b.Fatal(err)
		}
		sent[i], exec[i] = ctrs[i].Snapshot().Sub(s0), Executed(e0, e1, len(admins))
	}
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n| impl | median µs/op | /%s | mean µs/op | /%s | sent/op | executed/op | client CPU µs/op | server CPU µs/op |\n|---|---|---|---|---|---|---|---|---|\n",
		impls[0].name, impls[0].name)
	med0, mean0 := lockbench.Median(took[0]), Mean(took[0])
	for i, im := range impls {
		med, mean := lockbench.Median(took[i]), Mean(took[i])
		b.ReportMetric(med*1e6, im.name+"-µs/op")
		b.ReportMetric(mean*1e6, "mean-"+im.name+"-µs/op")
		if i > 0 {
			b.ReportMetric(med/med0, im.name+"/"+impls[0].name)
			b.ReportMetric(mean/mean0, "mean-"+im.name+"/"+impls[0].name)
		}
		b.ReportMetric(float64(sent[i].Total)/countingOps, im.name+"-sent/op")
		b.ReportMetric(float64(exec[i].Total)/countingOps, im.name+"-exec/op")
		ops := float64(len(took[i]))
		b.ReportMetric(float64(clientCPU[i].Microseconds())/ops, im.name+"-clientcpu-µs/op")
		b.ReportMetric(float64(exec[i].CPU.Microseconds())/countingOps, im.name+"-servercpu-µs/op")
		fmt.Fprintf(&tab, "| %s | %.1f | %.3f | %.1f | %.3f | %.2f | %.2f | %.1f | %.1f |\n", im.name, med*1e6, med/med0, mean*1e6, mean/mean0,
			float64(sent[i].Total)/countingOps, float64(exec[i].Total)/countingOps,
			float64(clientCPU[i].Microseconds())/ops, float64(exec[i].CPU.Microseconds())/countingOps)
	}
	for i, im := range impls {
		fmt.Fprintf(&tab, "%s: sent per op: %s; executed per op: %s\n", im.name,
			Breakdown(sent[i], countingOps), Breakdown(exec[i], countingOps))
	}
	table(b, "%d operations of each:%s", len(took[0]), tab.String())
}

// processCPU is the CPU time this process has used (user and system).
func processCPU(b *testing.B) time.Duration {
	d, err := cpuTime()
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func cpuTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// Contention: 16 clients, each with its own connections (as 16 processes
// would have), loop on one lock: acquire, hold, release, think.

// contenders is how many clients contend.
const contenders = 16

// roundAcq is how many acquisitions one round of one implementation
// makes; warmAcq how many it makes before, unmeasured (connections,
// scripts, subscriptions).
const (
	roundAcq = 500
	warmAcq  = 2 * contenders
)
