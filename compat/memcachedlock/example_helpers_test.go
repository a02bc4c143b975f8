package memcachedlock_test

import (
	"os"
	"testing"

	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// exampleMemcached starts a memcached server for one example and returns its
// address, and the stop that the example defers (the package's TestMain
// checks for leaks and cannot stop what examples start). In your code the
// address is your server's. It panics when no server can be had, as
// zktest.SharedForExample does.
func exampleMemcached() (addr string, stop func()) {
	s, stop := harness.ForExample(harness.StartMemcached)
	return s.Addr(), stop
}

// exampleSecureMemcached starts, for one example, a memcached that speaks
// TLS alone, with a certificate of a CA made for it, and asks each
// connection to authenticate as one of users (user name to password). It
// returns the server's address, the CA's certificate file (in your code,
// your server's CA), and the stop the example defers. It panics when no
// server can be had.
func exampleSecureMemcached(users map[string]string) (addr, caFile string, stop func()) {
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
	cert, err := ca.IssueErr("memcached", harness.Loopback)
	must(err)
	s, stopServer := harness.ForExample(func(t testing.TB) *harness.Memcached {
		return harness.StartMemcachedSecure(t, harness.MemcachedSecurity{TLS: cert, Users: users})
	})
	return s.Addr(), ca.CertFile, func() { stopServer(); _ = os.RemoveAll(dir) }
}

// must panics with err, if any.
func must(err error) {
	if err != nil {
		panic(err)
	}
}
