package sqlbench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
)

// Contention: 16 clients, each with its own *sql.DB (as 16 processes
// would have), loop on one lock: acquire, release at once (hold 0),
// acquire again.

const (
	// contenders is how many clients contend.
	contenders = 16
	// roundFor is how long one round of one implementation lasts: no
	// client starts a new wait after it (the waits under way end, with
	// hold 0 at once). roundMaxAcq bounds the acquisitions of a round too.
	roundFor    = 3 * time.Second
	roundMaxAcq = 1_000_000
	// warmAcq is how many acquisitions the clients make before the first
	// round, unmeasured (connections, cached statements).
	warmAcq = 2 * contenders
	// roundLimit bounds one round.
	roundLimit = 2 * time.Minute
)

// BenchmarkSQLContended: 16 clients on one lock, hold 0, on PostgreSQL
// and on MariaDB. The clients of every implementation are opened and
// warmed up first; then lockbench.SideBySide runs one round of roundFor
// of each implementation per iteration, in a rotating order, and reports
// each one's median µs per acquisition. The table gives, per
// implementation: acquisitions per second (median over rounds), the p50,
// p99 and largest wait (from calling lock to holding, all rounds'
// acquisitions), the fairness (fewest over most acquisitions of one
// client in a round: median over rounds, and the worst round), the
// statements a client sent per lock call (the one that took the lock
// included), and the statements sent while waiting per waiter-second
// (the statements sent inside lock calls over the time spent in them: a
// waiter that blocks in the server sends one per wait, a poller one per
// attempt), and of those the retries: the statements beyond the first of
// each lock call, per waiter-second (0 for a waiter that blocks in the
// server; a lock whose every acquisition takes more than one statement
// shows the rest here too).
func BenchmarkSQLContended(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			s := startServer(b, kind)
			contended(b, s, implsFor(kind))
		})
	}
}

// round is one measured round of one implementation.
type round struct {
	acq       int
	elapsed   time.Duration
	waits     []time.Duration
	waiting   time.Duration // the sum of waits
	sent      int64         // statements sent inside lock calls
	perClient []int
}

func (r round) fairness() float64 {
	return float64(slices.Min(r.perClient)) / float64(slices.Max(r.perClient))
}

// contenderSet is the clients of one implementation, with the counters of
// what each sends.
type contenderSet struct {
	clients []client
	sent    []*atomic.Int64
}

func contended(b *testing.B, s *server, impls []impl) {
	ctx := bounded(b, benchLimit)
	sets := make([]contenderSet, len(impls))
	for i, im := range impls {
		for range contenders {
			ctr := new(atomic.Int64)
			sets[i].sent = append(sets[i].sent, ctr)
			sets[i].clients = append(sets[i].clients, open(ctx, b, im, s.dsn, "contended-"+im.name, ctr))
		}
		if _, err := contend(ctx, sets[i], warmAcq, roundLimit); err != nil {
			b.Fatalf("%s: warming up: %v", im.name, err)
		}
	}
	d0 := seedDeadlocks.Load()
	rounds := make([][]round, len(impls))
	lockbench.SideBySide(b, names(impls), func(i int) (int, error) {
		r, err := contend(ctx, sets[i], roundMaxAcq, roundFor)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", impls[i].name, err)
		}
		rounds[i] = append(rounds[i], r)
		return r.acq, nil
	})
	b.StopTimer()
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n| impl | acq/s | p50 wait ms | p99 wait ms | max wait ms | fairness | worst round | statements/lock call | statements/waiter-s while waiting | of which retries/waiter-s |\n|---|---|---|---|---|---|---|---|---|---|\n")
	var details strings.Builder
	for i, im := range impls {
		var perSec, fair []float64
		var waits []time.Duration
		var waiting time.Duration
		var sent int64
		acq := 0
		for _, r := range rounds[i] {
			perSec = append(perSec, float64(r.acq)/r.elapsed.Seconds())
			fair = append(fair, r.fairness())
			waits = append(waits, r.waits...)
			waiting += r.waiting
			sent += r.sent
			acq += r.acq
		}
		p50, p99, pmax := lockbench.Quantile(waits, 0.5), lockbench.Quantile(waits, 0.99), slices.Max(waits)
		perCall, perWaiterSec := float64(sent)/float64(acq), float64(sent)/waiting.Seconds()
		retriesPerWaiterSec := float64(sent-int64(acq)) / waiting.Seconds()
		b.ReportMetric(lockbench.Median(perSec), im.name+"-acq/s")
		b.ReportMetric(ms(p99), im.name+"-p99-ms")
		b.ReportMetric(lockbench.Median(fair), im.name+"-fair")
		b.ReportMetric(perWaiterSec, im.name+"-stmts/waiter-s")
		b.ReportMetric(retriesPerWaiterSec, im.name+"-retries/waiter-s")
		fmt.Fprintf(&tab, "| %s | %.0f | %.2f | %.2f | %.1f | %.2f | %.2f | %.2f | %.0f | %.0f |\n", im.name,
			lockbench.Median(perSec), ms(p50), ms(p99), ms(pmax), lockbench.Median(fair), slices.Min(fair),
			perCall, perWaiterSec, retriesPerWaiterSec)
		fmt.Fprintf(&details, "%s: acq/s by round %s; acquisitions per client in the last round %v\n",
			im.name, fmtFloats(perSec), rounds[i][len(rounds[i])-1].perClient)
	}
	if d := seedDeadlocks.Load() - d0; d > 0 {
		fmt.Fprintf(&details, "the seed recipe retried %d MySQL deadlock errors (1213)\n", d)
	}
	table(b, "%s, %d clients, hold 0, %d rounds of %v each:%s%s", s.kind, contenders, len(rounds[0]), roundFor, tab.String(), details.String())
}

func fmtFloats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, " ")
}

// contend runs every client of set in a loop on the lock, hold 0, until
// maxAcq acquisitions have started or the time is up: no wait starts after
// d, and those under way end (their holders release at once).
func contend(ctx context.Context, set contenderSet, maxAcq int, d time.Duration) (round, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, roundLimit, fmt.Errorf("round over %v", roundLimit))
	defer cancel()
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	var (
		next atomic.Int64
		mu   sync.Mutex
		wg   sync.WaitGroup
	)
	res := round{perClient: make([]int, len(set.clients))}
	start := time.Now()
	end := start.Add(d)
	for i, c := range set.clients {
		wg.Go(func() {
			var waits []time.Duration
			var waiting time.Duration
			var sent int64
			defer func() {
				mu.Lock()
				res.waits = append(res.waits, waits...)
				res.waiting += waiting
				res.sent += sent
				mu.Unlock()
			}()
			for next.Add(1) <= int64(maxAcq) && time.Now().Before(end) {
				s0 := set.sent[i].Load()
				asked := time.Now()
				release, err := c.lock(ctx)
				if err != nil {
					fail(err)
					return
				}
				w := time.Since(asked)
				waits = append(waits, w)
				waiting += w
				sent += set.sent[i].Load() - s0
				res.perClient[i]++
				if err := release(ctx); err != nil {
					fail(fmt.Errorf("release: %w", err))
					return
				}
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return round{}, err
	}
	res.acq = len(res.waits)
	return res, nil
}
