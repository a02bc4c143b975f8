package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// A backend that cannot be reached exits 69, never the "held" code 75,
// with and without --timeout, on every backend, naming the last error
// (here: the connection refused). With ZooKeeper and --timeout shorter
// than the connection timeout the timeout ends the connecting: still an
// outage, not a lock found held.
func TestUnreachableIsNotBusy(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		{name: "zk", args: []string{"--servers", "127.0.0.1:1"}},
		{name: "redis", args: []string{"--backend", "redis", "--redis", "127.0.0.1:1"}},
		{name: "redis-cluster", args: []string{"--backend", "redis-cluster", "--redis", "127.0.0.1:1"}},
		{name: "redis-sentinel", args: []string{"--backend", "redis-sentinel", "--sentinel", "127.0.0.1:1", "--master", "m"}},
		{name: "redlock", args: []string{"--backend", "redlock", "--redis", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}},
		{name: "memcached", args: []string{"--backend", "memcached", "--memcached", "127.0.0.1:1"}},
		{name: "postgres", args: []string{"--backend", "postgres", "--dsn", "postgres://u@127.0.0.1:1/db?sslmode=disable"}},
		{name: "mysql", args: []string{"--backend", "mysql", "--dsn", "u@tcp(127.0.0.1:1)/db"}},
	} {
		for _, timeout := range []string{"", "3s"} {
			t.Run(tc.name+"/timeout="+timeout, func(t *testing.T) {
				t.Parallel()
				args := append([]string(nil), tc.args...)
				if timeout != "" {
					args = append(args, "--timeout", timeout)
				}
				code, p := runZklockEnv(t, tc.env, append(args, "/x", "--", "echo", "ran")...)
				assert.Equal(t, exitUnavailable, code, "stderr: %s", p.stderr)
				assert.Empty(t, p.stdout.String(), "the command must not run")
				stderr := p.stderr.String()
				assert.True(t, strings.Contains(stderr, "connection refused") || strings.Contains(stderr, "connect: "),
					"the last error is named: %s", stderr)
			})
		}
	}
}

// --try on a server in its quiet period (just started: it may have
// forgotten a holder, so it grants nothing for a TTL) exits 79 and says
// so, not 75 "held"; -v names the quiet period, not contention. Then, the
// quiet period over and the lock held by another zklock, --try exits 75.
func TestTryQuietAndHeld(t *testing.T) {
	r := harness.StartRedisN(t, 3)
	m := harness.StartMemcached(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"redis", []string{"--backend", "redis", "--redis", r[0].Addr()}},
		{"redlock", []string{"--backend", "redlock", "--redis", r[0].Addr() + "," + r[1].Addr() + "," + r[2].Addr()}},
		{"memcached", []string{"--backend", "memcached", "--memcached", m.Addr()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := lockPath(t)
			// A TTL the test cannot outlast: the servers stay quiet for it.
			code, p := runZklock(t, slices.Concat(tc.args, []string{"--ttl", "1h", "-v", "--try", path, "--", "echo", "ran"})...)
			assert.Equal(t, exitQuiet, code, "stderr: %s", p.stderr)
			assert.Empty(t, p.stdout.String(), "the command must not run")
			assert.Contains(t, p.stderr.String(), "is not granted to anyone yet: quiet period after a restart of ")
			assert.Regexp(t, `waited \S+ for \S+ `+regexp.QuoteMeta(path)+`: \S+ \(quiet period after a restart\)`, p.stderr.String())
			assert.NotContains(t, p.stderr.String(), "contended")
			assert.NotContains(t, p.stderr.String(), " is held")

			// Another lock (the quiet period is a lock's: the 1h one's
			// lasts) of a short TTL: its quiet period is soon over (the
			// holder's Acquire waits it out).
			path += "-held"
			short := slices.Concat(tc.args, []string{"--ttl", "3s"})
			holder := startZklock(t, slices.Concat(short, []string{path, "--", "sh", "-c", holdScript})...)
			holder.waitOutput(t, holder.stdout, "ready")
			code, p = runZklock(t, slices.Concat(short, []string{"--try", path, "--", "echo", "ran"})...)
			assert.Equal(t, exitTempFail, code, "stderr: %s", p.stderr)
			assert.Contains(t, p.stderr.String(), " is held")
			assert.Empty(t, p.stdout.String(), "the command must not run")
			holder.closeStdin(t)
			assert.Equal(t, exitOK, holder.wait(t))
		})
	}
}

// --timeout passing while ZooKeeper is out of reach (a waiter's server
// stopped) exits 69, not 75: whether the lock is held is not known.
func TestTimeoutWhileZooKeeperDown(t *testing.T) {
	zk := harness.StartZK(t, 1)
	srv := zk.ConnectString()
	path := lockPath(t)
	holder := holdLock(t, srv, path)
	waiter := startZklock(t, "--servers", srv, "--timeout", "5s", path, "--", "echo", "ran")
	c := zkClient(t, srv)
	waitParticipants(t, c, path, 2)
	c.Close()
	zk.Members()[0].Stop(t)
	assert.Equal(t, exitUnavailable, waiter.wait(t), "stderr: %s", waiter.stderr)
	assert.Contains(t, waiter.stderr.String(), "out of reach")
	assert.Empty(t, waiter.stdout.String(), "the command must not run")
	assert.Equal(t, exitLockLost, holder.wait(t))
}

// A Redis, memcached or SQL server stopped while zklock waits for a lock
// held by another: --timeout then exits 69 naming the last attempt's
// error, not 75 "held", as for ZooKeeper: the outage is the news. (Redlock:
// two servers of three stopped, no majority can answer.) The holder is
// told it lost the lock: 76.
func TestTimeoutWhileServerDown(t *testing.T) {
	type backend struct {
		name  string
		start func(t *testing.T) (args []string, stop func(testing.TB))
	}
	for _, b := range []backend{
		{"redis", func(t *testing.T) ([]string, func(testing.TB)) {
			r := harness.StartRedis(t)
			return []string{"--backend", "redis", "--redis", r.Addr()}, r.Stop
		}},
		{"redlock", func(t *testing.T) ([]string, func(testing.TB)) {
			r := harness.StartRedisN(t, 3)
			return []string{"--backend", "redlock", "--redis", r[0].Addr() + "," + r[1].Addr() + "," + r[2].Addr()},
				func(t testing.TB) { r[0].Stop(t); r[1].Stop(t) }
		}},
		{"memcached", func(t *testing.T) ([]string, func(testing.TB)) {
			m := harness.StartMemcached(t)
			return []string{"--backend", "memcached", "--memcached", m.Addr()}, m.Stop
		}},
		{"postgres", func(t *testing.T) ([]string, func(testing.TB)) {
			pg := harness.StartPostgres(t)
			return []string{"--backend", "postgres", "--dsn", pg.DSN()}, pg.Stop
		}},
		{"mysql", func(t *testing.T) ([]string, func(testing.TB)) {
			m := harness.StartMariaDB(t)
			return []string{"--backend", "mysql", "--dsn", m.DSN()}, m.Stop
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			args, stop := b.start(t)
			args = append(args, "--ttl", "3s")
			path := lockPath(t)
			holder := startZklock(t, slices.Concat(args, []string{path, "--", "sh", "-c", holdScript})...)
			holder.waitOutput(t, holder.stdout, "ready")
			// A --timeout the waiter outlasts only after the stop: it is
			// waiting (connected, its lock made) once -v reports the wait.
			waiter := startZklock(t, slices.Concat(args, []string{"-v", "--progress", "100ms", "--timeout", "30s",
				path, "--", "echo", "ran"})...)
			waiter.waitOutput(t, waiter.stderr, "still waiting for ")
			stop(t)
			assert.Equal(t, exitUnavailable, waiter.wait(t), "stderr: %s", waiter.stderr)
			stderr := waiter.stderr.String()
			assert.Contains(t, stderr, "timed out after 30s waiting for ")
			assert.Contains(t, stderr, " did not answer: ")
			assert.Contains(t, stderr, "last attempt: ", "the last attempt's error is named")
			assert.NotContains(t, stderr, " is held")
			assert.Empty(t, waiter.stdout.String(), "the command must not run")
			assert.Equal(t, exitLockLost, holder.wait(t), "stderr: %s", holder.stderr)
		})
	}
}
