package harness

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// waitValue waits (bounded) until GET key on client gives want.
func waitValue(t *testing.T, ctx context.Context, client *redis.Client, key, want string) {
	t.Helper()
	err := waitFor(nil, fmt.Sprintf("GET %s = %q on %s", key, want, client.Options().Addr), 30*time.Second,
		10*time.Millisecond, func() error {
			got, err := client.Get(ctx, key).Result()
			if err == nil && got != want {
				err = fmt.Errorf("GET %s = %q", key, got)
			}
			return err
		})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRedisSentinel(t *testing.T) {
	start := time.Now()
	s := StartRedisSentinel(t, 2, 3)
	t.Logf("primary, 2 replicas and 3 sentinels ready %v after the start", time.Since(start).Round(time.Millisecond))
	nodes := s.Nodes()
	primary, replicas := nodes[0], nodes[1:]
	if got := s.Primary(t); got != primary.Addr() {
		t.Fatalf("Primary = %s, want %s", got, primary.Addr())
	}
	if got := s.SentinelAddrs(); len(got) != 3 || !strings.HasPrefix(got[0], Loopback+":") {
		t.Fatalf("SentinelAddrs = %v", got)
	}
	for _, n := range s.Sentinels() {
		if role, err := redisRole(n.Addr()); err != nil || role != "sentinel" {
			t.Fatalf("sentinel %s: ROLE %q, %v", n.Addr(), role, err)
		}
	}
	if s.ReplicationProxy(t, primary) != nil {
		t.Fatal("the primary has a replication proxy")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pc := newRedisClient(t, primary.Addr())
	rc := []*redis.Client{newRedisClient(t, replicas[0].Addr()), newRedisClient(t, replicas[1].Addr())}
	if err := pc.Set(ctx, "k1", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range rc {
		waitValue(t, ctx, c, "k1", "v1")
	}

	// A blackholed link: the replica behind it lags, the other does not.
	lagging := s.ReplicationProxy(t, replicas[0])
	if lagging == nil || lagging.Upstream() != primary.Addr() {
		t.Fatalf("ReplicationProxy(replica 0) = %v", lagging)
	}
	lagging.Blackhole(t)
	if err := pc.Set(ctx, "k2", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// WAIT counts the replicas that acknowledged the write: only one can.
	if n, err := pc.Wait(ctx, 2, 300*time.Millisecond).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 2 with one link blackholed = %d, %v; want 1", n, err)
	}
	waitValue(t, ctx, rc[1], "k2", "v2")
	if got, err := rc[0].Get(ctx, "k2").Result(); err != redis.Nil {
		t.Fatalf("GET k2 on the lagging replica = %q, %v; want nothing", got, err)
	}
	lagging.Restore(t)
	waitValue(t, ctx, rc[0], "k2", "v2")
	if n, err := pc.Wait(ctx, 2, 10*time.Second).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 after Restore = %d, %v", n, err)
	}

	// The primary killed, the sentinels promote a replica, and a failover
	// client writes to it.
	start = time.Now()
	primary.Kill(t)
	promoted := s.WaitFailover(t, primary.Addr())
	t.Logf("the sentinels promoted %s %v after the kill", promoted, time.Since(start).Round(time.Millisecond))
	if i := slices.IndexFunc(replicas, func(n *RedisNode) bool { return n.Addr() == promoted }); i < 0 {
		t.Fatalf("promoted %s, not a replica", promoted)
	}
	if got := s.Primary(t); got != promoted {
		t.Fatalf("Primary = %s after the failover to %s", got, promoted)
	}
	if s.ReplicationProxy(t, s.Node(promoted)) != nil {
		t.Fatal("the new primary still has a replication proxy")
	}
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName(), SentinelAddrs: s.SentinelAddrs()})
	defer fc.Close()
	if err := fc.Set(ctx, "k3", "v3", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for i, c := range rc {
		if replicas[i].Addr() == promoted {
			waitValue(t, ctx, c, "k3", "v3") // written there
			continue
		}
		// The sentinels point the other replica at the new primary,
		// directly; it then gets the write.
		err := waitFor(nil, "the other replica following the new primary", 30*time.Second, sentinelPoll, func() error {
			if s.ReplicationProxy(t, replicas[i]) != nil {
				return fmt.Errorf("replica %s still replicates through its proxy", replicas[i].Addr())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		waitValue(t, ctx, c, "k3", "v3")
	}

	// The old primary started again is made a replica of the new one.
	start = time.Now()
	primary.Start(t)
	err := waitFor(nil, "the old primary made a replica", 60*time.Second, sentinelPoll, func() error {
		info, err := redisFields(primary.Addr(), "INFO", "replication")
		if err == nil && (info["role"] != "slave" || info["master_link_status"] != "up") {
			err = fmt.Errorf("role %s, master_link_status %s", info["role"], info["master_link_status"])
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the old primary back as a replica %v after its start", time.Since(start).Round(time.Millisecond))
	waitValue(t, ctx, pc, "k3", "v3")
}
