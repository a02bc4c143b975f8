// Package lockbench holds what the lock benchmarks of several packages
// share: running contenders, reading the server's request counter, and
// comparing implementations side by side. It is test support, not API.
package lockbench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// LockFunc takes a lock and gives it back once.
type LockFunc func() error

// Result of one contention run.
type Result struct {
	Acquisitions int
	Elapsed      time.Duration
	Requests     int64           // server requests during the run (mntr zk_packets_received)
	Sent         int64           // server packets sent: replies and notifications (zk_packets_sent)
	Handoffs     []time.Duration // from one release to the next acquisition
	Gaps         []time.Duration // from one holder's start to the next one's
}

// PerSecond is the acquisitions per second.
func (r Result) PerSecond() float64 { return float64(r.Acquisitions) / r.Elapsed.Seconds() }

// RequestsPerAcq is the server requests per acquisition.
func (r Result) RequestsPerAcq() float64 { return float64(r.Requests) / float64(r.Acquisitions) }

// Contend makes n acquisitions with all locks contending (one goroutine
// each), counting the requests server received meanwhile.
func Contend(server string, locks []func(held func()) error, n int) (Result, error) {
	before, err := Packets(server)
	if err != nil {
		return Result{}, err
	}
	sentBefore, err := Sent(server)
	if err != nil {
		return Result{}, err
	}
	var (
		next        atomic.Int64
		lastRelease atomic.Int64 // unix nanos of the latest release
		mu          sync.Mutex
		handoffs    []time.Duration
		gaps        []time.Duration
		lastHeld    time.Time
		wg          sync.WaitGroup
	)
	errs := make(chan error, len(locks))
	start := time.Now()
	for _, lock := range locks {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				err := lock(func() {
					now := time.Now()
					mu.Lock()
					defer mu.Unlock()
					if last := lastRelease.Load(); last != 0 {
						handoffs = append(handoffs, now.Sub(time.Unix(0, last)))
					}
					if !lastHeld.IsZero() {
						gaps = append(gaps, now.Sub(lastHeld))
					}
					lastHeld = now
				})
				lastRelease.Store(time.Now().UnixNano())
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return Result{}, err
	}
	after, err := Packets(server)
	if err != nil {
		return Result{}, err
	}
	sentAfter, err := Sent(server)
	if err != nil {
		return Result{}, err
	}
	return Result{Acquisitions: n, Elapsed: elapsed, Requests: after - before, Sent: sentAfter - sentBefore,
		Handoffs: handoffs, Gaps: gaps}, nil
}

// Packets reads the server's count of received packets.
func Packets(server string) (int64, error) { return mntrCount(server, "zk_packets_received") }

// Sent reads the server's count of sent packets: replies, notifications
// and the replies to the mntr commands themselves.
func Sent(server string) (int64, error) { return mntrCount(server, "zk_packets_sent") }

func mntrCount(server, key string) (int64, error) {
	m, err := harness.Mntr(server)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(m[key], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("mntr %s %q: %w", key, m[key], err)
	}
	return n, nil
}

// Median of xs (0 for none).
func Median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// Quantile is the q-quantile (0 ≤ q ≤ 1) of xs, by the nearest rank (0
// for none).
func Quantile[T int64 | float64 | time.Duration](xs []T, q float64) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// SideBySide alternates the implementations round by round in one run, in
// a rotating order, so that the machine's noise hits them alike, and reports
// each one's median microseconds per operation over the rounds and its
// ratio to the first (the baseline). A round's time over its operations is
// a throughput: slow outliers count.
func SideBySide(b *testing.B, names []string, round func(impl int) (ops int, err error)) {
	b.Helper()
	perOp := make([][]float64, len(names))
	for r := 0; b.Loop(); r++ {
		// Each round starts with the next implementation, so that none is
		// always the first of a round.
		for k := range names {
			i := (r + k) % len(names)
			start := time.Now()
			ops, err := round(i)
			if err != nil {
				b.Fatal(err)
			}
			perOp[i] = append(perOp[i], time.Since(start).Seconds()/float64(ops))
		}
	}
	report(b, names, "", each(perOp, Median))
}

// Alternate is SideBySide one operation at a time: each iteration runs
// perIteration single operations of every implementation, interleaved in a
// rotating order. It reports each implementation's median operation (a
// typical operation's latency) and its mean (the throughput, outliers
// included), each with its ratio to the first implementation's.
func Alternate(b *testing.B, names []string, perIteration int, op func(impl int) error) {
	b.Helper()
	took := make([][]float64, len(names))
	for r := 0; b.Loop(); r++ {
		for n := range perIteration {
			for k := range names {
				i := (r*perIteration + n + k) % len(names)
				start := time.Now()
				if err := op(i); err != nil {
					b.Fatal(err)
				}
				took[i] = append(took[i], time.Since(start).Seconds())
			}
		}
	}
	report(b, names, "", each(took, Median))
	report(b, names, "mean-", each(took, mean))
}

// each applies f to every implementation's samples.
func each(samples [][]float64, f func([]float64) float64) []float64 {
	out := make([]float64, len(samples))
	for i, s := range samples {
		out[i] = f(s)
	}
	return out
}

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// report gives each implementation's value (seconds) in microseconds and
// its ratio to the first's, the metrics' names starting with prefix.
func report(b *testing.B, names []string, prefix string, seconds []float64) {
	for i, name := range names {
		b.ReportMetric(seconds[i]*1e6, prefix+name+"-µs/op")
		if i > 0 {
			b.ReportMetric(seconds[i]/seconds[0], prefix+name+"/"+names[0])
		}
	}
}

// Lockers turns Lockers into lock functions for Contend: each acquires,
// calls held, and releases.
func Lockers(ctx context.Context, lockers ...recipes.Locker) []func(held func()) error {
	locks := make([]func(func()) error, len(lockers))
	for i, l := range lockers {
		locks[i] = func(held func()) error {
			lease, err := l.Acquire(ctx)
			if err != nil {
				return err
			}
			held()
			return lease.Release(ctx)
		}
	}
	return locks
}

// Run is Contend for a benchmark: b.N acquisitions, reporting acq/s and
// requests/acq.
func Run(b *testing.B, server string, locks []func(held func()) error) Result {
	b.Helper()
	b.ResetTimer()
	res, err := Contend(server, locks, b.N)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.PerSecond(), "acq/s")
	b.ReportMetric(res.RequestsPerAcq(), "requests/acq")
	b.ReportMetric(float64(res.Sent)/float64(res.Acquisitions), "sent/acq")
	return res
}
