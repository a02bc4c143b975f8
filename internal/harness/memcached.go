package harness

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// Memcached is a memcached server for a test: a local memcached process on a
// 127.0.0.1 port, or an address from MEMCACHED_ADDRS.
type Memcached struct{ Server }

// StartMemcached gives t one memcached server, stopped by t.Cleanup. See
// StartMemcachedN.
func StartMemcached(t testing.TB) *Memcached {
	t.Helper()
	return StartMemcachedN(t, 1)[0]
}

// StartMemcachedN gives t n independent memcached servers, each on its own
// free 127.0.0.1 port (TCP only, 64 MB); t.Cleanup stops them. When
// MEMCACHED_ADDRS (comma separated host:port) is set, its first n servers are
// used instead, and t is ended by Unavailable when it lists fewer. Without
// memcached installed t is ended by Unavailable.
func StartMemcachedN(t testing.TB, n int) []*Memcached {
	t.Helper()
	servers := startServers(t, n, "memcached", "MEMCACHED_ADDRS", "memcached", memcachedHint, memcachedArgv, memcachedVersion)
	return wrapServers(servers, func(s Server) *Memcached { return &Memcached{s} })
}

// memcachedArgv is the memcached command line: Loopback TCP only, no UDP.
// memcached refuses to run as root without -u.
func memcachedArgv(bin string, port int, _ string) []string {
	argv := []string{bin, "-l", Loopback, "-p", strconv.Itoa(port), "-U", "0", "-m", "64", "-c", "1024"}
	if os.Geteuid() == 0 {
		argv = append(argv, "-u", "root")
	}
	return argv
}

// memcachedVersion reports nil when addr answers `version` with VERSION.
var memcachedVersion = lineProbe("version\r\n", func(r string) bool { return strings.HasPrefix(r, "VERSION ") })
