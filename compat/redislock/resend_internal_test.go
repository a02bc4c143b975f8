package redislock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/internal/grants"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// A waiter's queuing request that Redis ran twice (go-redis sends a
// command again when its connection broke before the reply) leaves one
// entry, not a second one behind the waiters queued in between. The
// second entry was once served after the waiter had been served and gone:
// the release set the lock in the name of a waiter that no longer waited
// and told its client, which had nobody to give it to, and the lock
// stayed held by nobody for a whole TTL.
func TestResentQueuingRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		// resend makes the waiter's request from its entry in the
		// queue: its arguments, as go-redis sends them both times.
		resend func(t *testing.T, entry string) (args []any)
	}{
		{"first attempt", func(t *testing.T, entry string) []any {
			id, ttl, stamp, pub, channel := splitEntry(t, entry)
			return []any{id, ttl, "1", 0, pub, channel, stamp, ""} // waitTTL set below
		}},
		{"refreshing attempt", func(t *testing.T, entry string) []any {
			id, ttl, _, pub, channel := splitEntry(t, entry)
			return []any{id, ttl, "1", 0, pub, channel, grants.Stamp(time.Now()), entry}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := harness.StartRedis(t).Addr()
			const lockTTL = 30 * time.Second // a stall would outlast the test
			shortQuiet(t, addr, "resent")
			locks := make([]*Lock, 3) // the holder, the waiter, one queued behind it
			for i := range locks {
				var err error
				locks[i], err = New(newClient(t, addr), "resent", WithTTL(lockTTL))
				require.NoError(t, err)
			}
			admin := locks[0].c.r.(*redis.Client)
			queue := func() []string {
				q, err := admin.LRange(context.Background(), locks[0].keys[2], 0, -1).Result()
				require.NoError(t, err)
				return q
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			holder, err := locks[0].Acquire(ctx)
			require.NoError(t, err)
			leases := make([]chan recipes.Lease, 3)
			for i := 1; i < 3; i++ {
				leases[i] = make(chan recipes.Lease, 1)
				go func() {
					lease, err := locks[i].Acquire(ctx)
					assert.NoError(t, err)
					leases[i] <- lease
				}()
				require.Eventually(t, func() bool { return len(queue()) == i }, 10*time.Second, time.Millisecond, "queued in turn")
			}

			// The waiter's request, run twice, as a resend does.
			args := tc.resend(t, queue()[0])
			args[3] = locks[1].waitTTL().Milliseconds()
			for range 2 {
				_, err := acquireScript.Run(ctx, admin, locks[1].keys, args...).Result()
				require.NoError(t, err)
			}
			assert.Len(t, queue(), 2, "one entry per waiter")

			require.NoError(t, holder.Release(ctx))
			for i := 1; i < 3; i++ {
				lease := <-leases[i]
				require.NotNil(t, lease)
				require.NoError(t, lease.Release(ctx))
			}
			free, err := locks[0].TryAcquire(ctx)
			require.NoError(t, err, "the lock is free once its last waiter released it")
			require.NoError(t, free.Release(ctx))
			assert.Empty(t, queue())
		})
	}
}

// splitEntry is the fields of a queue entry: id, TTL, stamp, publishing
// command, channel.
func splitEntry(t *testing.T, entry string) (id, ttl, stamp, pub, channel string) {
	f := strings.Fields(entry)
	require.Len(t, f, 5, "entry %q", entry)
	return f[0], f[1], f[2], f[3], f[4]
}

// shortQuiet sets the quiet period of lock name on a new server (which
// grants nothing for the first user's TTL after it started: it may have
// forgotten a holder) to a second, with a first use of that TTL.
func shortQuiet(t *testing.T, addr, name string) {
	t.Helper()
	prime, err := New(newClient(t, addr), name, WithTTL(time.Second))
	require.NoError(t, err)
	primed, err := prime.Acquire(context.Background())
	require.NoError(t, err)
	require.NoError(t, primed.Release(context.Background()))
}
