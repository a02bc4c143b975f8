package redlock_test

import (
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// exampleRedis starts n redis servers for one example and returns their
// addresses, and the stop that the example defers (the package's TestMain
// checks for leaks and cannot stop what examples start). In your code the
// addresses are your servers'. It panics when no server can be had, as
// zktest.SharedForExample does.
func exampleRedis(n int) (addrs []string, stop func()) {
	servers, stop := harness.ForExample(func(t testing.TB) []*harness.Redis { return harness.StartRedisN(t, n) })
	for _, r := range servers {
		addrs = append(addrs, r.Addr())
	}
	return addrs, stop
}

// exampleSecureRedis is exampleRedis for servers that ask for a password
// (their default user's, which the example does not use) and have the ACL
// users given (redis.conf "user" lines without the word).
func exampleSecureRedis(n int, users ...string) (addrs []string, stop func()) {
	servers, stop := harness.ForExample(func(t testing.TB) []*harness.Redis {
		out := make([]*harness.Redis, n)
		for i := range out {
			out[i] = harness.StartRedisSecure(t, harness.RedisSecurity{Password: "admin-secret", Users: users})
		}
		return out
	})
	for _, r := range servers {
		addrs = append(addrs, r.Addr())
	}
	return addrs, stop
}
