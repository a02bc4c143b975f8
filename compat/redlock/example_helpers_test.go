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
