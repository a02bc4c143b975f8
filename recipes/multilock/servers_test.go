package multilock_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/multilock"
	"github.com/zkrecipes/zkrecipes/session"
)

// Integration tests: MultiLocks of a ZooKeeper mutex, a Redis lock and a
// memcached lock, on real servers (internal/testkit/harness; required when
// ZKR_REQUIRE_INTEGRATION=1).

const (
	zkRoot   = "/multilock/"
	redisTTL = time.Second
	mcTTL    = 3 * time.Second
)

// servers are one test's: the shared ZooKeeper, its own redis and
// memcached, and an admin client of each to look at what is left.
type servers struct {
	zk      []string
	redis   *harness.Redis
	mc      *harness.Memcached
	zkAdmin *session.Client
	rAdmin  *redis.Client
	mcAdmin *memcache.Client
}

func startServers(t *testing.T) *servers {
	t.Helper()
	s := &servers{zk: zktest.Shared(t), redis: harness.StartRedis(t), mc: harness.StartMemcached(t)}
	s.zkAdmin = zktest.Connect(t, s.zk)
	s.rAdmin = rdb(t, s.redis.Addr())
	s.mcAdmin = mcClient(t, s.mc.Addr())
	return s
}

func rdb(t testing.TB, addr string) *redis.Client {
	t.Helper()
	r := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func mcClient(t testing.TB, addr string) *memcache.Client {
	t.Helper()
	mc := memcache.New(addr)
	t.Cleanup(func() { _ = mc.Close() })
	return mc
}

// zkMutex is the mutex of name, on a session of its own to zk (an address
// of the ZooKeeper or of a proxy in front of it).
func zkMutex(t testing.TB, zk []string, name string, opts ...session.Option) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(zktest.Connect(t, zk, opts...), zkRoot+name)
	require.NoError(t, err)
	return m
}

// redisLock is the Redis lock of name, with a client of its own to addr.
// Its server is a test's new one: the lock's quiet-period marker is
// written first (nothing can have been forgotten there), so that the first
// use does not wait out the TTL.
func redisLock(t testing.TB, addr, name string) *redislock.Lock {
	t.Helper()
	admin := rdb(t, addr)
	info, err := admin.Info(ctxT(t), "server").Result()
	require.NoError(t, err)
	_, rest, _ := strings.Cut(info, "run_id:")
	runID, _, _ := strings.Cut(rest, "\r\n")
	require.NoError(t, admin.Set(ctxT(t), "{"+name+"}:quiet", "0 "+runID, time.Hour).Err())
	c, err := redislock.NewClient(rdb(t, addr))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	l, err := redislock.New(c, name, redislock.WithTTL(redisTTL))
	require.NoError(t, err)
	return l
}

// mcLock is the memcached lock of name, with a client of its own to addr.
// As for redisLock, the marker is written first on the test's new server.
func mcLock(t testing.TB, addr, name string) *memcachedlock.Lock {
	t.Helper()
	err := mcClient(t, addr).Add(&memcache.Item{Key: name + ":alive", Value: []byte("1")})
	if !errors.Is(err, memcache.ErrNotStored) {
		require.NoError(t, err)
	}
	c, err := memcachedlock.NewClient(mcClient(t, addr), memcachedlock.WithServerAddr(addr))
	require.NoError(t, err)
	l, err := memcachedlock.New(c, name, memcachedlock.WithTTL(mcTTL))
	require.NoError(t, err)
	return l
}

// multi is a contender of its own for name's three locks, in the order
// ZooKeeper, Redis, memcached.
func (s *servers) multi(t testing.TB, name string) *multilock.MultiLock {
	t.Helper()
	return newMulti(t, zkMutex(t, s.zk, name), redisLock(t, s.redis.Addr(), name), mcLock(t, s.mc.Addr(), name))
}

// leftovers lists what the three locks of name have on their servers: the
// mutex's nodes, the Redis lock's keys (its fencing counter stays, by
// design) and the memcached item.
func (s *servers) leftovers(t testing.TB, name string) []string {
	t.Helper()
	var left []string
	left = append(left, s.zkLeftovers(t, name)...)
	left = append(left, s.redisLeftovers(t, name)...)
	left = append(left, s.mcLeftovers(t, name)...)
	return left
}

func (s *servers) zkLeftovers(t testing.TB, name string) []string {
	t.Helper()
	kids, _, err := s.zkAdmin.Children(ctxT(t), zkRoot+name)
	if err != nil {
		return nil // no parent: nothing left
	}
	for i, k := range kids {
		kids[i] = "zookeeper " + zkRoot + name + "/" + k
	}
	return kids
}

func (s *servers) redisLeftovers(t testing.TB, name string) []string {
	t.Helper()
	var left []string
	tag := "{" + name + "}"
	n, err := s.rAdmin.Exists(ctxT(t), tag+":queue").Result()
	require.NoError(t, err)
	if n > 0 {
		left = append(left, "redis "+tag+":queue")
	}
	// A lock released with nobody waiting keeps its key as "- <last
	// token> <run id> <witness>" (redislock's doc): that is no holder.
	v, err := s.rAdmin.Get(ctxT(t), tag).Result()
	if !errors.Is(err, redis.Nil) {
		require.NoError(t, err)
		if !strings.HasPrefix(v, "- ") {
			left = append(left, "redis "+tag+" = "+v)
		}
	}
	return left
}

func (s *servers) mcLeftovers(t testing.TB, name string) []string {
	t.Helper()
	if _, err := s.mcAdmin.Get(name); err == nil {
		return []string{"memcached " + name}
	}
	return nil
}

// noLeftovers waits, bounded, until nothing of name is left on any server.
func (s *servers) noLeftovers(t testing.TB, name string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		left := s.leftovers(t, name)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left on the servers after %v: %q", waitLimit, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Every lease of a MultiLock is a *multilock.Lease.
var _ recipes.Lease = (*multilock.Lease)(nil)

// A MultiLock names its members as each names itself (their String).
func TestStringOfMembers(t *testing.T) {
	s := startServers(t)
	m := s.multi(t, "named")
	require.Equal(t, "multilock [mutex "+zkRoot+"named, redislock named, memcachedlock named]", m.String())
}
