package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// No secret is ever in what zklock emits: for each backend a zklock holds
// the lock with its secret in the environment or a file, while the test
// reads what zklock gave the process it spawned (its argv, which every user
// sees in ps, and the variables zklock added to its environment: COMMAND
// inherits the rest, secrets included, as documented) and, on ZooKeeper,
// what zklock stored in its lock node (zklock ls shows it); nor in
// anything zklock prints, -v included, when it holds, when zklocks with a
// wrong secret are refused, and when a secret put on the command line is
// refused without being echoed.
func TestSecretsNeverShown(t *testing.T) {
	zk := zkServers(t)
	r := harness.StartRedisSecure(t, harness.RedisSecurity{Password: "redis-s3cr3t"})
	pg := harness.StartPostgresSecure(t, "pg-s3cr3t")
	secrets := []string{"zk-s3cr3t", "redis-s3cr3t", "pg-s3cr3t", "wrong-s3cr3t"}
	wrongPG := strings.Replace(pg.PasswordDSN(), "pg-s3cr3t", "wrong-s3cr3t", 1)

	for _, tc := range []struct {
		name      string
		args      []string // the backend's, without a secret
		env       []string // the secret, when in the environment
		wrongArgs []string
		wrongEnv  []string
		onCmdline []string // a secret on the command line, to be refused
	}{
		{name: "zookeeper",
			args:      []string{"--servers", zk, "--auth-file", secretFile(t, "zk", "digest alice:zk-s3cr3t\n")},
			wrongArgs: []string{"--servers", zk, "--auth-file", secretFile(t, "zk-wrong", "digest alice:wrong-s3cr3t\n")}},
		{name: "redis, $REDISCLI_AUTH",
			args:      []string{"--backend", "redis", "--redis", "redis://" + r.Addr(), "--ttl", "1s"},
			env:       []string{"REDISCLI_AUTH=redis-s3cr3t"},
			wrongArgs: []string{"--backend", "redis", "--redis", "redis://" + r.Addr()},
			wrongEnv:  []string{"REDISCLI_AUTH=wrong-s3cr3t"},
			onCmdline: []string{"--backend", "redis", "--redis", "redis://default:redis-s3cr3t@" + r.Addr()}},
		{name: "redis, --redis-password-file",
			args: []string{"--backend", "redis", "--redis", "redis://" + r.Addr(), "--ttl", "1s",
				"--redis-password-file", secretFile(t, "redis", "redis-s3cr3t\n")},
			wrongArgs: []string{"--backend", "redis", "--redis", "redis://" + r.Addr(),
				"--redis-password-file", secretFile(t, "redis-wrong", "wrong-s3cr3t\n")}},
		{name: "postgres, $ZKLOCK_DSN",
			args:      []string{"--backend", "postgres"},
			env:       []string{"ZKLOCK_DSN=" + pg.PasswordDSN()},
			wrongArgs: []string{"--backend", "postgres"},
			wrongEnv:  []string{"ZKLOCK_DSN=" + wrongPG},
			onCmdline: []string{"--backend", "postgres", "--dsn", pg.PasswordDSN()}},
		{name: "postgres, --dsn-file",
			args:      []string{"--backend", "postgres", "--dsn-file", secretFile(t, "dsn", pg.PasswordDSN()+"\n")},
			wrongArgs: []string{"--backend", "postgres", "--dsn-file", secretFile(t, "dsn-wrong", wrongPG+"\n")},
			onCmdline: []string{"--backend", "postgres", "--dsn", "host=127.0.0.1 password=pg-s3cr3t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := authPath(t)
			h := startZklockEnv(t, tc.env, append(append(tc.args, "-v"), path, "--", "sh", "-c", childScript)...)
			h.waitOutput(t, h.stdout, "ready")
			child := childPID(t, h)
			cmdline := readProc(t, child, "cmdline")
			require.Contains(t, cmdline, childScript, "not COMMAND's command line")
			added := addedEnv(readProc(t, h.cmd.Process.Pid, "environ"), readProc(t, child, "environ"))
			require.Contains(t, added, "ZKLOCK_PATH="+path, "the variables zklock gives COMMAND")
			for _, s := range secrets {
				assert.NotContains(t, cmdline, s, "a secret in COMMAND's argv")
				assert.NotContains(t, added, s, "a secret in a variable zklock gave COMMAND")
			}
			if tc.name == "zookeeper" { // the lock node's data, as ls shows it
				code, ls := runZklock(t, "ls", "--servers", zk, "--auth-file", tc.args[3], path)
				require.Equal(t, exitOK, code, "stderr: %s", ls.stderr)
				require.Contains(t, ls.stdout.String(), "\tholder\t")
				assertNoSecret(t, ls, secrets...)
			}

			// While the lock is held: on ZooKeeper its path is then there,
			// the credentials' alone.
			code, p := runZklockEnv(t, tc.wrongEnv, append(append(tc.wrongArgs, "-v"), path, "--", "echo", "ran")...)
			assert.Equal(t, exitUnavailable, code)
			assert.Contains(t, p.stderr.String(), ": authentication refused: ")
			assertNoSecret(t, p, secrets...)

			h.closeStdin(t)
			assert.Equal(t, exitOK, h.wait(t))
			assert.Contains(t, h.stderr.String(), "zklock: released ", "-v")
			assertNoSecret(t, h, secrets...)

			if tc.onCmdline != nil {
				code, p := runZklock(t, append(append(tc.onCmdline, "-v"), path, "--", "echo", "ran")...)
				assert.Equal(t, exitUsage, code)
				assert.Contains(t, p.stderr.String(), "a password on the command line is refused")
				assertNoSecret(t, p, secrets...)
			}
		})
	}
}

// childScript is the COMMAND of TestSecretsNeverShown: it prints its pid,
// holds the lock until stdin is closed, then prints "done".
const childScript = `echo "ready $$"; read x; echo done`

// childPID is the pid childScript printed on h's stdout.
func childPID(t *testing.T, h *proc) int {
	t.Helper()
	line := strings.SplitN(h.stdout.String(), "\n", 2)[0]
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "ready "))
	require.NoError(t, err, "COMMAND's first line %q", line)
	return pid
}

// readProc is /proc/PID/name, its NUL separators as newlines.
func readProc(t *testing.T, pid int, name string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
	require.NoError(t, err)
	return strings.ReplaceAll(string(b), "\x00", "\n")
}

// addedEnv is the variables of child's environment that are not in
// parent's, one per line.
func addedEnv(parent, child string) string {
	had := map[string]bool{}
	for _, kv := range strings.Split(parent, "\n") {
		had[kv] = true
	}
	var out []string
	for _, kv := range strings.Split(child, "\n") {
		if kv != "" && !had[kv] {
			out = append(out, kv)
		}
	}
	return strings.Join(out, "\n") + "\n"
}
