package compatbench

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/compat/redislock"
)

// pairTTL is the TTL of BenchmarkCompatPair's locks: short, since a stall
// lasts one TTL.
const pairTTL = time.Second

// pairAcq is how many acquisitions one iteration of BenchmarkCompatPair
// makes.
const pairAcq = 200

// BenchmarkCompatPair: two redislock clients loop on one lock (hold 0,
// think 0), a TTL of 1 s. It counts the waits that took longer than half
// the TTL: a waiter that queues while the queue is empty, and whose grant
// is published before it has registered for it on its Client's
// subscription, misses it and sleeps on its timer (capped at the TTL)
// while the lock is held in its name. It reports that rather than failing.
func BenchmarkCompatPair(b *testing.B) {
	addrs, _ := servers(b, 1)
	ctx := bounded(b, benchLimit)
	im := impl{name: "redislock-ttl1s", open: func(addrs []string, name string, ctr *Counter) (client, error) {
		r := goRedis(addrs[0], ctr)
		c, err := redislock.NewClient(r)
		if err != nil {
			return nil, err
		}
		l, err := redislock.New(c, name, redislock.WithTTL(pairTTL))
		if err != nil {
			return nil, err
		}
		return &leaseClient{l: l, stop: func() error { return errors.Join(c.Close(), r.Close()) }}, nil
	}}
	var waits []time.Duration
	var elapsed time.Duration
	for b.Loop() {
		ctr := NewCounter()
		clients := []client{open(b, im, addrs, "pair", ctr), open(b, im, addrs, "pair", ctr)}
		res, err := contend(ctx, clients, pairAcq, workload{})
		if err != nil {
			b.Fatal(err)
		}
		waits = append(waits, res.waits...)
		elapsed += res.elapsed
	}
	var stalls []time.Duration
	for _, w := range waits {
		if w > pairTTL/2 {
			stalls = append(stalls, w.Round(time.Millisecond))
		}
	}
	slices.Sort(stalls)
	b.ReportMetric(float64(len(waits))/elapsed.Seconds(), "acq/s")
	b.ReportMetric(float64(len(stalls))/float64(len(waits)), "stalls/acq")
	b.ReportMetric(float64(slices.Max(waits))/1e6, "max-wait-ms")
	table(b, "2 clients, hold 0, think 0, TTL %v: %d acquisitions in %v, %d waited over %v: %v",
		pairTTL, len(waits), elapsed.Round(time.Millisecond), len(stalls), pairTTL/2, fmt.Sprint(stalls))
}
