package redislock_test

import (
	"os"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// exampleRedis starts a redis server for one example and returns its
// address, and the stop that the example defers (the package's TestMain
// checks for leaks and cannot stop what examples start). In your code the
// address is your server's. It panics when no server can be had, as
// zktest.SharedForExample does.
func exampleRedis() (addr string, stop func()) {
	s, stop := harness.ForExample(harness.StartRedis)
	return s.Addr(), stop
}

// exampleSecureRedis starts, for one example, a redis that asks for a
// password (its default user's, which the example does not use), has the
// ACL users given (redis.conf "user" lines without the word), and speaks
// TLS alone, with a certificate of a CA made for it. It returns the
// server's address, the CA's certificate file (in your code, your
// servers' CA), and the stop the example defers. It panics when no server
// can be had.
func exampleSecureRedis(users ...string) (addr, caFile string, stop func()) {
	dir, err := os.MkdirTemp("", "zkr-example-ca-")
	must(err)
	defer func() {
		if r := recover(); r != nil {
			_ = os.RemoveAll(dir)
			panic(r)
		}
	}()
	ca, err := harness.NewCAIn(dir, "example CA")
	must(err)
	cert, err := ca.IssueErr("redis", harness.Loopback)
	must(err)
	s, stopServer := harness.ForExample(func(t testing.TB) *harness.Redis {
		return harness.StartRedisSecure(t, harness.RedisSecurity{Password: "admin-secret", Users: users, TLS: cert, CA: ca})
	})
	return s.TLSAddr(), ca.CertFile, func() { stopServer(); _ = os.RemoveAll(dir) }
}

// must panics with err, if any.
func must(err error) {
	if err != nil {
		panic(err)
	}
}
