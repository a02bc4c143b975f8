package compatbench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
)

// workload is what a client does between acquisitions.
type workload struct{ hold, think time.Duration }

func (w workload) String() string {
	if w.hold == 0 && w.think == 0 {
		return "hold=0-think=0"
	}
	return fmt.Sprintf("hold=%v-think=%v", w.hold, w.think)
}

var workloads = []workload{{0, 0}, {time.Millisecond, 2 * time.Millisecond}}

// BenchmarkCompatContended: 16 clients on one lock on one Redis, under
// each workload; each iteration runs one round of every implementation
// (roundAcq acquisitions, fresh clients, warmed up), in a rotating order.
// Reported: the median over rounds of acquisitions per second, the
// commands sent and executed per acquisition (over all rounds), the p50
// and p99 wait over all acquisitions (from calling Acquire to holding),
// the fairness (fewest over most acquisitions per client in a round;
// median over rounds), the median hand-off (from a holder calling release
// to the next one holding), and the CPU of this process and of Redis per
// acquisition.
func BenchmarkCompatContended(b *testing.B) {
	var gaveUp atomic.Int64
	for _, w := range workloads {
		b.Run(w.String(), func(b *testing.B) {
			addrs, admins := servers(b, 1)
			contended(b, arena{addrs: addrs, admins: admins}, w, &gaveUp, []impl{
				redislockImpl, bsmImpl(time.Millisecond), redsyncImpl("redsync", &gaveUp), rueidislockImpl(0)})
		})
	}
}

// BenchmarkCompatRedlockContended is BenchmarkCompatContended over three
// servers: this repository's redlock and redsync, both with their default
// retry delays.
func BenchmarkCompatRedlockContended(b *testing.B) {
	var gaveUp atomic.Int64
	for _, w := range workloads {
		b.Run(w.String(), func(b *testing.B) {
			addrs, admins := servers(b, 3)
			contended(b, arena{addrs: addrs, admins: admins}, w, &gaveUp, []impl{redlockImpl, redsyncImpl("redsync3", &gaveUp)})
		})
	}
}

// round is one measured round of one implementation.
type round struct {
	acq       int
	elapsed   time.Duration
	waits     []time.Duration
	handoffs  []time.Duration // from a holder calling release to the next holding
	stalls    []string        // waits over stallWait: "wait@ticket/n"
	perClient []int
	sent      Counts
	exec      Counts // with the servers' CPU
	clientCPU time.Duration
	gaveUp    int64
	bus       [2]int64      // cluster-bus messages sent and received (arena.bus)
	busTime   time.Duration // between the bus's two readings
}

func (r round) fairness() float64 {
	return float64(slices.Min(r.perClient)) / float64(slices.Max(r.perClient))
}

// arena is where contended's rounds run.
type arena struct {
	addrs  []string        // the servers, or a cluster's seed list
	admins []*redis.Client // INFO commandstats of these is what was executed
	// name is the lock of client i of im; nil: one lock for all,
	// "contended-"+im.name.
	name func(im impl, i int) string
	// bus, when not nil, is read around each round's measured part: the
	// cluster bus's messages sent and received so far.
	bus func() (sent, received int64)
}

// contended runs the rounds, prints the table and returns the rounds of
// each implementation.
func contended(b *testing.B, a arena, w workload, gaveUp *atomic.Int64, impls []impl) [][]round {
	ctx := bounded(b, benchLimit)
	rounds := make([][]round, len(impls))
	for r := 0; b.Loop(); r++ {
		for k := range impls {
			i := (r + k) % len(impls)
			g0 := gaveUp.Load()
			res, err := contendRound(ctx, impls[i], a, w)
			if err != nil {
				b.Fatalf("%s: %v", impls[i].name, err)
			}
			res.gaveUp = gaveUp.Load() - g0
			rounds[i] = append(rounds[i], res)
		}
	}
	b.StopTimer()
	var tab strings.Builder
	fmt.Fprintf(&tab, "\n| impl | acq/s | sent/acq | executed/acq | p50 wait ms | p99 wait ms | max wait ms | fairness | worst round | p50 hand-off ms | client CPU µs/acq | server CPU µs/acq |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	var details strings.Builder
	for i, im := range impls {
		var perSec, fair []float64
		var waits, handoffs []time.Duration
		var sent, exec Counts
		acq := 0
		var gave int64
		var clientCPU time.Duration
		var stalls []string
		for k, r := range rounds[i] {
			clientCPU += r.clientCPU
			for _, s := range r.stalls {
				stalls = append(stalls, fmt.Sprintf("round %d: %s", k+1, s))
			}
			perSec = append(perSec, float64(r.acq)/r.elapsed.Seconds())
			fair = append(fair, r.fairness())
			waits = append(waits, r.waits...)
			handoffs = append(handoffs, r.handoffs...)
			sent, exec = sent.Add(r.sent), exec.Add(r.exec)
			acq += r.acq
			gave += r.gaveUp
		}
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		p50, p99, pmax := lockbench.Quantile(waits, 0.5), lockbench.Quantile(waits, 0.99), slices.Max(waits)
		b.ReportMetric(lockbench.Median(perSec), im.name+"-acq/s")
		b.ReportMetric(float64(sent.Total)/float64(acq), im.name+"-sent/acq")
		b.ReportMetric(float64(exec.Total)/float64(acq), im.name+"-exec/acq")
		b.ReportMetric(ms(p50), im.name+"-p50-ms")
		b.ReportMetric(ms(p99), im.name+"-p99-ms")
		b.ReportMetric(lockbench.Median(fair), im.name+"-fair")
		perAcq := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(acq) }
		b.ReportMetric(perAcq(clientCPU), im.name+"-clientcpu-µs/acq")
		b.ReportMetric(perAcq(exec.CPU), im.name+"-servercpu-µs/acq")
		b.ReportMetric(ms(lockbench.Median(handoffs)), im.name+"-handoff-ms")
		fmt.Fprintf(&tab, "| %s | %.0f | %.2f | %.2f | %.2f | %.2f | %.1f | %.2f | %.2f | %.3f | %.0f | %.0f |\n", im.name, lockbench.Median(perSec),
			float64(sent.Total)/float64(acq), float64(exec.Total)/float64(acq), ms(p50), ms(p99), ms(pmax),
			lockbench.Median(fair), slices.Min(fair), ms(lockbench.Median(handoffs)), perAcq(clientCPU), perAcq(exec.CPU))
		fmt.Fprintf(&details, "%s: acq/s by round %s; sent per acq: %s; executed per acq: %s",
			im.name, fmtFloats(perSec), Breakdown(sent, acq), Breakdown(exec, acq))
		if gave > 0 {
			fmt.Fprintf(&details, "; LockContext gave up %d times", gave)
		}
		if len(stalls) > 0 {
			fmt.Fprintf(&details, "; waits over %v (wait@ticket/acquisitions): %s", stallWait, strings.Join(stalls, ", "))
		}
		if sent.Broken > 0 {
			fmt.Fprintf(&details, "; %d bytes not parsed", sent.Broken)
		}
		details.WriteByte('\n')
	}
	table(b, "%d clients, %v, %d rounds of %d acquisitions each:%s%s", contenders, w, len(rounds[0]), roundAcq, tab.String(), details.String())
	return rounds
}

// fmtFloats formats xs with no decimals, or as format says.
func fmtFloats(xs []float64, format ...string) string {
	f := "%.0f"
	if len(format) > 0 {
		f = format[0]
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf(f, x)
	}
	return strings.Join(s, " ")
}

// stallWait is the wait beyond which an acquisition is listed with its
// ticket (its rank in the round).
const stallWait = time.Second

// roundLimit bounds one round.
const roundLimit = 5 * time.Minute

// contendRound opens contenders fresh clients of im, warms them up, and
// measures roundAcq acquisitions.
func contendRound(ctx context.Context, im impl, a arena, w workload) (round, error) {
	ctx, cancel := context.WithTimeout(ctx, roundLimit)
	defer cancel()
	ctr := NewCounter()
	clients := make([]client, contenders)
	defer func() {
		for _, c := range clients {
			if c != nil {
				_ = c.close()
			}
		}
	}()
	for i := range clients {
		name := "contended-" + im.name
		if a.name != nil {
			name = a.name(im, i)
		}
		c, err := im.open(a.addrs, name, ctr)
		if err != nil {
			return round{}, err
		}
		clients[i] = c
	}
	if _, err := contend(ctx, clients, warmAcq, w); err != nil {
		return round{}, fmt.Errorf("warming up: %w", err)
	}
	s0 := ctr.Snapshot()
	var bus0 [2]int64
	bus0Time := time.Now()
	if a.bus != nil { // outside INFO commandstats' window: CLUSTER INFO is not the lock's
		bus0[0], bus0[1] = a.bus()
	}
	e0, err := CommandStats(ctx, a.admins...)
	if err != nil {
		return round{}, err
	}
	c0, err := cpuTime()
	if err != nil {
		return round{}, err
	}
	res, err := contend(ctx, clients, roundAcq, w)
	if err != nil {
		return round{}, err
	}
	c1, err := cpuTime()
	if err != nil {
		return round{}, err
	}
	res.clientCPU = c1 - c0
	e1, err := CommandStats(ctx, a.admins...)
	if err != nil {
		return round{}, err
	}
	if a.bus != nil {
		sent, received := a.bus()
		res.bus, res.busTime = [2]int64{sent - bus0[0], received - bus0[1]}, time.Since(bus0Time)
	}
	res.sent, res.exec = ctr.Snapshot().Sub(s0), Executed(e0, e1, len(a.admins))
	return res, nil
}

// contend makes n acquisitions with every client looping on the lock: take
// a ticket, acquire, hold, release, think.
func contend(ctx context.Context, clients []client, n int, w workload) (round, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next      atomic.Int64
		releasing atomic.Int64 // when the last holder called release (unix ns)
		mu        sync.Mutex
		wg        sync.WaitGroup
	)
	res := round{acq: n, perClient: make([]int, len(clients))}
	start := time.Now()
	for i, c := range clients {
		wg.Go(func() {
			var waits, handoffs []time.Duration
			defer func() {
				mu.Lock()
				res.waits = append(res.waits, waits...)
				res.handoffs = append(res.handoffs, handoffs...)
				mu.Unlock()
			}()
			for {
				ticket := next.Add(1)
				if ticket > int64(n) {
					return
				}
				asked := time.Now()
				release, err := c.lock(ctx)
				if err != nil {
					cancel(err)
					return
				}
				now := time.Now()
				waits = append(waits, now.Sub(asked))
				if d := now.Sub(asked); d > stallWait {
					mu.Lock()
					res.stalls = append(res.stalls, fmt.Sprintf("%v@%d/%d", d.Round(time.Millisecond), ticket, n))
					mu.Unlock()
				}
				if last := releasing.Load(); last != 0 {
					handoffs = append(handoffs, now.Sub(time.Unix(0, last)))
				}
				res.perClient[i]++
				if w.hold > 0 {
					time.Sleep(w.hold)
				}
				releasing.Store(time.Now().UnixNano())
				if err := release(ctx); err != nil {
					cancel(fmt.Errorf("release: %w", err))
					return
				}
				if w.think > 0 {
					time.Sleep(w.think)
				}
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return round{}, err
	}
	return res, nil
}
