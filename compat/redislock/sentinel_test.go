package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// sentinelClient is a lock client of its own over redis.NewFailoverClient.
func sentinelClient(t testing.TB, s *harness.RedisSentinel) *redislock.Client {
	t.Helper()
	r := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName(), SentinelAddrs: s.SentinelAddrs()})
	t.Cleanup(func() { _ = r.Close() })
	c, err := redislock.NewClient(r)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The lock through Sentinel, with a primary whose replicas lag (their
// replication links blackholed) when it is killed: without replica
// acknowledgement the lock, written on the primary only, is granted to a
// second client on the promoted replica while the first still trusts its
// lease, until the first's next renewal finds it gone (the window is
// measured and logged); with WithReplicaAck(1, ...) the lagging replicas
// never acknowledge the acquisition, so it is not taken, and nothing is
// granted twice.
func TestSentinelFailoverWithLaggingReplicas(t *testing.T) {
	for _, ack := range []bool{false, true} {
		name := map[bool]string{false: "no-ack", true: "ack"}[ack]
		t.Run(name, func(t *testing.T) {
			s := harness.StartRedisSentinel(t, 2, 3)
			// The sentinels point a replica that replicates from another
			// address than the primary's (its proxy) at the primary, a
			// failover-timeout after they see it: not within this test.
			for _, addr := range s.SentinelAddrs() {
				sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
				require.NoError(t, sc.Set(ctxT(t), s.MasterName(), "failover-timeout", "120000").Err())
				_ = sc.Close()
			}
			// A replica younger than the TTL, promoted, grants nothing
			// until it is a TTL old (it may have forgotten a holder, as a
			// restarted server may): here it must be older, as in
			// production.
			time.Sleep(sentinelTTL)
			var opts []redislock.Option
			if ack {
				opts = append(opts, redislock.WithReplicaAck(1, 100*time.Millisecond))
			}
			holderLock := newLock(t, sentinelClient(t, s), name, append(opts, redislock.WithTTL(sentinelTTL))...)
			// Taken once with the replicas in sync: the quiet marker is on them.
			ctx := ctxT(t)
			warm, err := holderLock.Acquire(ctx)
			require.NoError(t, err)
			require.NoError(t, warm.Release(ctx))
			time.Sleep(100 * time.Millisecond) // replicated

			old := s.Primary(t)
			for _, n := range s.Nodes()[1:] {
				p := s.ReplicationProxy(t, n)
				require.NotNil(t, p, "replica %s replicates through its proxy", n.Addr())
				p.Blackhole(t)
			}
			actx, cancel := context.WithTimeout(ctx, faultTTL)
			lease, err := holderLock.Acquire(actx)
			cancel()
			if ack {
				require.ErrorIs(t, err, recipes.ErrNotAcquired, "no replica acknowledged: not taken")
				t.Logf("not acquired while the replicas lag: %v", err)
			} else {
				require.NoError(t, err)
			}
			var told *holdertest.Moment
			if lease != nil {
				told = holdertest.ToldAt(lease)
			}
			s.Node(old).Kill(t)
			s.WaitFailover(t, old)

			second, err := newLock(t, sentinelClient(t, s), name, append(opts, redislock.WithTTL(sentinelTTL))...).Acquire(ctx)
			require.NoError(t, err)
			granted := time.Now()
			defer func() { _ = second.Release(context.Background()) }()
			if ack {
				return
			}
			select {
			case <-lease.Done():
			case <-time.After(waitLimit):
				t.Fatal("the first holder was never told")
			}
			require.Eventually(t, func() bool { return !told.Get().IsZero() }, waitLimit, time.Millisecond)
			window := told.Get().Sub(granted)
			t.Logf("without replica acknowledgement: granted twice for %v (until the first's renewal found the lock gone: %v)",
				window.Round(time.Millisecond), context.Cause(lease.Context()))
			t1, _ := lease.Token()
			t2, _ := second.Token()
			assert.Greater(t, t2, t1, "the second holder's token fences the first out")
		})
	}
}

// sentinelTTL is the TTL of the Sentinel tests: longer than a failover
// (down-after-milliseconds 1000 and an election), so that the first
// holder still trusts its lease when the second is granted the lock.
const sentinelTTL = 6 * time.Second

// WithReplicaAck refuses values that cannot work.
func TestReplicaAckRefused(t *testing.T) {
	c := client(t, "127.0.0.1:1")
	for _, opt := range []redislock.Option{
		redislock.WithReplicaAck(0, time.Second),
		redislock.WithReplicaAck(1, 0),
		redislock.WithReplicaAck(1, redislock.DefaultTTL/3),
	} {
		_, err := redislock.New(c, "ack", opt)
		require.ErrorIs(t, err, recipes.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "WithReplicaAck")
	}
	_, err := redislock.New(c, "ack", redislock.WithReplicaAck(1, 100*time.Millisecond))
	assert.False(t, errors.Is(err, recipes.ErrInvalidArgument), "%v", err)
}
