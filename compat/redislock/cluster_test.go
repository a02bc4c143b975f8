package redislock_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
)

// clusterClient is a go-redis client of the cluster, closed at t's
// cleanup.
func clusterClient(t testing.TB, c *harness.RedisCluster) *redis.ClusterClient {
	t.Helper()
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// onCluster is a lock client of its own on the cluster.
func onCluster(t testing.TB, c *harness.RedisCluster) *redislock.Client {
	t.Helper()
	lc, err := redislock.NewClient(clusterClient(t, c))
	require.NoError(t, err)
	t.Cleanup(func() { _ = lc.Close() })
	return lc
}

// The contract holds on a Redis Cluster of three masters with a replica
// each, grants sharded.
func TestContractOnACluster(t *testing.T) {
	c := harness.StartRedisCluster(t, 3, 1)
	admin := clusterClient(t, c)
	locktest.Run(t, locktest.Backend{
		New: func(t *testing.T, name string) recipes.Locker {
			return newLock(t, onCluster(t, c), name, redislock.WithTTL(time.Second))
		},
		Lose: func(t *testing.T, name string, _ recipes.Lease) {
			require.NoError(t, admin.Del(ctxT(t), "{"+name+"}").Err())
		},
		Leftovers: func(t *testing.T, name string) []string { return leftovers(t, admin, name) },
		Reentrant: true,
	})
}

// A ClusterClient that would subscribe on replicas is refused: a
// release's SPUBLISH would find no subscriber on the master.
func TestClusterClientOnReplicasRefused(t *testing.T) {
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ReadOnly: true})
	defer func() { _ = r.Close() }()
	_, err := redislock.NewClient(r)
	require.ErrorIs(t, err, recipes.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "ReadOnly")
}

// clusterHandover holds lock name on the cluster with a waiter queued
// behind, runs change (which reshapes the cluster under them), keeps
// holding for longer than a renewal period, and checks that the holder
// lost nothing, the waiter is served at the release, and its token is
// greater.
func clusterHandover(t *testing.T, c *harness.RedisCluster, name string, change func(slot int)) {
	ctx := ctxT(t)
	holderLock := newLock(t, onCluster(t, c), name, redislock.WithTTL(faultTTL))
	waiterLock := newLock(t, onCluster(t, c), name, redislock.WithTTL(faultTTL))
	lease, err := holderLock.Acquire(ctx)
	require.NoError(t, err)
	got := make(chan recipes.Lease, 1)
	go func() {
		l, err := waiterLock.Acquire(ctx)
		assert.NoError(t, err)
		got <- l
	}()
	admin := clusterClient(t, c)
	require.Eventually(t, func() bool { // queued
		n, _ := admin.LLen(ctx, "{"+name+"}:queue").Result()
		return n == 1
	}, waitLimit, 5*time.Millisecond)
	change(c.KeySlot(t, "{"+name+"}"))
	time.Sleep(faultTTL) // three renewal periods, on the reshaped cluster
	require.NoError(t, lease.Err(), "no false loss: %v", context.Cause(lease.Context()))
	select {
	case <-got:
		t.Fatal("the waiter was granted the lock while the holder held it")
	default:
	}
	token, _ := lease.Token()
	require.NoError(t, lease.Release(ctx))
	select {
	case next := <-got:
		require.NotNil(t, next)
		nt, _ := next.Token()
		assert.Greater(t, nt, token)
		require.NoError(t, next.Release(ctx))
	case <-time.After(waitLimit):
		t.Fatal("the waiter was never served")
	}
	assert.Empty(t, leftovers(t, admin, name))
}

// The lock's slot moves to another master while the lock is held and
// waited for: keys and the waiter's sharded subscription move with it.
func TestSlotMovedWhileHeld(t *testing.T) {
	c := harness.StartRedisCluster(t, 3, 1)
	clusterHandover(t, c, "moved", func(slot int) {
		from := c.MasterOfSlot(t, slot)
		for _, n := range c.Nodes() {
			if n != from && n.Role(t) == "master" {
				c.MoveSlot(t, slot, n)
				return
			}
		}
		t.Fatal("no other master")
	})
}

// A planned failover (CLUSTER FAILOVER on the replica of the lock's
// master) while the lock is held and waited for.
func TestPlannedFailoverWhileHeld(t *testing.T) {
	c := harness.StartRedisCluster(t, 3, 1)
	clusterHandover(t, c, "failover", func(slot int) {
		demoted := c.MasterOfSlot(t, slot)
		promoted := c.ReplicaOf(t, demoted)
		c.Failover(t, promoted)
		// Redis let the two clients' grant subscriptions go; go-redis's
		// slot map may still have named the demoted master when they
		// subscribed again: they end on the new master.
		require.Eventually(t, func() bool {
			return len(shardChannels(t, promoted)) == 2 && len(shardChannels(t, demoted)) == 0
		}, waitLimit, 10*time.Millisecond, "the grant subscriptions moved to the new master")
	})
}

// shardChannels lists the shard channels node has subscribers to.
func shardChannels(t *testing.T, node *harness.RedisClusterNode) []string {
	r := redis.NewClient(&redis.Options{Addr: node.Addr()})
	defer func() { _ = r.Close() }()
	chans, err := r.PubSubShardChannels(ctxT(t), "*").Result()
	require.NoError(t, err)
	return chans
}

// The lock's master is killed while the lock is held: its replica takes
// over after the cluster's node timeout. Replication is asynchronous, so
// the lock may or may not have reached the replica: either the holder
// keeps it (its renewals reach the new master), or it is told when a
// renewal finds the lock gone or another's, and a second holder's token
// is greater than its own (what fencing relies on).
func TestMasterKilledWhileHeld(t *testing.T) {
	c := harness.StartRedisCluster(t, 3, 1)
	ctx := ctxT(t)
	const name = "killed"
	lease, err := newLock(t, onCluster(t, c), name, redislock.WithTTL(faultTTL)).Acquire(ctx)
	require.NoError(t, err)
	token, _ := lease.Token()
	told := holdertest.ToldAt(lease)
	c.MasterOfSlot(t, c.KeySlot(t, "{"+name+"}")).Kill(t)
	type grant struct {
		lease recipes.Lease
		at    time.Time
	}
	got := make(chan grant, 1)
	go func() {
		l, err := newLock(t, onCluster(t, c), name, redislock.WithTTL(faultTTL)).Acquire(ctx)
		assert.NoError(t, err)
		got <- grant{l, time.Now()}
	}()
	killed := time.Now()
	var g grant
	select {
	case g = <-got:
	case <-lease.Done(): // told; the lock then goes to the second
		t.Logf("the holder was told %v after the kill", time.Since(killed).Round(time.Millisecond))
	case <-time.After(5 * faultTTL): // the replica had the lock: still held, renewed on it
		t.Log("the lock survived the failover (replicated in time); the holder keeps it")
		require.NoError(t, lease.Release(ctx))
	}
	if g.lease == nil {
		select {
		case g = <-got:
		case <-time.After(waitLimit):
			t.Fatal("the second was never granted the lock")
		}
	}
	t.Logf("second holder granted %v after the kill", g.at.Sub(killed).Round(time.Millisecond))
	require.NotNil(t, g.lease)
	nt, _ := g.lease.Token()
	assert.Greater(t, nt, token, "the second holder's token fences the first out")
	select {
	case <-lease.Done():
	case <-time.After(waitLimit):
		t.Fatal("two live leases: the holder was never told")
	}
	if at := told.Get(); !at.IsZero() {
		t.Logf("holder told %v after the second grant (negative: before): %v",
			at.Sub(g.at).Round(time.Millisecond), context.Cause(lease.Context()))
	}
	require.NoError(t, g.lease.Release(ctx))
}

// A waiter whose subscription is on a replica of the lock's master (its
// client's slot map was stale when it subscribed, as after a failover:
// Redis lets a replica serve SSUBSCRIBE, and a master's SPUBLISH reaches
// its replicas' subscribers without being counted) is never told of a
// grant the lock does not back: the release finds no subscriber on the
// master and lets the lock go, and nothing it publishes there can be
// taken for a grant. Before, it published the grant first and, counting
// nobody, deleted the lock: the waiter held a lock that anyone could
// take.
func TestWaiterSubscribedOnAReplica(t *testing.T) {
	c := harness.StartRedisCluster(t, 3, 1)
	ctx := ctxT(t)
	const name = "replica-sub"
	admin := clusterClient(t, c)
	slot := c.KeySlot(t, "{"+name+"}")
	master := c.MasterOfSlot(t, slot)
	replica := c.ReplicaOf(t, master)
	// The slot's replica named as its master (go-redis sends what is in
	// no slot of the map to any node, and follows the redirection).
	// At the end, the map is put right.
	var skew atomic.Bool
	skew.Store(true)
	skewed := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			nodes := []redis.ClusterNode{{Addr: master.Addr()}, {Addr: replica.Addr()}}
			if skew.Load() {
				nodes[0], nodes[1] = nodes[1], nodes[0]
			}
			return []redis.ClusterSlot{{Start: slot, End: slot, Nodes: nodes}}, nil
		},
	})
	t.Cleanup(func() { _ = skewed.Close() })
	waiterClient, err := redislock.NewClient(skewed)
	require.NoError(t, err)
	t.Cleanup(func() { _ = waiterClient.Close() })

	const lockTTL = 3 * time.Second
	holder, err := newLock(t, onCluster(t, c), name, redislock.WithTTL(lockTTL)).Acquire(ctx)
	require.NoError(t, err)
	token, _ := holder.Token()
	got := make(chan recipes.Lease, 1)
	go func() {
		l, err := newLock(t, waiterClient, name, redislock.WithTTL(lockTTL)).Acquire(ctx)
		assert.NoError(t, err)
		got <- l
	}()
	var channel []string
	require.Eventually(t, func() bool { // queued, and subscribed on the replica
		n, _ := admin.LLen(ctx, "{"+name+"}:queue").Result()
		channel = shardChannels(t, replica)
		return n == 1 && len(channel) == 1
	}, waitLimit, 5*time.Millisecond)
	// The Client keeps trying to move its subscription off the replica
	// (the map it is given says otherwise): a subscription of our own to
	// its channel there stays, and sees what reaches the replica.
	onReplica := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	t.Cleanup(func() { _ = onReplica.Close() })
	seen := onReplica.SSubscribe(ctx, channel[0])
	t.Cleanup(func() { _ = seen.Close() })
	_, err = seen.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, holder.Release(ctx))
	var lease recipes.Lease
	select {
	case lease = <-got:
	case <-time.After(waitLimit):
		t.Fatal("the waiter was never served")
	}
	require.NotNil(t, lease)
	nt, _ := lease.Token()
	assert.Greater(t, nt, token)
	v, err := admin.Get(ctx, "{"+name+"}").Result()
	require.NoError(t, err, "the waiter holds a lock that is not in Redis")
	assert.Equal(t, fmt.Sprint(nt), strings.Fields(v)[1], "the lock's value %q is not the waiter's token %d", v, nt)
	_, err = newLock(t, onCluster(t, c), name).TryAcquire(ctx)
	require.ErrorIs(t, err, recipes.ErrLocked)
	// Every grant that reached the replica names the waiter's token: none
	// was published for a lock the release then deleted. A message
	// published after the waiter holds ends the reading (replication keeps
	// the order).
	require.NoError(t, admin.SPublish(ctx, channel[0], "end").Err())
	for {
		msg, err := seen.ReceiveMessage(ctx)
		require.NoError(t, err)
		if msg.Payload == "end" {
			break
		}
		if f := strings.Fields(msg.Payload); len(f) == 3 {
			assert.Equal(t, fmt.Sprint(nt), f[1], "a grant reached the replica for a lock not set in its name: %q", msg.Payload)
		}
	}
	require.NoError(t, seen.Close())

	// Once go-redis's map names the master, the Client's subscription
	// moves there.
	skew.Store(false)
	require.Eventually(t, func() bool {
		return slices.Contains(shardChannels(t, master), channel[0]) && !slices.Contains(shardChannels(t, replica), channel[0])
	}, waitLimit, 10*time.Millisecond, "the subscription moved to the master")
	require.NoError(t, lease.Release(ctx))
	assert.Empty(t, leftovers(t, admin, name))
}
