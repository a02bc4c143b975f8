package redislock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// givingUp is a waiter, queued behind a holder through a proxy, about to
// give up.
type givingUp struct {
	r       *harness.Redis
	p       *harness.Proxy // between the waiter's Client and Redis
	c       *redislock.Client
	holder  recipes.Lease
	id      string // the waiter's, from its queue entry
	cancel  context.CancelFunc
	outcome <-chan acquired
}

// queueGivingUp starts a holder of name and a waiter through a proxy, and
// returns once the waiter is queued and its Client's subscription is
// counted (a release hands it the lock).
func queueGivingUp(t *testing.T, name string) *givingUp {
	t.Helper()
	g := &givingUp{r: harness.StartRedis(t)}
	g.p = harness.NewProxy(t, g.r.Addr())
	ctx := ctxT(t)
	var err error
	g.holder, err = newLock(t, client(t, g.r.Addr()), name).Acquire(ctx)
	require.NoError(t, err)
	g.c = client(t, g.p.Addr())
	wctx, cancel := context.WithCancel(ctx)
	g.cancel = cancel
	l := newLock(t, g.c, name)
	g.outcome = acquireAsync(func() (recipes.Lease, error) { return l.Acquire(wctx) })
	admin := rdb(t, g.r.Addr())
	var entry []string
	require.Eventually(t, func() bool {
		q, _ := admin.LRange(ctx, "{"+name+"}:queue", 0, -1).Result()
		if len(q) != 1 {
			return false
		}
		entry = strings.Fields(q[0])
		n, _ := admin.PubSubNumSub(ctx, entry[len(entry)-1]).Result()
		return n[entry[len(entry)-1]] > 0
	}, waitLimit, 5*time.Millisecond, "the waiter queued and subscribed")
	g.id = entry[0]
	return g
}

// left is what Redis holds of the waiter: its queue entries, and the lock
// when it is set in its name.
func (g *givingUp) left(t *testing.T, name string) []string {
	t.Helper()
	ctx := ctxT(t)
	admin := rdb(t, g.r.Addr())
	var out []string
	q, err := admin.LRange(ctx, "{"+name+"}:queue", 0, -1).Result()
	require.NoError(t, err)
	for _, e := range q {
		if strings.HasPrefix(e, g.id+" ") {
			out = append(out, "entry "+e)
		}
	}
	if v, _ := admin.Get(ctx, "{"+name+"}").Result(); strings.HasPrefix(v, g.id+" ") {
		out = append(out, "the lock, held in its name")
	}
	return out
}

// A waiter whose context ends leaves nothing in Redis by the time Acquire
// returns: its queue entry is out, and a lock handed to it meanwhile (the
// release reached Redis before its removal) is given back, to the next
// waiter. The removal used to run in the background after the return, so
// that a process that exited then left the entry behind, and a grant
// racing it left the lock on a waiter that was gone, for a TTL.
func TestGivingUpLeavesNothing(t *testing.T) {
	for _, granted := range []bool{false, true} {
		t.Run(map[bool]string{false: "while held", true: "granted meanwhile"}[granted], func(t *testing.T) {
			name := "give-up"
			g := queueGivingUp(t, name)
			ctx := ctxT(t)
			next := acquireAsync(func() (recipes.Lease, error) { return newLock(t, client(t, g.r.Addr()), name).Acquire(ctx) })
			require.Eventually(t, func() bool {
				n, _ := rdb(t, g.r.Addr()).LLen(ctx, "{"+name+"}:queue").Result()
				return n == 2
			}, waitLimit, 5*time.Millisecond, "the next waiter queued")
			// The removal reaches Redis well after the release below: a
			// removal sent after Acquire returned would not be there yet
			// when it returns.
			g.p.LatencyToServer(t, 300*time.Millisecond)
			g.cancel()
			if granted {
				require.NoError(t, g.holder.Release(ctx))
			}
			got := <-g.outcome
			require.ErrorIs(t, got.err, recipes.ErrNotAcquired)
			assert.Empty(t, g.left(t, name), "when Acquire returned")
			if !granted {
				require.NoError(t, g.holder.Release(ctx))
			}
			n := <-next
			require.NoError(t, n.err)
			require.NoError(t, n.lease.Release(ctx))
			assert.Empty(t, leftovers(t, rdb(t, g.r.Addr()), name))
		})
	}
}

// When the removal of a waiter that gives up cannot reach Redis, Acquire
// returns all the same, and the removal goes on in the background:
// Client.Close waits for it (here until Redis can be reached again), or,
// after ttl.CloseWait, stops it and says so.
func TestGiveUpRetriedUntilClose(t *testing.T) {
	for _, back := range []bool{true, false} {
		t.Run(map[bool]string{true: "reached again", false: "never reached"}[back], func(t *testing.T) {
			name := "give-up-later"
			g := queueGivingUp(t, name)
			g.p.Cut(t)
			g.cancel()
			got := <-g.outcome
			require.ErrorIs(t, got.err, recipes.ErrNotAcquired)
			require.NotEmpty(t, g.left(t, name), "the removal could not reach Redis")
			restore := func() { g.p.Restore(t) }
			if !back {
				restore = nil
			}
			err := holdertest.CloseDuring(t, g.c.Close, restore)
			if !back {
				assert.ErrorContains(t, err, "1 clean-up(s) stopped unfinished")
				require.NoError(t, g.holder.Release(ctxT(t)))
				return
			}
			require.NoError(t, err)
			assert.Empty(t, g.left(t, name), "when Close returned")
			require.NoError(t, g.holder.Release(ctxT(t)))
			assert.Empty(t, leftovers(t, rdb(t, g.r.Addr()), name))
		})
	}
}
