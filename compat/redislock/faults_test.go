package redislock_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/ttl"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// faultTTL is the TTL of the holders in these tests.
const faultTTL = 2 * time.Second

// The margin the tests accept: the drift margin less its allowance for the
// client's own scheduling.
var wantMargin = recipes.DriftMargin(faultTTL) - 10*time.Millisecond

// A holder whose connection is blackholed is told before the successor is
// granted the lock, by the margin.
func TestHolderToldFirstUnderBlackhole(t *testing.T) {
	r := harness.StartRedis(t)
	p := harness.NewProxy(t, r.Addr())
	holder := newLock(t, client(t, p.Addr()), "blackhole", redislock.WithTTL(faultTTL))
	successor := newLock(t, client(t, r.Addr()), "blackhole", redislock.WithTTL(faultTTL))
	holdertest.HolderToldFirst(t, holder, successor, func() { p.Blackhole(t) }, wantMargin)
	p.Restore(t)
}

// shortOutage spans one renewal (every third of the TTL less the margin,
// about 650 ms at faultTTL) with room to spare, and leaves the renewal
// retried after it about 1.1 s to be confirmed before the lease's
// deadline: at half the TTL, under a saturated machine the new
// connection and its statement did not always fit in the 0.95 s left.
const shortOutage = faultTTL * 2 / 5

// A short outage (connections refused) does not end a lease: the renewal
// is tried again until the server answers. A long one ends it at its
// deadline, before the successor is granted the lock.
func TestRenewalAcrossAnOutage(t *testing.T) {
	r := harness.StartRedis(t)
	p := harness.NewProxy(t, r.Addr())
	holder := newLock(t, client(t, p.Addr()), "outage", redislock.WithTTL(faultTTL))
	holdertest.ShortOutage(t, holder, func() { p.Cut(t) }, func() { p.Restore(t) }, shortOutage)
	successor := newLock(t, client(t, r.Addr()), "outage", redislock.WithTTL(faultTTL))
	holdertest.HolderToldFirst(t, holder, successor, func() { p.Cut(t) }, wantMargin)
	p.Restore(t)
}

// A holder paused with SIGSTOP cannot be told by any timer while it is
// stopped; its lease's deadline is still before the successor's grant, by
// the margin, and once resumed the holder sees its lease ended at once.
func TestPausedHolder(t *testing.T) {
	r := harness.StartRedis(t)
	h := holdertest.Start(t, fmt.Sprintf("%s|paused|%s", r.Addr(), faultTTL))
	h.Signal(t, syscall.SIGSTOP)
	ctx := ctxT(t)
	lease, err := newLock(t, client(t, r.Addr()), "paused", redislock.WithTTL(faultTTL)).Acquire(ctx)
	require.NoError(t, err)
	granted := time.Now()
	margin := granted.Sub(h.Deadline)
	t.Logf("the paused holder's deadline came %v before the successor's grant", margin.Round(time.Millisecond))
	assert.GreaterOrEqual(t, margin, wantMargin)
	token, _ := lease.Token()
	assert.Greater(t, token, h.Token, "the successor's token fences the paused holder out")

	h.Signal(t, syscall.SIGCONT)
	ended, cause := h.Ended(t)
	t.Logf("resumed holder: lease ended %v after the resume: %s", time.Since(ended).Round(time.Millisecond), cause)
	assert.Contains(t, cause, recipes.ErrLockLost.Error())
	require.NoError(t, lease.Release(ctx))
}

// The key is deleted under the holder (evicted, or an operator): its lease
// ends at its next renewal, well before the TTL would have run out.
func TestKeyDeletedUnderHolder(t *testing.T) {
	r := harness.StartRedis(t)
	admin := rdb(t, r.Addr())
	ctx := ctxT(t)
	const lockTTL = 3 * time.Second
	lease, err := newLock(t, client(t, r.Addr()), "deleted", redislock.WithTTL(lockTTL)).Acquire(ctx)
	require.NoError(t, err)
	deleted := time.Now()
	require.NoError(t, admin.Del(ctx, "{deleted}").Err())
	select {
	case <-lease.Done():
	case <-time.After(waitLimit):
		t.Fatal("the lease did not end")
	}
	took := time.Since(deleted)
	t.Logf("lease ended %v after the delete (renewal every %v)", took.Round(time.Millisecond), lockTTL/3)
	assert.ErrorIs(t, lease.Err(), recipes.ErrLockLost)
	// A renewal found the key gone; the TTL lapsing unrenewed is another cause.
	assert.ErrorIs(t, lease.Err(), ttl.ErrNotOurs, "told by a renewal, not by the TTL")
	assert.ErrorIs(t, lease.Release(ctx), recipes.ErrLockLost)
}

// Redis restarts empty (no persistence) while a lock is held and another
// client keeps trying it: the restarted server grants nothing for a TTL
// (it may have forgotten a holder), the holder's renewal takes its key back
// meanwhile, so its lease goes on, and nobody else is granted the lock
// while it is held. Before the quiet period, a contender was granted the
// lock right after the restart while the holder trusted its lease until
// its next renewal. Tokens keep growing across the restart.
func TestRedisRestartGrantsNoOneElse(t *testing.T) {
	r := harness.StartRedis(t)
	ctx := ctxT(t)
	holder, err := newLock(t, client(t, r.Addr()), "restart", redislock.WithTTL(faultTTL)).Acquire(ctx)
	require.NoError(t, err)
	contender := newLock(t, client(t, r.Addr()), "restart", redislock.WithTTL(faultTTL))
	r.Stop(t)
	r.Start(t)
	restarted := time.Now()
	// Try for two TTLs; release the holder after one.
	var next recipes.Lease
	released := false
	for i := 0; i < 2000 && next == nil && time.Since(restarted) < 2*faultTTL+time.Second; i++ {
		if !released && time.Since(restarted) > faultTTL {
			require.NoError(t, holder.Err(), "the holder's lease survives the restart: its renewals took the key back")
			require.NoError(t, holder.Release(ctx))
			released = true
		}
		lease, err := contender.TryAcquire(ctx)
		if err != nil {
			require.ErrorIs(t, err, recipes.ErrLocked)
			time.Sleep(5 * time.Millisecond)
			continue
		}
		select {
		case <-holder.Done():
		default:
			t.Fatalf("granted to another %v after the restart while the holder still trusted its lease", time.Since(restarted))
		}
		next = lease
	}
	require.NotNil(t, next, "the contender was never granted the freed lock")
	t.Logf("granted to the contender %v after the restart", time.Since(restarted).Round(time.Millisecond))
	ot, _ := holder.Token()
	nt, _ := next.Token()
	assert.Greater(t, nt, ot, "tokens keep growing across a restart without persistence")
	require.NoError(t, next.Release(ctx))
}

// Redis restarts from a snapshot taken before the lock was taken (RDB
// persistence, Debian's default): the quiet-period marker comes back, and
// the lock as it was then, released, with its last token. Both are the
// earlier run's, so the server is quiet all the same: nobody else is
// granted the lock while it is held (a released value of this run would
// be taken at once, with no look at the marker), and the holder's
// renewals take it back.
func TestRedisRestartFromASnapshot(t *testing.T) {
	r := harness.StartRedis(t)
	ctx := ctxT(t)
	admin := rdb(t, r.Addr())
	first, err := newLock(t, client(t, r.Addr()), "snapshot").Acquire(ctx) // writes the marker
	require.NoError(t, err)
	require.NoError(t, first.Release(ctx))
	require.NoError(t, admin.Save(ctx).Err()) // the marker, no lock
	holder, err := newLock(t, client(t, r.Addr()), "snapshot").Acquire(ctx)
	require.NoError(t, err)
	contender := newLock(t, client(t, r.Addr()), "snapshot")
	r.Stop(t)
	r.Start(t)
	n, err := admin.Exists(ctx, "{snapshot}:quiet").Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the snapshot brought the marker back")
	v, err := admin.Get(ctx, "{snapshot}").Result()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(v, "- "), "the snapshot brought the released lock back: %q", v)
	restarted := time.Now()
	for time.Since(restarted) < testTTL+time.Second {
		lease, err := contender.TryAcquire(ctx)
		if err == nil {
			select {
			case <-holder.Done():
			default:
				t.Fatalf("granted to another %v after a restart from a snapshot while the holder still trusted its lease",
					time.Since(restarted))
			}
			require.NoError(t, lease.Release(ctx))
			break
		}
		require.ErrorIs(t, err, recipes.ErrLocked)
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, holder.Err(), "the holder's renewals took its key back")
	require.NoError(t, holder.Release(ctx))
}

// A holder that stops renewing (its process gone) and a Redis restart: a
// waiter is served once the restarted server's quiet period is over.
func TestRedisRestartAfterTheHolderWent(t *testing.T) {
	r := harness.StartRedis(t)
	ctx := ctxT(t)
	gone := redis.NewClient(&redis.Options{Addr: r.Addr()})
	c, err := redislock.NewClient(gone)
	require.NoError(t, err)
	defer c.Close()
	held, err := newLock(t, c, "restart-gone", redislock.WithTTL(faultTTL)).Acquire(ctx)
	require.NoError(t, err)
	r.Stop(t)
	require.NoError(t, gone.Close()) // its renewals fail from now on
	r.Start(t)
	select {
	case <-held.Done():
	case <-time.After(waitLimit):
		t.Fatal("the holder whose client was closed was never told")
	}
	lease, err := newLock(t, client(t, r.Addr()), "restart-gone", redislock.WithTTL(faultTTL)).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, lease.Release(ctx))
}

// Waiters are served in the order they queued.
func TestFIFO(t *testing.T) {
	r := harness.StartRedis(t)
	ctx := ctxT(t)
	first, err := newLock(t, client(t, r.Addr()), "fifo").Acquire(ctx)
	require.NoError(t, err)
	const waiters = 5
	order := make(chan int, waiters)
	leases := make(chan recipes.Lease, waiters)
	for i := range waiters {
		l := newLock(t, client(t, r.Addr()), "fifo")
		go func() {
			lease, err := l.Acquire(ctx)
			if assert.NoError(t, err) {
				order <- i
				leases <- lease
			}
		}()
		// queued before the next one starts
		require.Eventually(t, func() bool {
			n, _ := rdb(t, r.Addr()).LLen(ctx, "{fifo}:queue").Result()
			return n == int64(i+1)
		}, waitLimit, 5*time.Millisecond)
	}
	require.NoError(t, first.Release(ctx))
	for want := range waiters {
		select {
		case got := <-order:
			assert.Equal(t, want, got, "served out of order")
		case <-time.After(waitLimit):
			t.Fatal("a waiter was never served")
		}
		require.NoError(t, (<-leases).Release(context.Background()))
	}
}

// The counter comes back older than the tokens issued since (a restart from
// an older snapshot, a failover to a lagging replica): the next token is
// still above every earlier one.
// A handoff from a lock whose value carries a stale token (a failover to
// a replica that had an older value, an older snapshot) still issues a
// token above every one issued before: the server's clock floors it.
func TestHandoffTokenAboveAStaleValue(t *testing.T) {
	r := harness.StartRedis(t)
	ctx := ctxT(t)
	admin := rdb(t, r.Addr())
	holder, err := newLock(t, client(t, r.Addr()), "stale-value").Acquire(ctx)
	require.NoError(t, err)
	waiter := acquireAsync(func() (recipes.Lease, error) {
		return newLock(t, client(t, r.Addr()), "stale-value").Acquire(ctx)
	})
	require.Eventually(t, func() bool { n, _ := admin.LLen(ctx, "{stale-value}:queue").Result(); return n == 1 }, waitLimit, 5*time.Millisecond)
	v, err := admin.Get(ctx, "{stale-value}").Result()
	require.NoError(t, err)
	id, _, _ := strings.Cut(v, " ")
	// The value an older copy had (with the waiter mark: a copy holds the
	// queue's entry only with the mark its enqueue wrote).
	require.NoError(t, admin.Set(ctx, "{stale-value}", id+" 5 w", redis.KeepTTL).Err())
	require.NoError(t, holder.Release(ctx))
	next := <-waiter
	require.NoError(t, next.err)
	ht, _ := holder.Token()
	nt, _ := next.lease.Token()
	assert.Greater(t, nt, ht)
	require.NoError(t, next.lease.Release(ctx))
}

// A waiter's request that Redis ran twice (go-redis sends it again when
// the reply is lost) queues it twice; when it releases, its own second
// entry is dropped, not granted to itself: the lock is free at once.
func TestDuplicateEntryOfTheReleaserDropped(t *testing.T) {
	r := harness.StartRedis(t)
	ctx := ctxT(t)
	admin := rdb(t, r.Addr())
	holder, err := newLock(t, client(t, r.Addr()), "dup").Acquire(ctx)
	require.NoError(t, err)
	waiter := acquireAsync(func() (recipes.Lease, error) {
		return newLock(t, client(t, r.Addr()), "dup").Acquire(ctx)
	})
	require.Eventually(t, func() bool { n, _ := admin.LLen(ctx, "{dup}:queue").Result(); return n == 1 }, waitLimit, 5*time.Millisecond)
	entry, err := admin.LIndex(ctx, "{dup}:queue", 0).Result()
	require.NoError(t, err)
	require.NoError(t, admin.RPush(ctx, "{dup}:queue", entry).Err()) // as a second run of the same request leaves it
	require.NoError(t, holder.Release(ctx))
	next := <-waiter
	require.NoError(t, next.err)
	require.NoError(t, next.lease.Release(ctx))
	third, err := newLock(t, client(t, r.Addr()), "dup").TryAcquire(ctx)
	require.NoError(t, err, "the lock is free once its holder released")
	require.NoError(t, third.Release(ctx))
	assert.Empty(t, leftovers(t, admin, "dup"))
}

// acquired is the outcome of an Acquire run in the background.
type acquired struct {
	lease recipes.Lease
	err   error
}

// acquireAsync runs acquire in the background.
func acquireAsync(acquire func() (recipes.Lease, error)) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := acquire()
		ch <- acquired{l, err}
	}()
	return ch
}

func TestTokensAboveAStaleCounter(t *testing.T) {
	r := harness.StartRedis(t)
	ctx := ctxT(t)
	l := newLock(t, client(t, r.Addr()), "stale")
	first, err := l.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, first.Release(ctx))
	require.NoError(t, rdb(t, r.Addr()).Set(ctx, "{stale}:fence", "1000", 0).Err())
	next, err := l.Acquire(ctx)
	require.NoError(t, err)
	ft, _ := first.Token()
	nt, _ := next.Token()
	assert.Greater(t, nt, ft)
	require.NoError(t, next.Release(ctx))
}

// A waiter whose Client is closed while it waits gets no grants: it still
// gets the lock once it is released, woken by its timer (within the
// holder's TTL). A lease held goes on and re-enters; a lock of the closed
// Client takes the lock no more.
func TestWaitAfterClientClosed(t *testing.T) {
	r := harness.StartRedis(t)
	ctx := ctxT(t)
	holder, err := newLock(t, client(t, r.Addr()), "closed", redislock.WithTTL(time.Second)).Acquire(ctx)
	require.NoError(t, err)
	c := client(t, r.Addr())
	waiter := newLock(t, c, "closed", redislock.WithTTL(time.Second))
	got := make(chan error, 1)
	go func() {
		lease, err := waiter.Acquire(ctx)
		if err == nil {
			err = lease.Release(ctx)
		}
		got <- err
	}()
	admin := rdb(t, r.Addr())
	require.Eventually(t, func() bool { // queued
		n, _ := admin.LLen(ctx, "{closed}:queue").Result()
		return n == 1
	}, waitLimit, 5*time.Millisecond)
	other := newLock(t, c, "closed-held", redislock.WithTTL(time.Second))
	held, err := other.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	again, err := other.Acquire(held.Context()) // a lease held goes on, and re-enters
	require.NoError(t, err, "a held lease re-enters after Close")
	require.NoError(t, again.Release(ctx))
	require.NoError(t, held.Release(ctx))
	for _, late := range []func(context.Context) (recipes.Lease, error){waiter.Acquire, waiter.TryAcquire} {
		_, err := late(ctx)
		require.ErrorIs(t, err, recipes.ErrNotAcquired)
		require.ErrorIs(t, err, redislock.ErrClosed)
	}
	require.NoError(t, holder.Release(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(waitLimit):
		t.Fatal("the waiter of a closed Client never got the lock")
	}
}

// Redis restarts, empty, while a waiter waits: its connections and its
// subscription are lost with the queue. It goes on trying (a timer, then
// attempts that fail until Redis is back, then the restarted server's
// quiet period) and takes the lock once the holder, whose renewals took
// its key back, releases it.
func TestWaiterAcrossARedisRestart(t *testing.T) {
	r := harness.StartRedis(t)
	ctx := ctxT(t)
	holder, err := newLock(t, client(t, r.Addr()), "restart-wait", redislock.WithTTL(faultTTL)).Acquire(ctx)
	require.NoError(t, err)
	waiter := newLock(t, client(t, r.Addr()), "restart-wait", redislock.WithTTL(faultTTL))
	got := make(chan recipes.Lease, 1)
	go func() {
		lease, err := waiter.Acquire(ctx)
		assert.NoError(t, err)
		got <- lease
	}()
	admin := rdb(t, r.Addr())
	require.Eventually(t, func() bool { // queued
		n, _ := admin.LLen(ctx, "{restart-wait}:queue").Result()
		return n == 1
	}, waitLimit, 5*time.Millisecond)
	r.Stop(t)
	r.Start(t)
	time.Sleep(faultTTL) // the quiet period, and renewals that take the key back
	require.NoError(t, holder.Err(), "the holder's lease survives the restart")
	require.NoError(t, holder.Release(ctx))
	select {
	case lease := <-got:
		require.NotNil(t, lease)
		require.NoError(t, lease.Release(ctx))
	case <-time.After(waitLimit):
		t.Fatal("the waiter never took the lock after the restart")
	}
}
