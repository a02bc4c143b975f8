package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// A holder cut off from every server is told before the successor is
// granted the lock by a majority, by the margin.
func TestHolderToldFirstUnderBlackhole(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	const ttl = 2 * time.Second
	settle(t, servers, ttl)
	var proxied []redlock.Redis
	var proxies []*harness.Proxy
	for _, s := range servers {
		p := harness.NewProxy(t, s.Addr())
		r := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = r.Close() })
		proxied, proxies = append(proxied, r), append(proxies, p)
	}
	holder, err := redlock.New(newClient(t, proxied), "blackhole", redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	successor := newLock(t, servers, "blackhole", redlock.WithTTL(ttl), redlock.WithRetryDelay(10*time.Millisecond))
	holdertest.HolderToldFirst(t, holder, successor, func() {
		for _, p := range proxies {
			p.Blackhole(t)
		}
	}, recipes.DriftMargin(ttl)-10*time.Millisecond)
	for _, p := range proxies {
		p.Restore(t)
	}
}

// restartTTL is the TTL of the locks in the restart tests.
const restartTTL = 2 * time.Second

// Servers restart empty, a minority at a time, a step a second, while a
// holder holds and a contender keeps trying: no contender is granted the
// lock while the holder's lease is live. (Before the quiet period a
// contender took the restarted servers a few milliseconds after the step
// that made them a majority, while the holder trusted its lease for
// hundreds of milliseconds more: its extensions counted the servers that
// still had its key, and never put it back.) The holder keeps its lease
// through the restarts (its extensions put its key back on the restarted
// servers), and once it releases, the contender is granted the lock when
// enough servers are out of their quiet period: the cost, logged.
func TestMinorityRestartsGiveNoSecondHolder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		steps  [][]int // the servers restarted together at each step
		rounds int
	}{
		{"3 servers one at a time", 3, [][]int{{0}, {1}}, 3},
		{"5 servers one at a time", 5, [][]int{{0}, {1}, {2}}, 2},
		// Two down at once, the largest minority of five, and every server
		// restarted.
		{"5 servers two at a time", 5, [][]int{{0, 1}, {2, 3}, {4}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers := harness.StartRedisN(t, tc.n)
			settle(t, servers, restartTTL)
			for round := range tc.rounds {
				restartRound(t, servers, fmt.Sprintf("restarts-%d", round), tc.steps)
			}
		})
	}
}

// grant is a contender's acquisition, and whether the holder's lease was
// still live when it had it.
type grant struct {
	lease      recipes.Lease
	at         time.Time
	holderLive bool
	err        error
}

// restartRound is one round of TestMinorityRestartsGiveNoSecondHolder on
// the lock name.
func restartRound(t *testing.T, servers []*harness.Redis, name string, steps [][]int) {
	t.Helper()
	ctx := ctxT(t)
	// A server timeout well above the default, so that a busy machine does
	// not cost the holder its lease.
	lock := func() *redlock.Lock {
		c := newClient(t, clients(t, servers), redlock.WithServerTimeout(200*time.Millisecond))
		return lockOn(t, c, name, redlock.WithTTL(restartTTL))
	}
	holder, err := lock().Acquire(ctx)
	require.NoError(t, err)
	contender := lock()
	granted := make(chan grant, 1)
	go func() {
		for ctx.Err() == nil {
			lease, err := contender.TryAcquire(ctx)
			if err == nil {
				granted <- grant{lease: lease, at: time.Now(), holderLive: holder.Err() == nil}
				return
			}
			if !errors.Is(err, recipes.ErrNotAcquired) {
				granted <- grant{err: err}
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		granted <- grant{err: ctx.Err()}
	}()

	first := time.Now()
	var ended []time.Time // when each step's servers answered again
	for i, step := range steps {
		time.Sleep(time.Until(first.Add(time.Duration(i) * time.Second)))
		for _, s := range step {
			servers[s].Stop(t)
		}
		for _, s := range step {
			servers[s].Start(t)
		}
		ended = append(ended, time.Now())
	}
	last := ended[len(ended)-1]

	var g grant
	var released time.Time
	select {
	case g = <-granted: // too early, unless the holder was told
	case <-time.After(time.Until(last.Add(restartTTL / 4))):
		require.NoError(t, holder.Err(), "%s: the holder keeps its lease through the restarts (its extensions put its key back)", name)
		released = time.Now()
		require.NoError(t, holder.Release(ctx))
		select {
		case g = <-granted:
		case <-time.After(waitLimit):
			t.Fatalf("%s: the contender was never granted the released lock", name)
		}
	}
	require.NoError(t, g.err)
	defer func() { require.NoError(t, g.lease.Release(ctx)) }()
	if g.holderLive {
		step := 0 // the last step that had ended by the grant
		for i, e := range ended {
			if e.Before(g.at) {
				step = i
			}
		}
		select {
		case <-holder.Done():
		case <-time.After(waitLimit):
		}
		t.Fatalf("%s: a contender was granted the lock %v after the servers %v of restart step %d answered again, while the holder's lease was live (the holder was told %v after the grant: %v)",
			name, g.at.Sub(ended[step]).Round(time.Millisecond), steps[step], step+1, time.Since(g.at).Round(time.Millisecond), context.Cause(holder.Context()))
	}
	if released.IsZero() {
		t.Fatalf("%s: granted %v after the last restart, after the holder lost its lease (%v): it should have kept it",
			name, g.at.Sub(last).Round(time.Millisecond), context.Cause(holder.Context()))
	}
	t.Logf("%s: the holder kept its lease through the restarts; released %v after the last one, the lock was granted to the contender %v after the release (%v after the first restart)",
		name, released.Sub(last).Round(time.Millisecond), g.at.Sub(released).Round(time.Millisecond), g.at.Sub(first).Round(time.Millisecond))
}
