//go:build linux

package memcachedlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// Bounds and aims of the clock-jump test.
const (
	// clockBudget bounds the whole test.
	clockBudget = 120 * time.Second
	// acquireLead is how long before a tick a round's holder takes the lock.
	acquireLead = 150 * time.Millisecond
	// contenderPoll is how often a round's contender tries.
	contenderPoll = 4 * time.Millisecond
	// roundLimit bounds a round's contender: the item lives the TTL at most.
	roundLimit = memcachedlock.MinTTL + time.Second
	// aimLead: a start of memcached aims at ticks this long before a
	// second boundary: the drift (0.1 to 1.5 ms a tick here, varying
	// within a run) brings a jump within 3 to 30 ticks.
	aimLead = 3 * time.Millisecond
	// nearest, farthest: a start is kept when its ticks come this long
	// before a second boundary (farther, when the clock drifts faster:
	// farthestAt).
	nearest, farthest = 300 * time.Microsecond, 7 * time.Millisecond
	// watchTicks bounds the ticks watched after a start, a round each.
	watchTicks = 40
	// maxStarts bounds the starts of memcached.
	maxStarts = 12
	// minDrift: a clock that drifts less than this per tick crosses a
	// second boundary too rarely for the test's time bound.
	minDrift = 50 * time.Microsecond
	// roundKeys: rounds take turns on this many keys (one round a tick,
	// each lasting up to roundLimit).
	roundKeys = 6
)

// round is one try: a holder takes the lock at MinTTL acquireLead before a
// tick and then cannot renew (its compare-and-swaps hang), while a
// contender polls TryAcquire.
type round struct {
	key               string
	sent, acquired    int64 // CLOCK_MONOTONIC ns around the holder's TryAcquire
	told              int64 // the holder's lease ended; 0: not by the end of the round
	granted           int64 // the contender's TryAcquire that succeeded returned; 0: never
	toldFirst         bool  // the holder's lease had ended when the contender was granted
	err, contenderErr error
}

// runRound plays a round on key of the memcached at addr, taking the lock
// at the monotonic instant at.
func runRound(ctx context.Context, addr, key string, at int64) *round {
	r := &round{key: key}
	// No eviction check (the rounds' items never fill the server's
	// memory): its connection would delay the timed add.
	opts := []any{memcachedlock.WithoutEvictionCheck(), memcachedlock.WithTTL(memcachedlock.MinTTL)}
	hmc := &stalled{Client: memcache.New(addr), gate: make(chan struct{})}
	cmc := memcache.New(addr)
	defer func() { hmc.open(); _ = hmc.Client.Close(); _ = cmc.Close() }()
	_, holder, err := openLock(hmc, key, opts...)
	if err != nil {
		r.err = err
		return r
	}
	_, contender, err := openLock(cmc, key, opts...)
	if err != nil {
		r.err = err
		return r
	}
	sleepUntil(at, false)
	r.sent = monotonic()
	lease, err := holder.TryAcquire(ctx)
	r.acquired = monotonic()
	if err != nil {
		r.err = err
		return r
	}
	var told atomic.Int64
	context.AfterFunc(lease.Context(), func() { told.Store(monotonic()) })
	for limit := r.sent + int64(roundLimit); monotonic() < limit; time.Sleep(contenderPoll) {
		next, err := contender.TryAcquire(ctx)
		if err != nil {
			if !errors.Is(err, recipes.ErrLocked) {
				r.contenderErr = err
			}
			continue
		}
		r.granted = monotonic()
		select {
		case <-lease.Done():
			r.toldFirst = true
		default:
		}
		_ = next.Release(ctx)
		break
	}
	// For the figures: when the holder was told, if it was not yet.
	select {
	case <-lease.Done():
		told.CompareAndSwap(0, monotonic()) // AfterFunc's goroutine may not have run yet
	case <-time.After(time.Duration(r.sent + int64(roundLimit) - monotonic())):
	}
	r.told = told.Load()
	hmc.open()
	_ = lease.Release(ctx) // lost: its renewals hung
	return r
}

// ms formats a duration between two monotonic instants.
func ms(from, to int64) string {
	if to == 0 {
		return "never"
	}
	return time.Duration(to - from).Round(time.Millisecond).String()
}

// memcached's clock counts whole seconds, and when its tick (a timer
// re-armed for a second after each tick, so a little late each time)
// crosses a second boundary it jumps by 2: an item written in the stale
// second before the jump expires at the jump, up to 2 s early. The test
// starts memcached so that its ticks come just before a second boundary
// (CLOCK_MONOTONIC), then, a tick at a time, has a holder take the lock at
// MinTTL just before the tick while a contender polls, until a round's
// first tick is a jump. At each grant, the holder's lease must have ended.
//
// It is the only reproduction of that early expiry, so with
// ZKR_REQUIRE_INTEGRATION=1 a round that never spans a jump fails it
// rather than skip it. One condition skips it even then: a machine whose
// memcached clock drifts too little cannot give a jump within the test's
// time (see below).
func TestCoarseClockJump(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for memcached's clock to jump: up to 80 s")
	}
	budget := monotonic() + int64(clockBudget)
	// A memcached of the test's own, never one of MEMCACHED_ADDRS: it is
	// restarted at moments the test chooses. Not StartMemcachedRestartable:
	// its memory file (-e), made at each start, delays the clock's start by
	// a varying 10 to 80 ms (measured here), past the aim. This one may
	// evict (no -M), but the rounds' few small items never fill its 64 MB.
	m := harness.StartMemcachedEvicting(t, 64)
	awaitBackground(t) // the background releases of the leases the rounds lost
	ticks := dialMemClock(t, m.Addr()).ticks(t, 5)
	drift := driftOf(ticks)
	t.Logf("memcached's ticks at phases %s (CLOCK_MONOTONIC): %v more than a second apart on average", phases(ticks), drift)
	if drift < minDrift {
		// Skipped even with ZKR_REQUIRE_INTEGRATION=1: the drift is the
		// lateness of memcached's one-second timer on this machine's
		// kernel, which no test can raise, and below minDrift a tick
		// crosses a second boundary too seldom for the time bound.
		t.Skipf("memcached's clock drifts by %v per tick here (under %v): its tick crosses a second boundary every %v or more, too seldom for this test, whatever %s says; the 2 s margin stays, for other machines",
			drift, minDrift, time.Duration(float64(time.Second)/float64(max(drift, 1))*float64(time.Second)).Round(time.Minute), harness.RequireEnv)
	}
	offset := 6 * time.Millisecond // from a start to its ticks' phase; measured at each start
	for start := 1; start <= maxStarts && monotonic() < budget-int64(watchTicks/3)*1e9; start++ {
		at := (time.Second - aimLead - offset + time.Second) % time.Second
		m.Stop(t)
		now := monotonic()
		startAt := now - now%1e9 + int64(at)
		for startAt < now+int64(20*time.Millisecond) {
			startAt += 1e9
		}
		sleepUntil(startAt, true)
		started := monotonic()
		m.Start(t)
		mc := dialMemClock(t, m.Addr())
		ticks := mc.ticks(t, 3)
		offset = (phase(ticks[0].at) - phase(started) + time.Second) % time.Second
		last := ticks[len(ticks)-1]
		lead := time.Second - phase(last.at)
		t.Logf("start %d at phase %.4f: ticks at %s (%v from the start to the ticks' phase): %v before a second boundary",
			start, phase(started).Seconds(), phases(ticks), offset.Round(10*time.Microsecond), lead.Round(10*time.Microsecond))
		if lead < nearest || lead > farthestAt(drift) {
			continue
		}
		markFresh(t, client(t, m.Addr()), keys()...)
		if watch(t, mc, m.Addr(), last, drift, budget) {
			return
		}
	}
	// Not a defect of the lock: the ticks could not be placed within the
	// bound on this machine (see the figures above). But the early expiry
	// was not reproduced: when the run requires it, that fails.
	msg := fmt.Sprintf("no round spanned a jump of memcached's clock within %v (%d starts at most): memcached's start or its drift varied too much here, and the early expiry was not reproduced",
		clockBudget, maxStarts)
	if harness.Required() {
		t.Fatalf("%s (%s=1: the test must reproduce it)", msg, harness.RequireEnv)
	}
	t.Skip(msg)
}

// farthestAt is how far before a second boundary a start's ticks may come
// for the clock, drifting by drift a tick, to cross it within the ticks
// watched (with five to spare): at least farthest. On a loaded machine
// the start's offset varies by tens of milliseconds, so a window as wide
// as the drift allows keeps more of the starts (at 2 ms a tick, 70 ms).
func farthestAt(drift time.Duration) time.Duration {
	return max(farthest, drift*(watchTicks-5))
}

// keys are the rounds' keys.
func keys() []string {
	k := make([]string, roundKeys)
	for i := range k {
		k[i] = fmt.Sprintf("jump-%d", i)
	}
	return k
}

// watch plays a round at each tick after last until memcached's clock
// jumps, or watchTicks pass; true when a clean round spanned the jump.
// A true jump moves the clock by 2 and, a second later, by 1. (A tick
// whose handler reads the clock late, on a busy machine, can move it by 2
// and the next tick by 0: the items written before it live their usual
// time, so that is no test.)
func watch(t *testing.T, mc *memClock, addr string, last tick, drift time.Duration, budget int64) bool {
	t.Helper()
	ctx := ctxT(t)
	type played struct {
		n int
		r *round
	}
	results := make(chan played, watchTicks+1)
	first := last
	var seen []tick
	jump := -1 // the index in seen of the true jump
	// One more tick than watchTicks when the last moved the clock by 2.
	for n := 0; (n < watchTicks || seen[n-1].step == 2) && monotonic() < budget && jump < 0; n++ {
		expect := last.at + 1e9 // ticks come a second apart or later
		go func(n int) {
			results <- played{n, runRound(ctx, addr, keys()[n%roundKeys], expect-int64(acquireLead))}
		}(n)
		next, err := mc.next(last, expect)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, next)
		last = next
		if l := len(seen); l >= 2 && seen[l-2].step == 2 && next.step == 1 && next.at-seen[l-2].at < 1.5e9 {
			jump = l - 2
		}
	}
	rounds := make([]*round, len(seen))
	for range seen {
		p := <-results
		rounds[p.n] = p.r
	}
	var spanned *round
	for n, r := range rounds {
		k := seen[n]
		prev := first.at + first.spread
		if n > 0 {
			prev = seen[n-1].at + seen[n-1].spread
		}
		// The round's first tick is k only if the add went out after the
		// tick before and its answer came before k.
		clean := r.err == nil && r.sent > prev && r.acquired < k.at-k.spread
		t.Logf("round %d (%s): holder added %v before a tick %v; its lease ended %v after the add, the contender was granted %v after it; told first: %v%s",
			n, r.key, ms(r.sent, k.at), k, ms(r.sent, r.told), ms(r.sent, r.granted), r.toldFirst, roundNote(r, clean))
		if r.granted != 0 && !r.toldFirst {
			t.Errorf("round %d: the contender was granted the lock %v after the holder's add, while the holder's lease was live (it ended %v after): two holders",
				n, ms(r.sent, r.granted), ms(r.sent, r.told))
		}
		switch {
		case n == jump && clean && r.granted != 0:
			spanned = r
		case n != jump && k.step == 2:
			t.Logf("round %d: a late read of memcached's clock (+2, then +0 a tick later): not a jump", n)
		}
	}
	switch {
	case spanned != nil:
		r := spanned
		t.Logf("a round spanned a jump after %d ticks (drift %v a tick over them; %v at the first start's measure): the item added %v before the jump expired %v after the add; the holder's lease (TTL %v) had ended %v after it, %v before the contender's grant",
			jump+1, driftOf(append([]tick{first}, seen...)), drift, ms(r.sent, seen[jump].at), ms(r.sent, r.granted),
			memcachedlock.MinTTL, ms(r.sent, r.told), ms(r.told, r.granted))
		return true
	case jump >= 0:
		t.Logf("memcached's clock jumped, but no clean round spanned it: starting again")
	default:
		t.Logf("no jump within %d ticks: starting again", len(seen))
	}
	return false
}

// roundNote says what spoiled a round.
func roundNote(r *round, clean bool) string {
	var s []string
	if r.err != nil {
		s = append(s, fmt.Sprintf("holder: %v", r.err))
	}
	if r.contenderErr != nil {
		s = append(s, fmt.Sprintf("contender: %v", r.contenderErr))
	}
	if !clean && r.err == nil {
		s = append(s, "the add and the tick overlapped")
	}
	if len(s) == 0 {
		return ""
	}
	return " (" + strings.Join(s, "; ") + ")"
}
