package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/compat/redislock"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// Sentinels that require a password themselves (requirepass), and an ACL
// user of theirs, in front of a password-protected master and replica:
// zklock takes the sentinels' password from $ZKLOCK_SENTINEL_AUTH or
// --sentinel-password-file (which wins), apart from the master's
// ($REDISCLI_AUTH), and the sentinels' user from the --sentinel URLs (the
// master's too) or --sentinel-user. The sentinel ACL user's rule is
// sentinelACLRule, and the sentinels log no command or channel refused to
// it. A missing or wrong sentinel password, a user the sentinels do not
// know, and a user whose rule lacks the commands are refused: exit 69, a
// message naming the sentinel and what to check, the command not run, no
// password shown (-v included). A master that refuses its password is
// told apart from the sentinels.
func TestSentinelAuth(t *testing.T) {
	const dataPassword, lockerPassword = "d-s3cr3t", "l-s3cr3t"
	const sentinelPassword, watcherPassword, narrowPassword = "s-s3cr3t", "w-s3cr3t", "n-s3cr3t"
	secrets := []string{dataPassword, lockerPassword, sentinelPassword, watcherPassword, narrowPassword, "not-it"}
	s := harness.StartRedisSentinelAuth(t, 1, 3,
		harness.RedisSecurity{Password: dataPassword, Users: []string{"locker on >" + lockerPassword + " " + redislock.ACLRule("app:")}},
		harness.RedisSecurity{Password: sentinelPassword, Users: []string{
			"locker on >" + watcherPassword + " " + sentinelACLRule,
			"narrow on >" + narrowPassword + " +ping",
		}})
	sentinels := strings.Join(s.SentinelAddrs(), ",")
	base := []string{"--backend", "redis-sentinel", "--sentinel", sentinels, "--master", s.MasterName()}
	asLocker := []string{"--backend", "redis-sentinel", "--sentinel", "redis://locker@" + strings.Join(s.SentinelAddrs(), ",redis://locker@"),
		"--master", s.MasterName(), "--key-prefix", "app:"}
	path := lockPath(t)
	// run takes the lock as a holder would, -v, and returns its token.
	run := func(t *testing.T, env, args []string) int64 {
		t.Helper()
		code, p := runZklockEnv(t, env, append(append(append([]string{"-v"}, args...), "--ttl", "1s", path), "--", "sh", "-c", envScript)...)
		require.Equal(t, exitOK, code, "stderr: %s", p.stderr)
		assertNoSecret(t, p, secrets...)
		token, err := strconv.ParseInt(strings.TrimPrefix(strings.Split(p.stdout.String(), "\n")[2], "token="), 10, 64)
		require.NoError(t, err, "stdout: %s", p.stdout)
		return token
	}
	sentinelEnv := "ZKLOCK_SENTINEL_AUTH="

	t.Run("the sentinels' ACL user", func(t *testing.T) {
		admins := make([]*redis.Client, 0, 3)
		for _, addr := range s.SentinelAddrs() {
			c := redis.NewClient(&redis.Options{Addr: addr, Password: sentinelPassword})
			t.Cleanup(func() { _ = c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			require.NoError(t, c.ACLLogReset(ctx).Err())
			cancel()
			admins = append(admins, c)
		}
		run(t, []string{"REDISCLI_AUTH=" + lockerPassword, sentinelEnv + watcherPassword}, asLocker)
		for _, c := range admins {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			entries, err := c.ACLLog(ctx, 100).Result()
			cancel()
			require.NoError(t, err)
			for _, e := range entries {
				assert.NotEqual(t, "locker", e.Username, "sentinel %s refused the user %s %q (%s)",
					c.Options().Addr, e.Reason, e.Object, sentinelACLRule)
			}
		}
	})
	t.Run("password from the environment or a file", func(t *testing.T) {
		dataEnv := "REDISCLI_AUTH=" + dataPassword
		first := run(t, []string{dataEnv, sentinelEnv + sentinelPassword}, base)
		second := run(t, []string{dataEnv, sentinelEnv + "not-it"},
			append([]string{"--sentinel-password-file", secretFile(t, "sentinel", sentinelPassword+"\n")}, base...))
		assert.Greater(t, second, first, "--sentinel-password-file wins over $ZKLOCK_SENTINEL_AUTH")
		// An ACL user on the data nodes, the sentinels' default user.
		run(t, []string{"REDISCLI_AUTH=" + lockerPassword, sentinelEnv + sentinelPassword}, append([]string{"--sentinel-user", "default"}, asLocker...))
	})

	wrongFile := secretFile(t, "wrong", "not-it\n")
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		msg  string
	}{
		{"no sentinel password", []string{"REDISCLI_AUTH=" + dataPassword}, base,
			"zklock: sentinel " + s.SentinelAddrs()[0] + ": authentication refused: NOAUTH Authentication required. " +
				"(no sentinel password was given: $ZKLOCK_SENTINEL_AUTH or --sentinel-password-file)"},
		{"the data nodes' password", []string{"REDISCLI_AUTH=" + dataPassword, sentinelEnv + dataPassword}, base,
			"zklock: sentinel " + s.SentinelAddrs()[0] + ": authentication refused: WRONGPASS invalid username-password pair or user is disabled. " +
				"(check the password of $ZKLOCK_SENTINEL_AUTH, given as the sentinels' default user: --sentinel-user names an ACL user)"},
		{"wrong password file", []string{"REDISCLI_AUTH=" + dataPassword, sentinelEnv + sentinelPassword},
			append([]string{"--sentinel-password-file", wrongFile}, base...),
			"zklock: sentinel " + s.SentinelAddrs()[0] + ": authentication refused: WRONGPASS invalid username-password pair or user is disabled. " +
				"(check the password of --sentinel-password-file, given as the sentinels' default user: --sentinel-user names an ACL user)"},
		{"the URLs' user with requirepass", []string{"REDISCLI_AUTH=" + lockerPassword, sentinelEnv + sentinelPassword}, asLocker,
			"zklock: sentinel " + s.SentinelAddrs()[0] + ": authentication refused: WRONGPASS invalid username-password pair or user is disabled. " +
				"(check the sentinel user locker, the --sentinel URLs' (--sentinel-user default if the sentinels have requirepass alone), " +
				"and the password of $ZKLOCK_SENTINEL_AUTH)"},
		{"--sentinel-user's password", []string{"REDISCLI_AUTH=" + dataPassword, sentinelEnv + "not-it"},
			append([]string{"--sentinel-user", "narrow"}, base...),
			"zklock: sentinel " + s.SentinelAddrs()[0] + ": authentication refused: WRONGPASS invalid username-password pair or user is disabled. " +
				"(check --sentinel-user narrow and the password of $ZKLOCK_SENTINEL_AUTH)"},
		{"a user without the rule", []string{"REDISCLI_AUTH=" + dataPassword, sentinelEnv + narrowPassword},
			append([]string{"--sentinel-user", "narrow"}, base...),
			"zklock: sentinel " + s.SentinelAddrs()[0] + ": permission refused by the server's ACL: NOPERM this user has no permissions to run the " +
				"'sentinel|get-master-addr-by-name' command (the sentinel user needs the ACL rule " + sentinelACLRule + ")"},
		{"the master's password", []string{"REDISCLI_AUTH=not-it", sentinelEnv + sentinelPassword}, base,
			"zklock: redis-sentinel " + sentinels + ` (master "` + s.MasterName() + `"): authentication refused: WRONGPASS invalid username-password pair or user is disabled. ` +
				"(check the user of the URL and the password of $REDISCLI_AUTH)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, p := runZklockEnv(t, tc.env, append(append([]string{"-v"}, tc.args...), path, "--", "echo", "ran")...)
			assert.Equal(t, exitUnavailable, code)
			assert.Contains(t, p.stderr.String(), tc.msg)
			assert.Empty(t, p.stdout.String(), "the command ran")
			assertNoSecret(t, p, secrets...)
		})
	}
}

// The sentinels' flags are checked before anything is connected to:
// exit 64, no password shown.
func TestSentinelAuthUsage(t *testing.T) {
	empty := secretFile(t, "empty", "\ns-s3cr3t\n")
	good := secretFile(t, "good", "s-s3cr3t\n")
	sentinel := []string{"--backend", "redis-sentinel", "--master", "m", "--sentinel"}
	for _, tc := range []struct {
		env  []string
		args []string
		msg  string
	}{
		{nil, append(sentinel, "redis://watcher:s-s3cr3t@127.0.0.1:1"),
			"--sentinel redis://watcher:xxxxx@127.0.0.1:1: a password on the command line is refused (anyone on this machine can read it with ps): " +
				"give the sentinels' password in $ZKLOCK_SENTINEL_AUTH or in a file named by --sentinel-password-file, " +
				"the master's in $REDISCLI_AUTH or in a file named by --redis-password-file"},
		{nil, append(sentinel, "127.0.0.1:2,redis://:s-s3cr3t@127.0.0.1:1"), "--sentinel redis://:xxxxx@127.0.0.1:1: a password on the command line is refused"},
		{nil, append(sentinel, "127.0.0.1:1", "--sentinel-password-file", empty), "--sentinel-password-file " + empty + ": the first line is empty"},
		{nil, append(sentinel, "127.0.0.1:1", "--sentinel-password-file", "/nonexistent/pw"), "--sentinel-password-file: open /nonexistent/pw: no such file"},
		{nil, append(sentinel, "127.0.0.1:1", "--sentinel-user", "watcher"),
			"--sentinel-user watcher: the sentinels' password is missing: give it in $ZKLOCK_SENTINEL_AUTH or in a file named by --sentinel-password-file"},
		{[]string{"ZKLOCK_SENTINEL_AUTH=s-s3cr3t"}, append(sentinel, "127.0.0.1:1", "--sentinel-user", ""), `--sentinel-user "": want a user name, without spaces`},
		{[]string{"ZKLOCK_SENTINEL_AUTH=s-s3cr3t"}, append(sentinel, "127.0.0.1:1", "--sentinel-user", "a b"), `--sentinel-user "a b": want a user name, without spaces`},
		{nil, []string{"--backend", "redis", "--redis", "127.0.0.1:1", "--sentinel-password-file", good},
			"--sentinel-password-file needs --backend redis-sentinel"},
		{nil, []string{"--backend", "redis", "--redis", "127.0.0.1:1", "--sentinel-user", "watcher"}, "--sentinel-user needs --backend redis-sentinel"},
	} {
		code, p := runZklockEnv(t, tc.env, append(tc.args, "-v", "/x", "--", "true")...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Contains(t, p.stderr.String(), tc.msg, "%v", tc.args)
		assertNoSecret(t, p, "s-s3cr3t")
	}
}

// Sentinels that cannot be reached, or do not know the master, are named
// with what each answered: exit 69.
func TestSentinelUnreachable(t *testing.T) {
	s := harness.StartRedisSentinel(t, 0, 1)
	code, p := runZklock(t, "--backend", "redis-sentinel", "--sentinel", "127.0.0.1:1,"+s.SentinelAddrs()[0], "--master", "nobody",
		"--timeout", "30s", "/x", "--", "echo", "ran")
	assert.Equal(t, exitUnavailable, code)
	assert.Contains(t, p.stderr.String(), `zklock: cannot reach Redis master "nobody" through the sentinels at 127.0.0.1:1,`+s.SentinelAddrs()[0]+": 127.0.0.1:1: ")
	assert.Contains(t, p.stderr.String(), "\n"+s.SentinelAddrs()[0]+`: no master named "nobody"`)
	assert.Empty(t, p.stdout.String(), "the command ran")
}
