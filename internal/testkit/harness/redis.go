package harness

import (
	"strconv"
	"testing"
)

// Redis is a redis server for a test: a local redis-server process on a
// 127.0.0.1 port, without persistence, or an address from REDIS_ADDRS.
type Redis struct {
	Server
	tls bool // it listens on TLS alone (StartRedisSecure)
}

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
	return wrapServers(servers, func(s Server) *Redis { return &Redis{Server: s} })
}

// redisArgv is the redis-server command line: Loopback only, no persistence,
// log to stdout (the process log), no config file.
func redisArgv(bin string, port int, dir string) []string {
	return []string{bin,
		"--bind", Loopback, "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--logfile", "",
		"--protected-mode", "yes", "--loglevel", "notice",
	}
}

// redisPing reports nil when addr answers PING with +PONG.
var redisPing = lineProbe("PING\r\n", func(r string) bool { return r == "+PONG\r\n" })
