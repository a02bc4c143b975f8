package redislock_test

import "github.com/zkrecipes/zkrecipes/internal/testkit/harness"

// exampleRedis starts a redis server for one example and returns its
// address, and the stop that the example defers (the package's TestMain
// checks for leaks and cannot stop what examples start). In your code the
// address is your server's. It panics when no server can be had, as
// zktest.SharedForExample does.
func exampleRedis() (addr string, stop func()) {
	s, stop := harness.ForExample(harness.StartRedis)
	return s.Addr(), stop
}
