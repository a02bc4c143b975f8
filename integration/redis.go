package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Redis is a redis server for a test: a local redis-server process on a
// 127.0.0.1 port, without persistence, or an address from REDIS_ADDRS.
type Redis struct{ s *localServer }

// StartRedis gives t one redis server, stopped by t.Cleanup. See StartRedisN.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	return StartRedisN(t, 1)[0]
}

// StartRedisN gives t n independent redis servers (as Redlock wants), each on
// its own free 127.0.0.1 port with its own temp dir, no RDB snapshots and no
// AOF; t.Cleanup stops them and removes the dirs. When REDIS_ADDRS (comma
// separated host:port) is set, its first n servers are used instead, and t is
// ended by Unavailable when it lists fewer. Without redis-server installed t
// is ended by Unavailable.
func StartRedisN(t testing.TB, n int) []*Redis {
	t.Helper()
	servers := startServers(t, n, "redis", "REDIS_ADDRS", "redis-server", redisHint, redisArgv, redisPing)
	out := make([]*Redis, len(servers))
	for i, s := range servers {
		out[i] = &Redis{s}
	}
	return out
}

// Addr is the server's address, "127.0.0.1:port" for local ones; it stays the
// same across Stop and Start.
func (r *Redis) Addr() string { return r.s.addr }

// External reports whether the server comes from REDIS_ADDRS; then Stop,
// Start and Kill skip the test.
func (r *Redis) External() bool { return r.s.proc == nil }

// Stop shuts the server down (SIGTERM; SIGKILL when it does not exit in
// time). Its data is lost: there is no persistence.
func (r *Redis) Stop(t testing.TB) { t.Helper(); r.s.stop(t) }

// Start starts a stopped or killed server again on the same port, empty, and
// waits (bounded) until it answers PING.
func (r *Redis) Start(t testing.TB) { t.Helper(); r.s.start(t) }

// Kill kills the server with SIGKILL and reaps it.
func (r *Redis) Kill(t testing.TB) { t.Helper(); r.s.kill(t) }

// redisArgv is the redis-server command line: loopback only, no persistence,
// log to stdout (the process log), no config file.
func redisArgv(bin string, port int, dir string) []string {
	return []string{bin,
		"--bind", loopback, "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--logfile", "",
		"--protected-mode", "yes", "--loglevel", "notice",
	}
}

// redisPing reports nil when addr answers PING with +PONG.
func redisPing(addr string) error {
	reply, err := exchange(addr, "PING\r\n", 2*time.Second, func(r string) bool {
		return strings.HasSuffix(r, "\r\n")
	})
	if err != nil {
		return err
	}
	if reply != "+PONG\r\n" {
		return fmt.Errorf("PING to %s: %q", addr, reply)
	}
	return nil
}
