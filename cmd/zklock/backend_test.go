package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/memcachedlock"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/compat/redlock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// envScript prints what zklock put in COMMAND's environment ("-" when
// unset).
const envScript = `echo "path=$ZKLOCK_PATH"; echo "node=${ZKLOCK_NODE--}"; echo "token=${ZKLOCK_TOKEN--}"`

func runEnv(t *testing.T, args ...string) map[string]string {
	t.Helper()
	code, p := runZklock(t, append(args, "--", "sh", "-c", envScript)...)
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(p.stdout.String()), "\n") {
		k, v, _ := strings.Cut(line, "=")
		out[k] = v
	}
	return out
}

// The same command runs under a lock on each backend; a backend with no
// fencing token (Redlock) leaves ZKLOCK_TOKEN out, and only ZooKeeper has a
// node.
func TestBackends(t *testing.T) {
	r := harness.StartRedisN(t, 3)
	m := harness.StartMemcached(t)
	for _, tc := range []struct {
		name  string
		args  []string
		token bool
	}{
		{"redis", []string{"--backend", "redis", "--redis", r[0].Addr(), "--ttl", "2s"}, true},
		{"redlock", []string{"--backend", "redlock", "--redis", r[0].Addr() + "," + r[1].Addr() + "," + r[2].Addr(), "--ttl", "2s"}, false},
		{"redis with several servers is Redlock", []string{"--backend", "redis", "--redis", r[0].Addr() + "," + r[1].Addr() + "," + r[2].Addr(), "--ttl", "2s"}, false},
		{"memcached", []string{"--backend", "memcached", "--memcached", m.Addr(), "--ttl", "3s"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := lockPath(t)
			env := runEnv(t, append(tc.args, path)...)
			assert.Equal(t, path, env["path"])
			assert.Equal(t, "-", env["node"], "no node outside ZooKeeper")
			if !tc.token {
				assert.Equal(t, "-", env["token"], "no fencing token: none is given")
				return
			}
			first, err := strconv.ParseInt(env["token"], 10, 64)
			require.NoError(t, err)
			env = runEnv(t, append(tc.args, path)...)
			second, err := strconv.ParseInt(env["token"], 10, 64)
			require.NoError(t, err)
			assert.Greater(t, second, first, "tokens grow from holder to holder")
		})
	}
}

// The command runs under a lock on a Redis Cluster, and on a master found
// through Sentinel with a replica's acknowledgement.
func TestClusterAndSentinelBackends(t *testing.T) {
	c := harness.StartRedisCluster(t, 3, 1)
	s := harness.StartRedisSentinel(t, 2, 3)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"redis-cluster", []string{"--backend", "redis-cluster", "--redis", strings.Join(c.Addrs()[:3], ","), "--ttl", "2s"}},
		{"redis-sentinel", []string{"--backend", "redis-sentinel", "--sentinel", strings.Join(s.SentinelAddrs(), ","),
			"--master", s.MasterName(), "--replica-ack", "1", "--replica-ack-timeout", "200ms", "--ttl", "2s"}},
		// URLs, as for secured servers.
		{"redis-cluster, URLs", []string{"--backend", "redis-cluster", "--redis", "redis://" + c.Addrs()[0] + ",redis://" + c.Addrs()[1], "--ttl", "2s"}},
		{"redis-sentinel, URLs", []string{"--backend", "redis-sentinel", "--sentinel", "redis://" + strings.Join(s.SentinelAddrs(), ",redis://"),
			"--master", s.MasterName(), "--ttl", "2s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := lockPath(t)
			first, err := strconv.ParseInt(runEnv(t, append(tc.args, path)...)["token"], 10, 64)
			require.NoError(t, err)
			second, err := strconv.ParseInt(runEnv(t, append(tc.args, path)...)["token"], 10, 64)
			require.NoError(t, err)
			assert.Greater(t, second, first, "tokens grow from holder to holder")
		})
	}
}

// The lock is lost while COMMAND runs (its key deleted): COMMAND is
// terminated and zklock exits 76, as on ZooKeeper.
func TestCompatLockLost(t *testing.T) {
	r := harness.StartRedis(t)
	path := lockPath(t)
	p := startZklock(t, "--backend", "redis", "--redis", r.Addr(), "--ttl", "1s", "--grace", "1s", "-v",
		path, "--", "sh", "-c", holdScript)
	p.waitOutput(t, p.stdout, "ready")
	admin := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer admin.Close()
	require.NoError(t, admin.Del(context.Background(), "{"+path+"}").Err())
	assert.Equal(t, exitLockLost, p.wait(t))
	assert.Contains(t, p.stderr.String(), "redislock "+path+" lost while sh was running")
	assert.Regexp(t, verboseEnd("redislock "+path, `lost \(`), p.stderr.String(), "-v: the time held and the cause")
}

// A Redis that does not answer: exit 69, as for ZooKeeper. go-redis's own
// log lines (its pool failing to dial) are not printed, with -q nothing is.
func TestCompatUnreachable(t *testing.T) {
	code, p := runZklock(t, "--backend", "redis", "--redis", "127.0.0.1:1", "--timeout", "30s", "/x", "--", "true")
	assert.Equal(t, exitUnavailable, code)
	assert.Contains(t, p.stderr.String(), "cannot reach Redis at 127.0.0.1:1")
	assert.NotContains(t, p.stderr.String(), "connection pool")

	code, p = runZklock(t, "-q", "--backend", "redlock", "--redis", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--timeout", "30s", "/x", "--", "true")
	assert.Equal(t, exitUnavailable, code)
	assert.Empty(t, p.stderr.String(), "-q prints nothing")
}

func TestBackendUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--backend", "etcd"}, `unknown --backend "etcd"`},
		{[]string{"--backend", "redis"}, "--backend redis needs --redis"},
		{[]string{"--redis", "127.0.0.1:1"}, "--redis needs --backend redis, redis-cluster or redlock"},
		{[]string{"--backend", "memcached", "--memcached", "127.0.0.1:1", "--redis", "127.0.0.1:1"}, "--redis needs --backend redis, redis-cluster or redlock"},
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1", "--read"}, "--read needs --backend zk"},
		{[]string{"--backend", "memcached"}, "--backend memcached needs --memcached"},
		{[]string{"--backend", "memcached", "--memcached", "a:1,b:2"}, "--memcached takes one server"},
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1,"}, "empty server address"},
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1", "--ttl", "0"}, "--ttl"},
		{[]string{"--without-eviction-check"}, "--without-eviction-check needs --backend redis, redis-cluster, redis-sentinel, redlock or memcached"},
		{[]string{"--without-durability-check"}, "--without-durability-check needs --backend postgres or mysql"},
		{[]string{"--backend", "redis-sentinel", "--sentinel", "127.0.0.1:1"}, "--backend redis-sentinel needs --sentinel HOST:PORT[,HOST:PORT...] and --master NAME"},
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1", "--master", "m"}, "--master needs --backend redis-sentinel"},
		{[]string{"--backend", "redis-cluster"}, "--backend redis-cluster needs --redis"},
		{[]string{"--backend", "redlock", "--redis", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--replica-ack", "1"}, "--replica-ack needs --backend redis, redis-cluster or redis-sentinel"},
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--replica-ack", "1"}, "--replica-ack needs one --redis server"},
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1", "--replica-ack", "0"}, "--replica-ack 0: want 1 replica or more"},
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1", "--replica-ack-timeout", "1s"}, "--replica-ack-timeout needs --replica-ack"},
		// A key prefix the lock would refuse: before anything is
		// connected to (port 1 has no server: that would be exit 69).
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1", "--key-prefix", "my app:"},
			`--key-prefix: redislock: recipes: invalid argument: key prefix "my app:": no spaces`},
		{[]string{"--backend", "redis-cluster", "--redis", "127.0.0.1:1,127.0.0.1:2", "--key-prefix", "app*"},
			`--key-prefix: redislock: recipes: invalid argument: key prefix "app*": no spaces, control characters or glob characters`},
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--key-prefix", "{app}"},
			`--key-prefix: redlock: recipes: invalid argument: key prefix "{app}": no braces`},
		{[]string{"--backend", "memcached", "--memcached", "127.0.0.1:1", "--key-prefix", "my app:"},
			`--key-prefix: memcachedlock: recipes: invalid argument: key prefix "my app:": no spaces or control characters`},
		{[]string{"--backend", "memcached", "--memcached", "127.0.0.1:1", "--key-prefix", strings.Repeat("p", memcachedlock.MaxKeyLen)},
			"must be under 244 bytes"},
		// The SQL backends: nothing is connected to (port 1 has no server).
		{[]string{"--backend", "postgres"}, "--backend postgres needs a DSN: --dsn DSN (without a password), $ZKLOCK_DSN or --dsn-file FILE"},
		{[]string{"--backend", "mysql"}, "--backend mysql needs a DSN: --dsn DSN (without a password), $ZKLOCK_DSN or --dsn-file FILE"},
		{[]string{"--dsn", "postgres://u@127.0.0.1:1/db"}, "--dsn needs --backend postgres or mysql"},
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1", "--dsn", "postgres://u@127.0.0.1:1/db"}, "--dsn needs --backend postgres or mysql"},
		{[]string{"--backend", "memcached", "--memcached", "127.0.0.1:1", "--table", "t"}, "--table needs --backend postgres or mysql"},
		{[]string{"--backend", "mysql", "--dsn", "u@tcp(127.0.0.1:1)/db", "--listen-dsn", "postgres://u@127.0.0.1:1/db"}, "--listen-dsn needs --backend postgres"},
		{[]string{"--backend", "postgres", "--dsn", "postgres://u@127.0.0.1:1/db", "--read"}, "--read needs --backend zk"},
		{[]string{"--backend", "mysql", "--dsn", "u@tcp(127.0.0.1:1)/db", "--servers", "127.0.0.1:1"}, "--servers needs --backend zk"},
		{[]string{"--backend", "postgres", "--dsn", "postgres://u@127.0.0.1:1/db", "--without-eviction-check"},
			"--without-eviction-check needs --backend redis, redis-cluster, redis-sentinel, redlock or memcached"},
		{[]string{"--backend", "postgres", "--dsn", "postgres://u@127.0.0.1:1/db", "--listen-dsn", ""}, "empty --listen-dsn"},
		{[]string{"--backend", "postgres", "--dsn", "postgres://u@127.0.0.1:notaport/db"}, "invalid --dsn: cannot parse `postgres://u@127.0.0.1:notaport/db`"},
		{[]string{"--backend", "postgres", "--dsn", "postgres://u@127.0.0.1:1/db", "--listen-dsn", "host=h port=x"}, "invalid --listen-dsn: "},
		{[]string{"--backend", "mysql", "--dsn", "u@tcp(127.0.0.1:1"}, "invalid --dsn u@tcp(127.0.0.1:1: invalid DSN"},
		// A password on the command line is refused, masked.
		{[]string{"--backend", "postgres", "--dsn", "postgres://u:s3cr3t@127.0.0.1:notaport/db"},
			"--dsn postgres://u:xxxxx@127.0.0.1:notaport/db: a password on the command line is refused"},
		{[]string{"--backend", "postgres", "--dsn", "postgres://u@127.0.0.1:1/db", "--listen-dsn", "host=h password=s3cr3t port=x"},
			"--listen-dsn host=h password=xxxxx port=x: a password on the command line is refused"},
		{[]string{"--backend", "mysql", "--dsn", "u:s3cr3t@tcp(127.0.0.1:1"}, "--dsn u:xxxxx@tcp(127.0.0.1:1: a password on the command line is refused"},
		{[]string{"--backend", "mysql", "--dsn", "u@tcp(127.0.0.1:1)/db", "--table", "no-such"}, `table "no-such"`},
		{[]string{"--backend", "postgres", "--dsn", "postgres://u@127.0.0.1:1/db", "--ttl", "50ms"}, "TTL 50ms"},
	} {
		code, p := runZklock(t, append(tc.args, "/x", "--", "true")...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Contains(t, p.stderr.String(), tc.msg, "%v", tc.args)
		assert.NotContains(t, p.stderr.String(), "s3cr3t", "%v: a password shown", tc.args)
	}
}

// Global flags before a subcommand work, as users type them.
func TestGlobalFlagsBeforeLs(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	h := holdLock(t, srv, path)
	code, p := runZklock(t, "--servers", srv, "ls", path)
	assert.Equal(t, exitOK, code, "stderr: %s", p.stderr)
	assert.Contains(t, p.stdout.String(), "holder")
	h.closeStdin(t)
	assert.Equal(t, exitOK, h.wait(t))
}

// The ACL rule a refusal's hint names is the one of the lock zklock
// takes: Redlock's for several --redis servers, redislock's for the nodes
// of a cluster.
func TestACLRuleOfTheBackend(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1"}, redislock.ACLRule("app:")},
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}, redlock.ACLRule("app:")},
		{[]string{"--backend", "redlock", "--redis", "127.0.0.1:1"}, redlock.ACLRule("app:")},
		{[]string{"--backend", "redis-cluster", "--redis", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}, redislock.ACLRule("app:")},
	} {
		o, err := parseRun(append(tc.args, "--key-prefix", "app:", "/x", "--", "true"))
		require.NoError(t, err, "%v", tc.args)
		assert.Equal(t, tc.want, o.backend.aclRule(), "%v", tc.args)
	}
}
