package locktest_test

import (
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/recipes/locktest"
)

// A backend runs the suite from one test function of its own, against a
// server its tests start. Here the Redis lock (compat/redislock) does: every
// contender has a client of its own, and the lock is lost the way an
// operator's DEL or an eviction loses it. (A test function needs go test to
// run, so this example is only compiled.)
func Example() {
	testRedisLockContract := func(t *testing.T) {
		addr := os.Getenv("REDIS_ADDR") // a server for the tests alone
		if addr == "" {
			t.Skip("REDIS_ADDR is not set")
		}
		admin := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = admin.Close() })
		keys := func(name string) []string { // the lock's keys that go when it is free
			return []string{"{" + name + "}", "{" + name + "}:queue"}
		}

		locktest.Run(t, locktest.Backend{
			// An independent contender: a client, and connections, of its own.
			New: func(t *testing.T, name string) recipes.Locker {
				rdb := redis.NewClient(&redis.Options{Addr: addr})
				t.Cleanup(func() { _ = rdb.Close() })
				c, err := redislock.NewClient(rdb)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close() })
				l, err := redislock.New(c, name, redislock.WithTTL(time.Second))
				if err != nil {
					t.Fatal(err)
				}
				return l
			},
			// A real fault: the holder's key deleted under it.
			Lose: func(t *testing.T, name string, _ recipes.Lease) {
				if err := admin.Del(t.Context(), keys(name)[0]).Err(); err != nil {
					t.Fatal(err)
				}
			},
			// What is left of the lock on the server once no one holds it.
			Leftovers: func(t *testing.T, name string) []string {
				var left []string
				for _, k := range keys(name) {
					if n, err := admin.Exists(t.Context(), k).Result(); err != nil || n > 0 {
						left = append(left, k)
					}
				}
				return left
			},
			Reentrant: true, // Acquire with a lease's context re-enters
		})
	}
	_ = testRedisLockContract
}
