package compatbench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
)

// The common case (issue 34): a lock nobody else wants. Two shapes, as
// rates: one client taking and releasing one lock, back to back; and 16
// clients (each with connections of its own) each taking and releasing a
// lock of its own. BenchmarkCompatUncontended times single operations
// instead; this is the method, rates and their medians over
// rounds. On a shared machine the load changes within a second, so a
// round alternates the implementations in commonSlices short blocks each
// (in a rotating order) and sums each one's blocks: a burst of load falls
// on all of them alike.

// Sizes of a round of the common case.
const (
	commonSlices = 10
	commonOps    = 2000 // operations of the one client on one lock
	commonAcq    = 8000 // acquisitions of the 16 clients on locks of their own
)

// BenchmarkCompatCommonCase: each iteration is one round. Reported for
// each implementation: the median over rounds of the one client's
// operations per second and of the 16 clients' acquisitions per second,
// each round's figures, their ratio to bsm/redislock's (median of the
// rounds' ratios), the commands Redis executed per operation (INFO
// commandstats around each block of the one client: it runs alone then)
// and the server's CPU time per operation in those blocks (INFO cpu).
func BenchmarkCompatCommonCase(b *testing.B) {
	addrs, admins := servers(b, 1)
	impls := []impl{floorImpl, bsmImpl(0), redsyncImpl("redsync", nil), redislockImpl}
	const ref = 1 // bsm/redislock: the ratios' denominator
	ctx := bounded(b, benchLimit)
	one := make([][]float64, len(impls))
	own := make([][]float64, len(impls))
	exec := make([]Counts, len(impls))
	for r := 0; b.Loop(); r++ {
		ones, execs, _, err := commonRound(ctx, impls, addrs, r, false, func(ctx context.Context, cs []client) (int, error) {
			for range commonOps / commonSlices {
				if err := once(ctx, cs[0]); err != nil {
					return 0, err
				}
			}
			return commonOps / commonSlices, nil
		}, 1, admins)
		if err != nil {
			b.Fatalf("one client: %v", err)
		}
		owns, _, _, err := commonRound(ctx, impls, addrs, r, false, func(ctx context.Context, cs []client) (int, error) {
			res, err := contend(ctx, cs, commonAcq/commonSlices, workload{})
			return res.acq, err
		}, contenders, nil)
		if err != nil {
			b.Fatalf("own locks: %v", err)
		}
		for i := range impls {
			one[i], own[i], exec[i] = append(one[i], ones[i]), append(own[i], owns[i]), exec[i].Add(execs[i])
		}
	}
	b.StopTimer()
	rounds := len(one[0])
	var tab, details strings.Builder
	fmt.Fprintf(&tab, "\n| impl | one client, one lock, ops/s | /%s | %d clients, own locks, acq/s | /%s | executed/op | server CPU µs/op |\n|---|---|---|---|---|---|---|\n",
		impls[ref].name, contenders, impls[ref].name)
	for i, im := range impls {
		r1, r16 := ratios(one[i], one[ref]), ratios(own[i], own[ref])
		m1, m16 := lockbench.Median(one[i]), lockbench.Median(own[i])
		perOp := float64(exec[i].Total) / float64(rounds*commonOps)
		b.ReportMetric(m1, im.name+"-one-ops/s")
		b.ReportMetric(m16, im.name+"-own-acq/s")
		cpu := float64(exec[i].CPU.Microseconds()) / float64(rounds*commonOps)
		b.ReportMetric(perOp, im.name+"-exec/op")
		b.ReportMetric(cpu, im.name+"-server-µs/op")
		fmt.Fprintf(&tab, "| %s | %.0f | %.2f | %.0f | %.2f | %.2f | %.1f |\n", im.name, m1, lockbench.Median(r1), m16, lockbench.Median(r16), perOp, cpu)
		fmt.Fprintf(&details, "%s: one client by round %s (/%s %s); own locks by round %s (/%s %s); executed per op: %s\n",
			im.name, fmtFloats(one[i]), impls[ref].name, fmtFloats(r1, "%.2f"), fmtFloats(own[i]), impls[ref].name, fmtFloats(r16, "%.2f"),
			Breakdown(exec[i], rounds*commonOps))
	}
	table(b, "%d rounds; one client: %d operations; %d clients on locks of their own: %d acquisitions; each in %d alternating blocks:%s%s",
		rounds, commonOps, contenders, commonAcq, commonSlices, tab.String(), details.String())
}

// commonRound opens n fresh clients of each implementation (client k on
// its own lock, or all on one when one is set), warms them up with a
// block each, then runs commonSlices blocks of each, alternating, and
// returns each one's rate (operations over the sum of its blocks' times),
// when admins is not nil what Redis executed during its blocks, and its
// fairness (fewest over most acquisitions of one client, over the round).
func commonRound(ctx context.Context, impls []impl, addrs []string, r int, one bool,
	block func(context.Context, []client) (int, error), n int, admins []*redis.Client) ([]float64, []Counts, []float64, error) {
	clients := make([][]client, len(impls))
	defer func() {
		for _, cs := range clients {
			for _, c := range cs {
				if c != nil {
					_ = c.close()
				}
			}
		}
	}()
	for i, im := range impls {
		clients[i] = make([]client, n)
		for k := range clients[i] {
			name := fmt.Sprintf("common-%s-%d", im.name, k)
			if one {
				name = "common-" + im.name
			}
			c, err := im.open(addrs, name, NewCounter())
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%s: %w", im.name, err)
			}
			clients[i][k] = &countedClient{client: c}
		}
		if _, err := block(ctx, clients[i]); err != nil { // connections, scripts loaded, the locks' first grants
			return nil, nil, nil, fmt.Errorf("%s: warming up: %w", im.name, err)
		}
		for _, c := range clients[i] {
			c.(*countedClient).n.Store(0)
		}
	}
	ops := make([]int, len(impls))
	took := make([]time.Duration, len(impls))
	exec := make([]Counts, len(impls))
	for s := range commonSlices {
		for k := range impls {
			i := (r + s + k) % len(impls)
			var e0 Counts
			if admins != nil {
				var err error
				if e0, err = CommandStats(ctx, admins...); err != nil {
					return nil, nil, nil, err
				}
			}
			start := time.Now()
			done, err := block(ctx, clients[i])
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%s: %w", impls[i].name, err)
			}
			took[i] += time.Since(start)
			ops[i] += done
			if admins != nil {
				e1, err := CommandStats(ctx, admins...)
				if err != nil {
					return nil, nil, nil, err
				}
				exec[i] = exec[i].Add(Executed(e0, e1, len(admins)))
			}
		}
	}
	rates := make([]float64, len(impls))
	fair := make([]float64, len(impls))
	for i := range impls {
		rates[i] = float64(ops[i]) / took[i].Seconds()
		fair[i] = fairness(clients[i])
	}
	return rates, exec, fair, nil
}

// countedClient counts its client's acquisitions.
type countedClient struct {
	client
	n atomic.Int64
}

func (c *countedClient) lock(ctx context.Context) (func(context.Context) error, error) {
	release, err := c.client.lock(ctx)
	if err == nil {
		c.n.Add(1)
	}
	return release, err
}

// fairness is the fewest over the most acquisitions of one of cs
// (countedClients).
func fairness(cs []client) float64 {
	lo, hi := int64(-1), int64(0)
	for _, c := range cs {
		n := c.(*countedClient).n.Load()
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	if hi == 0 {
		return 0
	}
	return float64(lo) / float64(hi)
}

// BenchmarkCompatContendedCommon is BenchmarkCompatContended (16 clients
// on one lock, hold 0, think 0) by BenchmarkCompatCommonCase's method:
// each iteration a round of commonAcq acquisitions of each
// implementation, in commonSlices alternating blocks; reported: the
// medians over rounds of the rate, its ratio to bsm/redislock's, the
// commands executed per acquisition and the fairness over the round.
func BenchmarkCompatContendedCommon(b *testing.B) {
	addrs, admins := servers(b, 1)
	impls := []impl{bsmImpl(time.Millisecond), redislockImpl}
	ctx := bounded(b, benchLimit)
	rates := make([][]float64, len(impls))
	fair := make([][]float64, len(impls))
	exec := make([]Counts, len(impls))
	for r := 0; b.Loop(); r++ {
		rs, ex, fs, err := commonRound(ctx, impls, addrs, r, true, func(ctx context.Context, cs []client) (int, error) {
			res, err := contend(ctx, cs, commonAcq/commonSlices, workload{})
			return res.acq, err
		}, contenders, admins)
		if err != nil {
			b.Fatal(err)
		}
		for i := range impls {
			rates[i], fair[i], exec[i] = append(rates[i], rs[i]), append(fair[i], fs[i]), exec[i].Add(ex[i])
		}
	}
	b.StopTimer()
	rounds := len(rates[0])
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n| impl | acq/s | /%s | executed/acq | fairness |\n|---|---|---|---|---|\n", impls[0].name)
	for i, im := range impls {
		perAcq := float64(exec[i].Total) / float64(rounds*commonAcq)
		fmt.Fprintf(&tab, "| %s | %.0f | %.2f | %.2f | %.2f |\n", im.name, lockbench.Median(rates[i]),
			lockbench.Median(ratios(rates[i], rates[0])), perAcq, lockbench.Median(fair[i]))
		b.ReportMetric(lockbench.Median(rates[i]), im.name+"-acq/s")
		b.ReportMetric(perAcq, im.name+"-exec/acq")
		b.ReportMetric(lockbench.Median(fair[i]), im.name+"-fair")
	}
	for i, im := range impls {
		fmt.Fprintf(&tab, "%s: acq/s by round %s (/%s %s); fairness by round %s; executed per acq: %s\n", im.name,
			fmtFloats(rates[i]), impls[0].name, fmtFloats(ratios(rates[i], rates[0]), "%.2f"), fmtFloats(fair[i], "%.2f"), Breakdown(exec[i], rounds*commonAcq))
	}
	table(b, "%d rounds; %d clients on one lock, hold 0, think 0: %d acquisitions of each in %d alternating blocks:%s",
		rounds, contenders, commonAcq, commonSlices, tab.String())
}

// ratios is xs[k]/ys[k], round by round.
func ratios(xs, ys []float64) []float64 {
	r := make([]float64, len(xs))
	for k := range xs {
		r[k] = xs[k] / ys[k]
	}
	return r
}

// sharedImpl is im with every contender on one client of im (one
// connection pool, and for redislock one Client and one subscription), as
// goroutines of one process would share it: contendRound opens the
// contenders, the first opens the client and the last to close closes it.
func sharedImpl(im impl) impl {
	var (
		mu   sync.Mutex
		c    client
		refs int
	)
	return impl{name: im.name + "-shared", open: func(addrs []string, name string, ctr *Counter) (client, error) {
		mu.Lock()
		defer mu.Unlock()
		if c == nil {
			var err error
			if c, err = im.open(addrs, name, ctr); err != nil {
				c = nil
				return nil, err
			}
		}
		refs++
		return &sharedClient{c: c, done: func() error {
			mu.Lock()
			defer mu.Unlock()
			if refs--; refs > 0 {
				return nil
			}
			err := c.close()
			c = nil
			return err
		}}, nil
	}}
}

// sharedClient is one contender's view of a shared client.
type sharedClient struct {
	c    client
	done func() error
	once sync.Once
}

func (s *sharedClient) lock(ctx context.Context) (func(context.Context) error, error) {
	return s.c.lock(ctx)
}

func (s *sharedClient) close() error {
	var err error
	s.once.Do(func() { err = s.done() })
	return err
}

// BenchmarkCompatContendedShared is BenchmarkCompatContended (hold 0,
// think 0) with the 16 contenders of each implementation sharing one
// client (one connection pool), beside the same with a client each: the
// two ways a benchmark can run 16 contenders, which give different
// ratios (docs/benchmarks-compat.md).
func BenchmarkCompatContendedShared(b *testing.B) {
	addrs, admins := servers(b, 1)
	var gaveUp atomic.Int64 // redsync's; none here
	contended(b, arena{addrs: addrs, admins: admins}, workload{}, &gaveUp, []impl{
		redislockImpl, bsmImpl(time.Millisecond), sharedImpl(redislockImpl), sharedImpl(bsmImpl(time.Millisecond))})
}
