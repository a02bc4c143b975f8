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

// runEnvWith is runEnv with env added to zklock's environment.
func runEnvWith(t *testing.T, env []string, args ...string) map[string]string {
	t.Helper()
	code, p := runZklockEnv(t, env, append(args, "--", "sh", "-c", envScript)...)
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(p.stdout.String()), "\n") {
		k, v, _ := strings.Cut(line, "=")
		out[k] = v
	}
	return out
}

// A Redis with a password (requirepass) and an ACL user: zklock takes the
// password from $REDISCLI_AUTH or --redis-password-file (which wins), the
// user from the URL. A wrong password, or none, is refused: exit 69,
// "authentication refused", no password shown. A user whose ACL does not
// grant the lock's keys is refused naming the rule it needs; with
// --key-prefix it takes the lock. A password in the URL is a usage error.
func TestRedisAuth(t *testing.T) {
	r := harness.StartRedisSecure(t, harness.RedisSecurity{Password: "r-s3cr3t",
		Users: []string{"locker on >l-s3cr3t " + redislock.ACLRule("app:")}})
	url := "redis://" + r.Addr()
	path := lockPath(t)
	good := secretFile(t, "password", "r-s3cr3t\n")
	wrong := secretFile(t, "wrong", "not-it\n")
	// A short TTL: a server just started grants nothing for one.
	args := []string{"--backend", "redis", "--redis", url, "--ttl", "1s", path}

	first, err := strconv.ParseInt(runEnvWith(t, []string{"REDISCLI_AUTH=r-s3cr3t"}, args...)["token"], 10, 64)
	require.NoError(t, err)
	second, err := strconv.ParseInt(runEnvWith(t, []string{"REDISCLI_AUTH=not-it"},
		append([]string{"--redis-password-file", good}, args...)...)["token"], 10, 64)
	require.NoError(t, err, "--redis-password-file wins over $REDISCLI_AUTH")
	assert.Greater(t, second, first)
	// A bare HOST:PORT, as before URLs.
	runEnvWith(t, []string{"REDISCLI_AUTH=r-s3cr3t"}, "--backend", "redis", "--redis", r.Addr(), "--ttl", "1s", path)
	// The ACL user, its keys under the prefix its rule grants.
	runEnvWith(t, []string{"REDISCLI_AUTH=l-s3cr3t"},
		"--backend", "redis", "--redis", "redis://locker@"+r.Addr(), "--key-prefix", "app:", "--ttl", "1s", path)

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		msg  string
	}{
		{"wrong password", []string{"REDISCLI_AUTH=not-it"}, nil,
			"zklock: redis " + r.Addr() + ": authentication refused: WRONGPASS invalid username-password pair or user is disabled. " +
				"(check the user of the URL and the password of $REDISCLI_AUTH)"},
		{"wrong password file", nil, []string{"--redis-password-file", wrong},
			"zklock: redis " + r.Addr() + ": authentication refused: WRONGPASS"},
		{"no password", nil, nil,
			"zklock: redis " + r.Addr() + ": authentication refused: NOAUTH Authentication required. " +
				"(no password was given: $REDISCLI_AUTH or --redis-password-file)"},
		{"redlock", []string{"REDISCLI_AUTH=not-it"}, []string{"--backend", "redlock"},
			"zklock: redlock " + r.Addr() + ": authentication refused: WRONGPASS"},
		{"keys the user may not touch", []string{"REDISCLI_AUTH=l-s3cr3t"}, []string{"--redis", "redis://locker@" + r.Addr()},
			"zklock: redis " + r.Addr() + ": permission refused by the server's ACL: NOPERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := append([]string{"--backend", "redis", "--redis", url, "-v"}, tc.args...)
			code, p := runZklockEnv(t, tc.env, append(a, path, "--", "echo", "ran")...)
			assert.Equal(t, exitUnavailable, code)
			assert.Contains(t, p.stderr.String(), tc.msg)
			assert.Empty(t, p.stdout.String(), "the command ran")
			assertNoSecret(t, p, "r-s3cr3t", "l-s3cr3t", "not-it")
		})
	}
	_, p := runZklockEnv(t, []string{"REDISCLI_AUTH=l-s3cr3t"}, "--backend", "redis", "--redis", "redis://locker@"+r.Addr(), path, "--", "true")
	assert.Contains(t, p.stderr.String(), "(the user needs the ACL rule "+redislock.ACLRule("")+")")
}

// The Redis flags are checked before anything is connected to: exit 64,
// no password shown.
func TestRedisSecurityUsage(t *testing.T) {
	empty := secretFile(t, "empty", "\nr-s3cr3t\n")
	ca := harness.NewCA(t, "")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--redis", "redis://app:r-s3cr3t@127.0.0.1:1"},
			"--redis redis://app:xxxxx@127.0.0.1:1: a password on the command line is refused (anyone on this machine can read it with ps): " +
				"give it in $REDISCLI_AUTH or in a file named by --redis-password-file"},
		{[]string{"--redis", "127.0.0.1:2,redis://:r-s3cr3t@127.0.0.1:1"}, "--redis redis://:xxxxx@127.0.0.1:1: a password on the command line is refused"},
		{[]string{"--redis", "redis://127.0.0.1:1?password=r-s3cr3t"}, "--redis redis://127.0.0.1:1?password=xxxxx: a password on the command line is refused"},
		{[]string{"--redis", "http://127.0.0.1:1"}, "want HOST:PORT, redis://[USER@]HOST:PORT[/DB] or rediss://... for TLS"},
		{[]string{"--redis", "redis://127.0.0.1:1/x"}, `redis: invalid database number: "x"`},
		{[]string{"--redis", "redis://127.0.0.1:1,rediss://127.0.0.1:2"}, "every server must have the same scheme (redis://, rediss://) and user"},
		{[]string{"--redis", "redis://127.0.0.1:1", "--tls-ca", ca.CertFile}, "--tls-ca, --tls-cert and --tls-key are for TLS: give --redis as rediss://HOST:PORT"},
		{[]string{"--redis", "127.0.0.1:1", "--redis-password-file", empty}, "--redis-password-file " + empty + ": the first line is empty"},
		{[]string{"--redis", "127.0.0.1:1", "--redis-password-file", "/nonexistent/pw"}, "--redis-password-file: open /nonexistent/pw: no such file"},
		{[]string{"--backend", "redis-cluster", "--redis", "redis://127.0.0.1:1/2"}, "a Redis Cluster has database 0 only"},
		{[]string{"--backend", "postgres", "--dsn", "postgres://u@h/db", "--key-prefix", "app:"},
			"--key-prefix needs --backend redis, redis-cluster, redis-sentinel, redlock or memcached"},
	} {
		args := tc.args
		if args[0] != "--backend" {
			args = append([]string{"--backend", "redis"}, args...)
		}
		code, p := runZklock(t, append(args, "/x", "--", "true")...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Contains(t, p.stderr.String(), tc.msg, "%v", tc.args)
		assertNoSecret(t, p, "r-s3cr3t")
	}
}

// Over TLS (rediss://): zklock trusts the CA of --tls-ca. A certificate
// from another CA, or for another host name, is refused: exit 69, naming
// the certificate's trouble.
func TestRedisTLS(t *testing.T) {
	ca := harness.NewCA(t, "redis CA")
	r := harness.StartRedisSecure(t, harness.RedisSecurity{Password: "t-s3cr3t", TLS: ca.Issue(t, "redis", "127.0.0.1"), CA: ca})
	client := ca.Issue(t, "client", "zklock")
	env := []string{"REDISCLI_AUTH=t-s3cr3t"}
	path := lockPath(t)
	url := "rediss://" + r.TLSAddr()
	runEnvWith(t, env, "--backend", "redis", "--redis", url, "--tls-ca", ca.CertFile, "--ttl", "1s", path)
	runEnvWith(t, env, "--backend", "redis", "--redis", url, "--tls-ca", ca.CertFile,
		"--tls-cert", client.CertFile, "--tls-key", client.KeyFile, "--ttl", "1s", path)

	other := harness.NewCA(t, "another CA")
	_, port, _ := strings.Cut(r.TLSAddr(), ":")
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"untrusted", []string{"--redis", url, "--tls-ca", other.CertFile},
			"zklock: redis " + r.TLSAddr() + ": TLS: certificate not trusted: x509: certificate signed by unknown authority (the CA of --tls-ca did not sign it)"},
		{"host name", []string{"--redis", "rediss://localhost:" + port, "--tls-ca", ca.CertFile},
			"zklock: redis localhost:" + port + ": TLS: certificate not valid for the host name: x509: certificate is not valid for any names, but wanted to match localhost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, p := runZklockEnv(t, env, append(append([]string{"--backend", "redis", "-v"}, tc.args...), path, "--", "echo", "ran")...)
			assert.Equal(t, exitUnavailable, code)
			assert.Contains(t, p.stderr.String(), tc.msg)
			assert.Empty(t, p.stdout.String(), "the command ran")
			assertNoSecret(t, p, "t-s3cr3t")
		})
	}
}
