package redlock_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/internal/harness"
	"github.com/zkrecipes/zkrecipes/internal/holdertest"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// A holder cut off from every server is told before the successor is
// granted the lock by a majority, by the margin.
func TestHolderToldFirstUnderBlackhole(t *testing.T) {
	servers := harness.StartRedisN(t, 3)
	const ttl = 2 * time.Second
	var proxied []redlock.Redis
	var proxies []*harness.Proxy
	for _, s := range servers {
		p := harness.NewProxy(t, s.Addr())
		r := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = r.Close() })
		proxied, proxies = append(proxied, r), append(proxies, p)
	}
	holder, err := redlock.New(proxied, "blackhole", redlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	successor := newLock(t, servers, "blackhole", redlock.WithTTL(ttl), redlock.WithRetryDelay(10*time.Millisecond))
	holdertest.HolderToldFirst(t, holder, successor, func() {
		for _, p := range proxies {
			p.Blackhole(t)
		}
	}, recipes.DriftMargin(ttl)-10*time.Millisecond)
	for _, p := range proxies {
		p.Restore(t)
	}
}
