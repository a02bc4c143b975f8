package redislock_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
	require.Eventually(t, func() bool { n, _ := admin.LLen(ctx, "{behind-fast}:queue").Result(); return n == 1 }, waitLimit, 5*time.Millisecond)
	require.NoError(t, holder.Release(ctx))
	v, err = admin.Get(ctx, "{behind-fast}").Result()
	require.NoError(t, err)
	require.False(t, strings.HasPrefix(v, "- "), "the release left the lock free (%q) with a waiter queued", v)
	_, err = newLock(t, client(t, r.Addr()), "behind-fast").TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrLocked, "a newcomer jumped the queue")
	next := <-waiter
	require.NoError(t, next.err)
	require.NoError(t, next.lease.Release(ctx))
	require.Empty(t, leftovers(t, admin, "behind-fast"))
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
