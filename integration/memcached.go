package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Memcached is a memcached server for a test: a local memcached process on a
// 127.0.0.1 port, or an address from MEMCACHED_ADDRS.
type Memcached struct{ s *localServer }

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
	out := make([]*Memcached, len(servers))
	for i, s := range servers {
		out[i] = &Memcached{s}
	}
	return out
}

// Addr is the server's address, "127.0.0.1:port" for local ones; it stays the
// same across Stop and Start.
func (m *Memcached) Addr() string { return m.s.addr }

// External reports whether the server comes from MEMCACHED_ADDRS; then Stop,
// Start and Kill skip the test.
func (m *Memcached) External() bool { return m.s.proc == nil }

// Stop shuts the server down (SIGTERM; SIGKILL when it does not exit in
// time). Its items are lost.
func (m *Memcached) Stop(t testing.TB) { t.Helper(); m.s.stop(t) }

// Start starts a stopped or killed server again on the same port, empty, and
// waits (bounded) until it answers `version`.
func (m *Memcached) Start(t testing.TB) { t.Helper(); m.s.start(t) }

// Kill kills the server with SIGKILL and reaps it.
func (m *Memcached) Kill(t testing.TB) { t.Helper(); m.s.kill(t) }

// memcachedArgv is the memcached command line: loopback TCP only, no UDP.
// memcached refuses to run as root without -u.
func memcachedArgv(bin string, port int, _ string) []string {
	argv := []string{bin, "-l", loopback, "-p", strconv.Itoa(port), "-U", "0", "-m", "64", "-c", "1024"}
	if os.Geteuid() == 0 {
		argv = append(argv, "-u", "root")
	}
	return argv
}

// memcachedVersion reports nil when addr answers `version` with VERSION.
func memcachedVersion(addr string) error {
	reply, err := exchange(addr, "version\r\n", 2*time.Second, func(r string) bool {
		return strings.HasSuffix(r, "\r\n")
	})
	if err != nil {
		return err
	}
	if !strings.HasPrefix(reply, "VERSION ") {
		return fmt.Errorf("version to %s: %q", addr, reply)
	}
	return nil
}
