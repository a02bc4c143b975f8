package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParseReply(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
		rest string
		err  error
	}{
		{in: "+OK\r\n", want: "OK"},
		{in: "-ERR no\r\n", want: redisError("ERR no")},
		{in: ":-12\r\nmore", want: int64(-12), rest: "more"},
		{in: "$5\r\nab\r\nc\r\n", want: "ab\r\nc"},
		{in: "$-1\r\n", want: nil},
		{in: "*-1\r\n", want: nil},
		{in: "*0\r\n", want: []any{}},
		{in: "*2\r\n*2\r\n:1\r\n$1\r\nx\r\n+y\r\n", want: []any{[]any{int64(1), "x"}, "y"}},
		{in: "", err: errPartialReply},
		{in: "+OK", err: errPartialReply},
		{in: "$5\r\nab", err: errPartialReply},
		{in: "*2\r\n:1\r\n", err: errPartialReply},
		{in: "VERSION 1.6\r\n", err: errors.New("not a redis reply")},
	} {
		got, rest, err := parseReply(tc.in)
		switch {
		case tc.err != nil:
			if err == nil || !errors.Is(err, tc.err) && !strings.Contains(err.Error(), tc.err.Error()) {
				t.Errorf("parseReply(%q) = %v, %v; want error %v", tc.in, got, err, tc.err)
			}
		case err != nil || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tc.want) || rest != tc.rest:
			t.Errorf("parseReply(%q) = %#v, %q, %v; want %#v, %q", tc.in, got, rest, err, tc.want, tc.rest)
		}
	}
}

// newClusterClient is a go-redis cluster client of c, closed when t ends.
func newClusterClient(t *testing.T, c *RedisCluster) *redis.ClusterClient {
	t.Helper()
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// newRedisClient is a go-redis client of addr, closed when t ends.
func newRedisClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// sSubscribe subscribes a client of addr to the sharded channel ch and
// waits for the confirmation.
func sSubscribe(t *testing.T, ctx context.Context, addr, ch string) *redis.PubSub {
	t.Helper()
	ps := newRedisClient(t, addr).SSubscribe(ctx, ch)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("SSUBSCRIBE %s on %s: %v", ch, addr, err)
	}
	return ps
}

// masters returns the nodes whose Role is master, in Nodes order.
func masters(t *testing.T, c *RedisCluster) []*RedisClusterNode {
	t.Helper()
	var out []*RedisClusterNode
	for _, n := range c.Nodes() {
		if n.live() && n.Role(t) == "master" {
			out = append(out, n)
		}
	}
	return out
}

func TestRedisCluster(t *testing.T) {
	start := time.Now()
	c := StartRedisCluster(t, 3, 1)
	t.Logf("cluster of 6 healthy %v after the start", time.Since(start).Round(time.Millisecond))
	if got := len(c.Addrs()); got != 6 || len(c.Nodes()) != 6 {
		t.Fatalf("%d addrs, %d nodes", got, len(c.Nodes()))
	}
	ms := masters(t, c)
	if len(ms) != 3 {
		t.Fatalf("%d masters", len(ms))
	}
	ids := map[string]bool{}
	for _, n := range c.Nodes() {
		if !strings.HasPrefix(n.Addr(), Loopback+":") {
			t.Fatalf("node at %s", n.Addr())
		}
		ids[n.ID(t)] = true
	}
	if len(ids) != 6 {
		t.Fatalf("node IDs %v", ids)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := newClusterClient(t, c)
	if err := client.Set(ctx, "plain", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := client.Get(ctx, "plain").Result(); err != nil || got != "v" {
		t.Fatalf("GET plain = %q, %v", got, err)
	}
	slot := c.KeySlot(t, "{mv}lock")
	if c.KeySlot(t, "{mv}queue") != slot {
		t.Fatal("keys with one hash tag in different slots")
	}
	if want, err := client.ClusterKeySlot(ctx, "{mv}lock").Result(); err != nil || int(want) != slot {
		t.Fatalf("KeySlot = %d, go-redis says %d, %v", slot, want, err)
	}

	// WaitHealthy waited until every master lists its replicas: until then
	// a master does not pass SPUBLISH on to them, and Redis 7.0 drops it.
	t.Run("SPublishReachesReplica", func(t *testing.T) {
		owner := c.MasterOfSlot(t, slot)
		ps := sSubscribe(t, ctx, c.ReplicaOf(t, owner).Addr(), "{mv}wake")
		if _, err := redisInt(owner.Addr(), "SPUBLISH", "{mv}wake", "hello"); err != nil {
			t.Fatal(err)
		}
		m, err := ps.ReceiveTimeout(ctx, 10*time.Second)
		if msg, ok := m.(*redis.Message); err != nil || !ok || msg.Payload != "hello" {
			t.Fatalf("the replica's subscriber got %#v, %v", m, err)
		}
	})

	t.Run("MoveSlot", func(t *testing.T) {
		if err := client.Set(ctx, "{mv}lock", "token", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := client.ZAdd(ctx, "{mv}queue", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}).Err(); err != nil {
			t.Fatal(err)
		}
		from := c.MasterOfSlot(t, slot)
		ps := sSubscribe(t, ctx, from.Addr(), "{mv}wake")
		to := ms[slices.IndexFunc(ms, func(n *RedisClusterNode) bool { return n != from })]
		c.MoveSlot(t, slot, to)
		if got := c.MasterOfSlot(t, slot); got != to {
			t.Fatalf("slot %d served by %s after MoveSlot to %s", slot, got, to)
		}
		// A node that loses a slot ends its sharded subscriptions in it.
		m, err := ps.ReceiveTimeout(ctx, 10*time.Second)
		if sub, ok := m.(*redis.Subscription); err != nil || !ok || sub.Kind != "sunsubscribe" {
			t.Fatalf("the old owner's subscriber got %#v, %v; want a sunsubscribe", m, err)
		}
		// The keys are on to, and from redirects.
		if n, err := redisInt(to.Addr(), "EXISTS", "{mv}lock", "{mv}queue"); err != nil || n != 2 {
			t.Fatalf("EXISTS on %s = %d, %v", to, n, err)
		}
		if _, err := redisDo(from.Addr(), "GET", "{mv}lock"); err == nil || !strings.Contains(err.Error(), "MOVED") {
			t.Fatalf("GET on the old owner: %v, want MOVED", err)
		}
		// The client, whose slot map is stale, follows the redirect.
		if got, err := client.Get(ctx, "{mv}lock").Result(); err != nil || got != "token" {
			t.Fatalf("GET {mv}lock = %q, %v", got, err)
		}
		if ttl, err := client.PTTL(ctx, "{mv}lock").Result(); err != nil || ttl <= 0 || ttl > time.Minute {
			t.Fatalf("PTTL {mv}lock = %v, %v: the TTL did not move with the key", ttl, err)
		}
		if got, err := client.ZRange(ctx, "{mv}queue", 0, -1).Result(); err != nil || !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("ZRANGE {mv}queue = %v, %v", got, err)
		}
		// Back again, with the keys, to the first owner.
		c.MoveSlot(t, slot, from)
		if got, err := client.ZCard(ctx, "{mv}queue").Result(); err != nil || got != 2 {
			t.Fatalf("ZCARD {mv}queue after moving back = %d, %v", got, err)
		}
	})

	t.Run("Failover", func(t *testing.T) {
		master := c.MasterOfSlot(t, slot)
		replica := c.ReplicaOf(t, master)
		start := time.Now()
		c.Failover(t, replica)
		t.Logf("CLUSTER FAILOVER: %s master and cluster healthy %v after the command",
			replica, time.Since(start).Round(time.Millisecond))
		if got := c.MasterOfSlot(t, slot); got != replica {
			t.Fatalf("slot %d served by %s after the failover to %s", slot, got, replica)
		}
		if role := master.Role(t); role != "slave" {
			t.Fatalf("old master's role %s", role)
		}
		if got, err := client.Get(ctx, "{mv}lock").Result(); err != nil || got != "token" {
			t.Fatalf("GET {mv}lock after the failover = %q, %v", got, err)
		}
	})

	t.Run("BusMessages", func(t *testing.T) {
		const n = 50
		sent, received := c.BusMessages(t)
		for i := range n {
			if err := client.Publish(ctx, "news", i).Err(); err != nil {
				t.Fatal(err)
			}
		}
		sent2, received2 := c.BusMessages(t)
		// A classic PUBLISH goes from the node that got it to every other
		// node over the bus; gossip only adds to that.
		if least := int64(n * (len(c.Nodes()) - 1)); sent2-sent < least || received2 <= received {
			t.Fatalf("bus messages sent %d -> %d (want +%d or more), received %d -> %d",
				sent, sent2, least, received, received2)
		}
	})
}

func TestRedisClusterNodeControl(t *testing.T) {
	c := StartRedisCluster(t, 3, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := newClusterClient(t, c)
	slot := c.KeySlot(t, "k")
	if err := client.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	master := c.MasterOfSlot(t, slot)
	replica := c.ReplicaOf(t, master)

	// A replica stopped and started rejoins as the same node.
	id := replica.ID(t)
	replica.Stop(t)
	if replica.Running() {
		t.Fatal("running after Stop")
	}
	replica.Start(t)
	c.WaitHealthy(t)
	if got := replica.ID(t); got != id {
		t.Fatalf("ID %s after a restart, was %s", got, id)
	}
	if role := replica.Role(t); role != "slave" {
		t.Fatalf("restarted replica's role %s", role)
	}

	// A paused node answers nothing; resumed, it serves again.
	replica.Pause(t)
	if !replica.Paused() {
		t.Fatal("not Paused after Pause")
	}
	if err := redisPing(replica.Addr()); err == nil {
		t.Fatal("paused node answered PING")
	}
	replica.Resume(t)
	c.WaitHealthy(t)

	// A killed master's replica takes its slots; the master started again
	// comes back as that replica's replica, empty, and syncs.
	start := time.Now()
	master.Kill(t)
	c.WaitHealthy(t)
	t.Logf("master killed: replica serving its slots, cluster healthy %v after the kill",
		time.Since(start).Round(time.Millisecond))
	if got := c.MasterOfSlot(t, slot); got != replica {
		t.Fatalf("slot %d served by %s, want the old replica %s", slot, got, replica)
	}
	// go-redis v9.23 reloads its slot map on a redirect, or every
	// ClusterStateReloadInterval (60s): a dial error to a dead master does
	// not make it look for the new one, so ask it to.
	err := waitFor(nil, "GET k after the failover", 30*time.Second, 50*time.Millisecond, func() error {
		got, err := client.Get(ctx, "k").Result()
		if err != nil {
			client.ReloadState(ctx)
		} else if got != "v" {
			err = fmt.Errorf("GET k = %q", got)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the client found the new master %v after the kill", time.Since(start).Round(time.Millisecond))
	master.Start(t)
	c.WaitHealthy(t)
	t.Logf("the old master back as a replica %v after the kill", time.Since(start).Round(time.Millisecond))
	if role := master.Role(t); role != "slave" {
		t.Fatalf("restarted old master's role %s", role)
	}
	reader := redis.NewClient(&redis.Options{Addr: master.Addr(), OnConnect: func(ctx context.Context, cn *redis.Conn) error {
		return cn.ReadOnly(ctx).Err() // reads on a replica
	}})
	defer reader.Close()
	err = waitFor(nil, "the restarted node synced", 30*time.Second, 50*time.Millisecond, func() error {
		got, err := reader.Get(ctx, "k").Result()
		if err == nil && got != "v" {
			err = fmt.Errorf("GET k = %q", got)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
