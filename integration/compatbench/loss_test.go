package compatbench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/lockbench"
)

// The loss signal: a holder whose connection goes through a proxy that is
// then blackholed, and a successor, connected directly, waiting for the
// lock. The margin is the successor's grant time less the time the
// holder's lease (its context) was cancelled: positive when the holder
// was told first, negative when it went on trusting a lock someone else
// already held.

// lossLock is one side of a trial: a lock with connections of its own.
type lossLock interface {
	// acquire waits for the lock and returns the lease's context (which
	// ends when the holder must stop trusting the lock) and its release.
	acquire(ctx context.Context) (lease context.Context, release func(), err error)
	close()
}

// lossImpl opens one side of a trial on addr.
type lossImpl struct {
	name string
	open func(addr string) (lossLock, error)
}

// releaseLimit bounds a release at the end of a trial.
const releaseLimit = 10 * time.Second

func redislockLoss(ttl time.Duration) lossImpl {
	return lossImpl{name: "redislock-ttl=" + ttl.String(), open: func(addr string) (lossLock, error) {
		r := redis.NewClient(&redis.Options{Addr: addr})
		c, err := redislock.NewClient(r)
		if err != nil {
			return nil, err
		}
		l, err := redislock.New(c, "loss", redislock.WithTTL(ttl))
		if err != nil {
			return nil, err
		}
		return &redislockSide{r: r, c: c, l: l}, nil
	}}
}

type redislockSide struct {
	r *redis.Client
	c *redislock.Client
	l *redislock.Lock
}

func (s *redislockSide) acquire(ctx context.Context) (context.Context, func(), error) {
	lease, err := s.l.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	return lease.Context(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), releaseLimit)
		defer cancel()
		_ = lease.Release(ctx) // the holder's reports the loss
	}, nil
}

func (s *redislockSide) close() { _ = s.c.Close(); _ = s.r.Close() }

// rueidislockLoss is rueidislock with a validity of validity (its default
// when 0: 5 s, extended every half of it).
func rueidislockLoss(validity time.Duration) lossImpl {
	name := "rueidislock-validity=" + validity.String()
	if validity == 0 {
		name = "rueidislock-validity=5s(default)"
	}
	return lossImpl{name: name, open: func(addr string) (lossLock, error) {
		lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption: rueidis.ClientOption{InitAddress: []string{addr}},
			KeyValidity:  validity,
		})
		if err != nil {
			return nil, err
		}
		return &rueidisSide{lk: lk}, nil
	}}
}

type rueidisSide struct{ lk rueidislock.Locker }

func (s *rueidisSide) acquire(ctx context.Context) (context.Context, func(), error) {
	lease, cancel, err := s.lk.WithContext(ctx, "loss")
	if err != nil {
		return nil, nil, err
	}
	return lease, cancel, nil
}

func (s *rueidisSide) close() { s.lk.Close() }

// trial is one measured blackhole.
type trial struct {
	margin  time.Duration // the successor's grant less the holder's told
	told    time.Duration // after the cut
	granted time.Duration // after the cut
}

// trialLimit bounds every wait of a trial.
const trialLimit = time.Minute

// queueTime is how long the successor has to queue before the cut.
const queueTime = 100 * time.Millisecond

// BenchmarkCompatLossSignal: one blackhole per iteration, for this
// repository's redislock and rueidislock, with 2 s of TTL (validity) and
// 5 s (rueidislock's default). It reports the median margin in ms
// (positive: the holder was told first), and the smallest and largest.
func BenchmarkCompatLossSignal(b *testing.B) {
	var rows []string
	for _, im := range []lossImpl{
		redislockLoss(2 * time.Second), rueidislockLoss(2 * time.Second),
		redislockLoss(5 * time.Second), rueidislockLoss(0),
	} {
		b.Run(im.name, func(b *testing.B) {
			r := harness.StartRedis(b)
			ctx := bounded(b, benchLimit)
			var trials []trial
			for b.Loop() {
				t, err := blackhole(ctx, b, r.Addr(), im)
				if err != nil {
					b.Fatal(err)
				}
				trials = append(trials, t)
			}
			margins := make([]time.Duration, len(trials))
			told := make([]time.Duration, len(trials))
			granted := make([]time.Duration, len(trials))
			for i, t := range trials {
				margins[i], told[i], granted[i] = t.margin, t.told, t.granted
			}
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			b.ReportMetric(ms(lockbench.Median(margins)), "margin-ms")
			b.ReportMetric(ms(slices.Min(margins)), "min-margin-ms")
			b.ReportMetric(ms(slices.Max(margins)), "max-margin-ms")
			b.ReportMetric(ms(lockbench.Median(told)), "told-after-cut-ms")
			b.ReportMetric(ms(lockbench.Median(granted)), "granted-after-cut-ms")
			each := make([]string, len(margins))
			for i, m := range margins {
				each[i] = fmt.Sprintf("%.0f", ms(m))
			}
			rows = append(rows, fmt.Sprintf("| %s | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %s |", im.name, len(trials),
				ms(lockbench.Median(margins)), ms(slices.Min(margins)), ms(slices.Max(margins)), ms(lockbench.Median(told)), ms(lockbench.Median(granted)),
				strings.Join(each, " ")))
		})
	}
	table(b, "holder blackholed %v after the successor queued; margin = successor's grant − holder told (positive: told first):\n"+
		"| impl | trials | median margin ms | min | max | holder told after cut ms (median) | successor granted after cut ms (median) | margins ms |\n"+
		"|---|---|---|---|---|---|---|---|\n%s", queueTime, strings.Join(rows, "\n"))
}

// blackhole runs one trial: the holder through a fresh proxy, the
// successor directly, each with connections of its own.
func blackhole(ctx context.Context, b *testing.B, addr string, im lossImpl) (trial, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*trialLimit)
	defer cancel()
	p := harness.NewProxy(b, addr)
	holder, err := im.open(p.Addr())
	if err != nil {
		return trial{}, err
	}
	defer holder.close()
	successor, err := im.open(addr)
	if err != nil {
		return trial{}, err
	}
	defer successor.close()

	lease, release, err := holder.acquire(ctx)
	if err != nil {
		return trial{}, fmt.Errorf("holder: %w", err)
	}
	var (
		mu   sync.Mutex
		told time.Time
	)
	context.AfterFunc(lease, func() {
		mu.Lock()
		told = time.Now()
		mu.Unlock()
	})
	type grant struct {
		release func()
		at      time.Time
		err     error
	}
	next := make(chan grant, 1)
	go func() {
		_, rel, err := successor.acquire(ctx)
		next <- grant{rel, time.Now(), err}
	}()
	time.Sleep(queueTime)
	cut := time.Now()
	p.Blackhole(b)
	var g grant
	select {
	case g = <-next:
	case <-time.After(trialLimit):
		p.Restore(b)
		release()
		return trial{}, errors.New("the successor was never granted the lock")
	}
	if g.err != nil {
		p.Restore(b)
		release()
		return trial{}, fmt.Errorf("successor: %w", g.err)
	}
	defer g.release()
	select { // a late holder is told after the grant: wait for it
	case <-lease.Done():
	case <-time.After(trialLimit):
		p.Restore(b)
		release()
		return trial{}, errors.New("the holder was never told")
	}
	// context.AfterFunc has run, or is about to.
	var at time.Time
	for range 1000 {
		mu.Lock()
		at = told
		mu.Unlock()
		if !at.IsZero() {
			break
		}
		time.Sleep(time.Millisecond)
	}
	p.Restore(b)
	release()
	if at.IsZero() {
		return trial{}, errors.New("the holder's context ended, but its AfterFunc never ran")
	}
	return trial{margin: g.at.Sub(at), told: at.Sub(cut), granted: g.at.Sub(cut)}, nil
}
