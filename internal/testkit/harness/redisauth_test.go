package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A password-protected cluster: a client without the password is refused
// (NOAUTH), one with it reads what another wrote, and the harness's own
// commands (the health checks, a manual failover of a master to its
// replica, which needs masterauth) work through it.
func TestRedisClusterSecure(t *testing.T) {
	c := StartRedisClusterSecure(t, 3, 1, RedisSecurity{Password: "c-s3cret"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	open := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	defer open.Close()
	if err := open.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("SET without the password: %v", err)
	}
	authed := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Password: "c-s3cret"})
	defer authed.Close()
	if err := authed.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	master := c.MasterOfSlot(t, c.KeySlot(t, "k"))
	c.Failover(t, c.ReplicaOf(t, master))
	if got, err := authed.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET after the failover: %q, %v", got, err)
	}
}

// A password-protected primary and replicas behind sentinels: a client
// without the password is refused, one with it is served, and the
// sentinels, which monitor the data nodes with it, fail the primary over
// when it dies.
func TestRedisSentinelSecure(t *testing.T) {
	s := StartRedisSentinelSecure(t, 1, 3, RedisSecurity{Password: "s-s3cret"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := func(password string) *redis.Client {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName(), SentinelAddrs: s.SentinelAddrs(), Password: password})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	if err := client("").Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
		t.Fatalf("SET without the password: %v", err)
	}
	if err := client("s-s3cret").Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	primary := s.Nodes()[0]
	primary.Kill(t)
	promoted := s.WaitFailover(t, primary.Addr())
	if promoted != s.Nodes()[1].Addr() {
		t.Fatalf("promoted %s, want the replica %s", promoted, s.Nodes()[1].Addr())
	}
}

// Password-protected sentinels (requirepass, and an ACL user) in front of
// a password-protected primary and replica: a sentinel asked without the
// password, or with a wrong one, refuses; a failover client with the
// sentinels' password (or the user's) and the data nodes' is served; the
// sentinels, which give each other the password, agree to fail the
// primary over when it dies; and a restarted sentinel asks for it again.
func TestRedisSentinelAuth(t *testing.T) {
	s := StartRedisSentinelAuth(t, 1, 3, RedisSecurity{Password: "d-s3cret"},
		RedisSecurity{Password: "s-s3cret", Users: []string{"watcher on >w-s3cret allchannels +@all"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sentinel := s.SentinelAddrs()[0]
	for _, tc := range []struct{ user, password, want string }{
		{"", "", "NOAUTH"},
		{"", "d-s3cret", "WRONGPASS"},
		{"watcher", "s-s3cret", "WRONGPASS"},
	} {
		c := redis.NewSentinelClient(&redis.Options{Addr: sentinel, Username: tc.user, Password: tc.password})
		_, err := c.GetMasterAddrByName(ctx, s.MasterName()).Result()
		_ = c.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("SENTINEL GET-MASTER-ADDR-BY-NAME as %q with %q: %v, want %s", tc.user, tc.password, err, tc.want)
		}
	}
	for _, user := range []struct{ name, password string }{{"", "s-s3cret"}, {"watcher", "w-s3cret"}} {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName(), SentinelAddrs: s.SentinelAddrs(),
			SentinelUsername: user.name, SentinelPassword: user.password, Password: "d-s3cret"})
		err := c.Set(ctx, "k", "v", 0).Err()
		_ = c.Close()
		if err != nil {
			t.Fatalf("SET through the sentinels as %q: %v", user.name, err)
		}
	}
	primary := s.Nodes()[0]
	primary.Kill(t)
	if promoted := s.WaitFailover(t, primary.Addr()); promoted != s.Nodes()[1].Addr() {
		t.Fatalf("promoted %s, want the replica %s", promoted, s.Nodes()[1].Addr())
	}
	restarted := s.Sentinels()[0]
	restarted.Stop(t)
	restarted.Start(t)
	if got := lines(t, restarted.Addr(), nil, "PING\r\nAUTH s-s3cret\r\nPING\r\n", 3); !strings.HasPrefix(got[0], "-NOAUTH ") || got[2] != "+PONG" {
		t.Fatalf("a restarted sentinel: %q", got)
	}
}
