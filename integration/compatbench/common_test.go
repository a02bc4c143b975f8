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
// rounds' ratios), and the commands Redis executed per operation (INFO
// commandstats around each block of the one client: it runs alone then).
func BenchmarkCompatCommonCase(b *testing.B) {
	addrs, admins := servers(b, 1)
	impls := []impl{floorImpl, bsmImpl(0), redsyncImpl("redsync", nil), redislockImpl}
	const ref = 1 // bsm/redislock: the ratios' denominator
	ctx := bounded(b, benchLimit)
	one := make([][]float64, len(impls))
	own := make([][]float64, len(impls))
	exec := make([]Counts, len(impls))
	for r := 0; b.Loop(); r++ {
		ones, execs, err := commonRound(ctx, impls, addrs, r, func(ctx context.Context, cs []client) (int, error) {
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
		owns, _, err := commonRound(ctx, impls, addrs, r, func(ctx context.Context, cs []client) (int, error) {
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
	fmt.Fprintf(&tab, "\n| impl | one client, one lock, ops/s | /%s | %d clients, own locks, acq/s | /%s | executed/op |\n|---|---|---|---|---|---|\n",
		impls[ref].name, contenders, impls[ref].name)
	for i, im := range impls {
		r1, r16 := ratios(one[i], one[ref]), ratios(own[i], own[ref])
		m1, m16 := lockbench.Median(one[i]), lockbench.Median(own[i])
		perOp := float64(exec[i].Total) / float64(rounds*commonOps)
		b.ReportMetric(m1, im.name+"-one-ops/s")
		b.ReportMetric(m16, im.name+"-own-acq/s")
		b.ReportMetric(perOp, im.name+"-exec/op")
		fmt.Fprintf(&tab, "| %s | %.0f | %.2f | %.0f | %.2f | %.2f |\n", im.name, m1, lockbench.Median(r1), m16, lockbench.Median(r16), perOp)
		fmt.Fprintf(&details, "%s: one client by round %s (/%s %s); own locks by round %s (/%s %s); executed per op: %s\n",
			im.name, fmtFloats(one[i]), impls[ref].name, fmtRatios(r1), fmtFloats(own[i]), impls[ref].name, fmtRatios(r16),
			Breakdown(exec[i], rounds*commonOps))
	}
	table(b, "%d rounds; one client: %d operations; %d clients on locks of their own: %d acquisitions; each in %d alternating blocks:%s%s",
		rounds, commonOps, contenders, commonAcq, commonSlices, tab.String(), details.String())
}

// commonRound opens n fresh clients of each implementation (client k on
// its own lock), warms them up with a block each, then runs commonSlices
// blocks of each, alternating, and returns each one's rate (operations
// over the sum of its blocks' times) and, when admins is not nil, what
// Redis executed during its blocks.
func commonRound(ctx context.Context, impls []impl, addrs []string, r int,
	block func(context.Context, []client) (int, error), n int, admins []*redis.Client) ([]float64, []Counts, error) {
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
			c, err := im.open(addrs, fmt.Sprintf("common-%s-%d", im.name, k), NewCounter())
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", im.name, err)
			}
			clients[i][k] = c
		}
		if _, err := block(ctx, clients[i]); err != nil { // connections, scripts loaded, the locks' first grants
			return nil, nil, fmt.Errorf("%s: warming up: %w", im.name, err)
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
					return nil, nil, err
				}
			}
			start := time.Now()
			done, err := block(ctx, clients[i])
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", impls[i].name, err)
			}
			took[i] += time.Since(start)
			ops[i] += done
			if admins != nil {
				e1, err := CommandStats(ctx, admins...)
				if err != nil {
					return nil, nil, err
				}
				exec[i] = exec[i].Add(e1.Sub(e0))
			}
		}
	}
	rates := make([]float64, len(impls))
	for i := range impls {
		rates[i] = float64(ops[i]) / took[i].Seconds()
	}
	return rates, exec, nil
}

// ratios is xs[k]/ys[k], round by round.
func ratios(xs, ys []float64) []float64 {
	r := make([]float64, len(xs))
	for k := range xs {
		r[k] = xs[k] / ys[k]
	}
	return r
}

func fmtRatios(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, " ")
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
