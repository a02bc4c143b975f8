package harness

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
// free 127.0.0.1 port (TCP only, 64 MB, evictions off: -M, as
// compat/memcachedlock requires); t.Cleanup stops them. When
// MEMCACHED_ADDRS (comma separated host:port) is set, its first n servers
// are used instead (run them with -M too), and t is ended by Unavailable
// when it lists fewer. Without memcached installed t is ended by
// Unavailable.
func StartMemcachedN(t testing.TB, n int) []*Memcached {
	t.Helper()
	servers := startServers(t, n, "memcached", "MEMCACHED_ADDRS", "memcached", memcachedHint,
		memcachedArgv(megabytes, "-M"), memcachedVersion)
	return wrapServers(servers, func(s Server) *Memcached { return &Memcached{s} })
}

// StartMemcachedEvicting gives t a local memcached that evicts when its mb
// megabytes of item memory are full (memcached's default: no -M), for
// tests of what eviction does; t.Cleanup stops it. MEMCACHED_ADDRS is not
// used: its servers' settings are not the test's to choose.
func StartMemcachedEvicting(t testing.TB, mb int) *Memcached {
	t.Helper()
	const noEnv = "" // os.Getenv("") is empty: always a local process
	servers := startServers(t, 1, "memcached", noEnv, "memcached", memcachedHint, memcachedArgv(mb), memcachedVersion)
	return wrapServers(servers, func(s Server) *Memcached { return &Memcached{s} })[0]
}

// StartMemcachedRestartable gives t a local memcached, as StartMemcached's
// (64 MB, evictions off, a free 127.0.0.1 port), that keeps its items,
// its CAS counter and its clock in a memory file of its temp dir (-e)
// when StopWarm stops it, and takes them back at Start: a warm restart.
// Stop and Kill lose them (a cold restart). t.Cleanup stops it.
// MEMCACHED_ADDRS is not used: the test needs to restart the server.
func StartMemcachedRestartable(t testing.TB) *Memcached {
	t.Helper()
	const noEnv = "" // os.Getenv("") is empty: always a local process
	argv := func(bin string, port int, dir string) []string {
		return memcachedArgv(megabytes, "-M", "-e", filepath.Join(dir, "memory"))(bin, port, dir)
	}
	servers := startServers(t, 1, "memcached", noEnv, "memcached", memcachedHint, argv, memcachedVersion)
	return wrapServers(servers, func(s Server) *Memcached { return &Memcached{s} })[0]
}

// StopWarm stops the server with SIGUSR1, on which memcached shuts down
// gracefully: one started by StartMemcachedRestartable saves its memory
// file first, and Start restores it; others lose their items, as with
// Stop. It returns in the next second of the wall clock: memcached
// refuses to restore a memory file saved within the current second
// (restart incompatible due to setting for [stop_time]).
func (m *Memcached) StopWarm(t testing.TB) {
	t.Helper()
	m.s.stopWith(t, syscall.SIGUSR1)
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
}

// megabytes is the item memory of StartMemcachedN's servers.
const megabytes = 64

// memcachedArgv returns the memcached command line: Loopback TCP only, no
// UDP, mb megabytes of item memory, and extra. memcached refuses to run as
// root without -u.
func memcachedArgv(mb int, extra ...string) func(bin string, port int, _ string) []string {
	return func(bin string, port int, _ string) []string {
		argv := []string{bin, "-l", Loopback, "-p", strconv.Itoa(port), "-U", "0", "-m", strconv.Itoa(mb), "-c", "1024"}
		argv = append(argv, extra...)
		if os.Geteuid() == 0 {
			argv = append(argv, "-u", "root")
		}
		return argv
	}
}

// memcachedVersion reports nil when addr answers `version` with VERSION.
var memcachedVersion = lineProbe("version\r\n", func(r string) bool { return strings.HasPrefix(r, "VERSION ") })
