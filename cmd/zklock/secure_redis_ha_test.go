package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// A password-protected Redis Cluster (every node's requirepass), and a
// password-protected master and replica behind sentinels: zklock takes
// the password from $REDISCLI_AUTH or --redis-password-file (which wins)
// and runs the command under the lock through each. A wrong password, or
// none, is refused: exit 69, "authentication refused" and the server's
// word, the command not run, no password shown (-v included). An ACL
// user of every data node, whose rule grants the lock's keys under a
// prefix (redislock.ACLRule), takes the lock through each too.
func TestRedisClusterAndSentinelAuth(t *testing.T) {
	const password, userPassword = "ha-s3cr3t", "l-s3cr3t"
	sec := harness.RedisSecurity{Password: password, Users: []string{"locker on >" + userPassword + " " + redislock.ACLRule("app:")}}
	c := harness.StartRedisClusterSecure(t, 3, 1, sec)
	s := harness.StartRedisSentinelSecure(t, 1, 3, sec)
	for _, tc := range []struct {
		name   string
		args   []string
		user   []string // the same servers as the ACL user's URLs, with its key prefix
		server string   // as the messages name it
	}{
		{"redis-cluster", []string{"--backend", "redis-cluster", "--redis", strings.Join(c.Addrs()[:3], ",")},
			[]string{"--backend", "redis-cluster", "--redis", "redis://locker@" + strings.Join(c.Addrs()[:3], ",redis://locker@"), "--key-prefix", "app:"},
			"redis-cluster " + strings.Join(c.Addrs()[:3], ",")},
		{"redis-sentinel", []string{"--backend", "redis-sentinel", "--sentinel", strings.Join(s.SentinelAddrs(), ","), "--master", s.MasterName()},
			[]string{"--backend", "redis-sentinel", "--sentinel", "redis://locker@" + strings.Join(s.SentinelAddrs(), ",redis://locker@"),
				"--master", s.MasterName(), "--key-prefix", "app:"},
			"redis-sentinel " + strings.Join(s.SentinelAddrs(), ",") + ` (master "` + s.MasterName() + `")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := lockPath(t)
			// A short TTL: a server just started grants nothing for one.
			args := append(append([]string(nil), tc.args...), "--ttl", "1s", path)
			runEnvWith(t, []string{"REDISCLI_AUTH=" + userPassword}, append(append([]string(nil), tc.user...), "--ttl", "1s", path)...)
			first, err := strconv.ParseInt(runEnvWith(t, []string{"REDISCLI_AUTH=" + password}, args...)["token"], 10, 64)
			require.NoError(t, err)
			second, err := strconv.ParseInt(runEnvWith(t, []string{"REDISCLI_AUTH=not-it"},
				append([]string{"--redis-password-file", secretFile(t, "password", password+"\n")}, args...)...)["token"], 10, 64)
			require.NoError(t, err, "--redis-password-file wins over $REDISCLI_AUTH")
			assert.Greater(t, second, first)

			for _, wrong := range []struct {
				name string
				env  []string
				args []string
				msg  string
			}{
				{"wrong password", []string{"REDISCLI_AUTH=not-it"}, nil,
					"WRONGPASS invalid username-password pair or user is disabled. (check the user of the URL and the password of $REDISCLI_AUTH)"},
				{"wrong password file", nil, []string{"--redis-password-file", secretFile(t, "wrong", "not-it\n")},
					"WRONGPASS invalid username-password pair or user is disabled. (check the user of the URL and the password of --redis-password-file)"},
				{"no password", nil, nil,
					"NOAUTH Authentication required. (no password was given: $REDISCLI_AUTH or --redis-password-file)"},
			} {
				t.Run(wrong.name, func(t *testing.T) {
					a := append(append(append([]string{"-v"}, tc.args...), wrong.args...), path, "--", "echo", "ran")
					code, p := runZklockEnv(t, wrong.env, a...)
					assert.Equal(t, exitUnavailable, code)
					assert.Contains(t, p.stderr.String(), "zklock: "+tc.server+": authentication refused: "+wrong.msg)
					assert.Empty(t, p.stdout.String(), "the command ran")
					assertNoSecret(t, p, password, "not-it")
				})
			}
		})
	}
}
