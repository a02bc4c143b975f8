package redislock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// A waiter that queues behind a holder of the fast path (whose value has
// no waiter mark: nobody waited when it took the lock) marks the value, so
// that the holder's release hands the lock over: were the mark missing,
// the release would skip the queue (no LPOP) and leave the lock free, for
// a newcomer to take at once while the waiter sleeps until its timer.
func TestWaiterBehindAFastHolder(t *testing.T) {
	r := harness.StartRedis(t)
	admin := rdb(t, r.Addr())
	ctx := ctxT(t)
	witnessable(t, admin)
	l := newLock(t, client(t, r.Addr()), "behind-fast")
	primed, err := l.Acquire(ctx) // the full path: a new lock
	require.NoError(t, err)
	require.NoError(t, primed.Release(ctx))
	holder, err := l.Acquire(ctx)
	require.NoError(t, err)
	v, err := admin.Get(ctx, "{behind-fast}").Result()
	require.NoError(t, err)
	require.False(t, strings.HasSuffix(v, " w"), "the fast path wrote a marked value %q: this test needs an unmarked one", v)

	waiter := acquireAsync(func() (recipes.Lease, error) {
		return newLock(t, client(t, r.Addr()), "behind-fast").Acquire(ctx)
	})
	queuedListening(t, admin, "behind-fast", 1)
	next := handedOn(t, admin, "behind-fast", holder, waiter)
	_, err = newLock(t, client(t, r.Addr()), "behind-fast").TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrLocked, "a newcomer jumped the queue")
	require.NoError(t, next.Release(ctx))
	require.Empty(t, leftovers(t, admin, "behind-fast"))
}

// handedOn releases holder's lease of lock name, checks that the release
// handed the lock on (the key is not left free: a waiter is queued), and
// returns the next holder's lease, from next.
func handedOn(t *testing.T, admin *redis.Client, name string, holder recipes.Lease, next <-chan acquired) recipes.Lease {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, holder.Release(ctx))
	v, err := admin.Get(ctx, "{"+name+"}").Result()
	require.NoError(t, err)
	require.False(t, strings.HasPrefix(v, "- "), "the release left the lock free (%q) with a waiter queued", v)
	got := <-next
	require.NoError(t, got.err)
	return got.lease
}

// A handoff marks the lock it grants, for the waiters still queued behind
// the new holder: its release hands the lock on to the next of them, not
// leaving it free while they sleep on their timers.
func TestHandoffMarksTheLock(t *testing.T) {
	r := harness.StartRedis(t)
	admin := rdb(t, r.Addr())
	ctx := ctxT(t)
	holder, err := newLock(t, client(t, r.Addr()), "handoff-mark").Acquire(ctx)
	require.NoError(t, err)
	var waiters []<-chan acquired
	for i := range 2 {
		waiters = append(waiters, acquireAsync(func() (recipes.Lease, error) {
			return newLock(t, client(t, r.Addr()), "handoff-mark").Acquire(ctx)
		}))
		queuedListening(t, admin, "handoff-mark", int64(i+1))
	}
	first := handedOn(t, admin, "handoff-mark", holder, waiters[0])
	second := handedOn(t, admin, "handoff-mark", first, waiters[1])
	require.NoError(t, second.Release(ctx))
	require.Empty(t, leftovers(t, admin, "handoff-mark"))
}

// A waiter that queues for a released lock in the server's quiet period
// (here a client with a long TTL on a young server, behind the value a
// holder released in this run: one whose renewal took its key back after
// a restart) marks the released value, so that a client with a shorter
// TTL, whose fast path the server's age already allows, does not take it
// from under the queue: it finds the server quiet too.
func TestQuietWaiterMarksAReleasedLock(t *testing.T) {
	r := harness.StartRedis(t)
	admin := rdb(t, r.Addr())
	ctx := ctxT(t)
	witnessable(t, admin) // for the short TTL
	last, err := admin.LastSave(ctx).Result()
	require.NoError(t, err)
	info, err := admin.Info(ctx, "server").Result()
	require.NoError(t, err)
	_, run, _ := strings.Cut(info, "run_id:")
	run, _, _ = strings.Cut(run, "\r\n")
	require.NoError(t, admin.Set(ctx, "{quiet-mark}", fmt.Sprintf("- 5 %s %d", run, last), 24*time.Hour).Err())

	wctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	waiter := acquireAsync(func() (recipes.Lease, error) {
		return newLock(t, client(t, r.Addr()), "quiet-mark", redislock.WithTTL(10*time.Minute)).Acquire(wctx)
	})
	require.Eventually(t, func() bool { n, _ := admin.LLen(ctx, "{quiet-mark}:queue").Result(); return n == 1 }, waitLimit, 5*time.Millisecond)
	lease, err := newLock(t, client(t, r.Addr()), "quiet-mark").TryAcquire(ctx)
	if err == nil {
		require.NoError(t, lease.Release(ctx))
	}
	require.ErrorIs(t, err, redislock.ErrQuiet, "a client with a shorter TTL jumped a waiter queued in the quiet period")
	giveUp()
	require.ErrorIs(t, (<-waiter).err, recipes.ErrNotAcquired)
	require.Empty(t, leftovers(t, admin, "quiet-mark"))
}

// queuedListening waits until lock name's queue holds n waiters, and the
// last one's client listens on the channel its entry names: a release
// hands the lock only to a waiter whose subscription the server counts
// (one confirmed later looks again, on its own).
func queuedListening(t *testing.T, admin *redis.Client, name string, n int64) {
	t.Helper()
	ctx := ctxT(t)
	queue := "{" + name + "}:queue"
	require.Eventually(t, func() bool { got, _ := admin.LLen(ctx, queue).Result(); return got == n }, waitLimit, 5*time.Millisecond)
	entry, err := admin.LIndex(ctx, queue, -1).Result()
	require.NoError(t, err)
	fields := strings.Fields(entry)
	channel := fields[len(fields)-1]
	require.Eventually(t, func() bool {
		n, _ := admin.PubSubNumSub(ctx, channel).Result()
		return n[channel] > 0
	}, waitLimit, 5*time.Millisecond)
}

// A holder whose server restarted without its data takes its key back
// with its renewal (the server is quiet: nobody else can have been
// granted the lock). A waiter may have queued while the key was gone (no
// value to mark then), so the take-back marks the value, and the
// holder's release hands the lock to the waiter: unmarked, it would skip
// the queue and leave the lock free, the waiter asleep on its timer.
func TestTakeBackMarksTheLock(t *testing.T) {
	r := harness.StartRedis(t)
	admin := rdb(t, r.Addr())
	ctx := ctxT(t)
	// A first use with a TTL of a second: the server is quiet for that
	// second only, not for the holder's TTL.
	primer, err := newLock(t, client(t, r.Addr()), "take-back", redislock.WithTTL(time.Second)).Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, primer.Release(ctx))
	p := harness.NewProxy(t, r.Addr())
	holder, err := newLock(t, client(t, p.Addr()), "take-back", redislock.WithTTL(15*time.Second)).Acquire(ctx)
	require.NoError(t, err)

	p.Cut(t) // the holder's renewals wait until the waiter queued
	r.Stop(t)
	r.Start(t)
	waiter := acquireAsync(func() (recipes.Lease, error) {
		return newLock(t, client(t, r.Addr()), "take-back", redislock.WithTTL(10*time.Minute)).Acquire(ctx)
	})
	queuedListening(t, admin, "take-back", 1)
	n, err := admin.Exists(ctx, "{take-back}").Result()
	require.NoError(t, err)
	require.Zero(t, n, "the lock's key came back before the waiter queued")
	p.Restore(t)
	require.Eventually(t, func() bool {
		v, err := admin.Get(ctx, "{take-back}").Result()
		return err == nil && !strings.HasPrefix(v, "- ")
	}, waitLimit, 10*time.Millisecond, "the holder's renewal never took its key back")
	require.NoError(t, holder.Err())
	next := handedOn(t, admin, "take-back", holder, waiter)
	require.NoError(t, next.Release(ctx))
	require.Empty(t, leftovers(t, admin, "take-back"))
}
