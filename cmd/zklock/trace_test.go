package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// durRe is a Go duration as -v prints it: "1.203s", "15ms", "850µs".
const durRe = `-?(?:[0-9.]+(?:h|m|s|ms|µs|ns))+`

// verboseAcquired matches -v's report of the acquisition: how long the
// wait took, and whether the lock was held or queued for (contended).
func verboseAcquired(lock, contention string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^zklock: acquired ` + regexp.QuoteMeta(lock) + ` \([^\n]*\) after waiting ` + durRe +
		` \(` + contention + `\)$`)
}

// verboseEnd matches -v's report of the lease's end: how long it was held
// and why it ended.
func verboseEnd(lock, why string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^zklock: held ` + regexp.QuoteMeta(lock) + ` for ` + durRe + `: ` + why)
}

// -v reports the wait (and whether the lock was held), the token, and at
// the end the time held and the cause; without -v none of it.
func TestVerboseWaitAndHold(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	lock := "mutex " + path
	holder := holdLock(t, srv, path, "-v")
	waiter := startZklock(t, "--servers", srv, "-v", path, "--", "true")
	quiet := startZklock(t, "--servers", srv, path, "--", "true")
	waitParticipants(t, c, path, 3)
	holder.closeStdin(t)
	require.Equal(t, 0, holder.wait(t))
	require.Equal(t, 0, waiter.wait(t), "stderr: %s", waiter.stderr)
	require.Equal(t, 0, quiet.wait(t), "stderr: %s", quiet.stderr)

	out := holder.stderr.String()
	assert.Regexp(t, verboseAcquired(lock, "uncontended"), out)
	assert.Regexp(t, `acquired `+regexp.QuoteMeta(lock)+` \(token [0-9]+, node `+regexp.QuoteMeta(path)+`/`, out)
	assert.Regexp(t, verboseEnd(lock, "released$"), out)
	// The end is reported before zklock's own "released" line.
	assert.Less(t, strings.Index(out, "zklock: held "), strings.Index(out, "zklock: released "+lock), out)

	out = waiter.stderr.String()
	assert.Regexp(t, verboseAcquired(lock, "contended"), out)
	assert.Regexp(t, verboseEnd(lock, "released$"), out)

	assert.Empty(t, quiet.stderr.String(), "without -v nothing is reported")
}

// A wait that ends without the lock: -v says how long it waited, and why.
func TestVerboseNotAcquired(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	holder := holdLock(t, srv, path)
	code, p := runZklock(t, "--servers", srv, "-v", "--timeout", "1s", path, "--", "true")
	assert.Equal(t, exitTempFail, code)
	assert.Regexp(t, `(?m)^zklock: waited `+durRe+` for mutex `+regexp.QuoteMeta(path)+`: timeout \(contended\)$`, p.stderr.String())
	assert.NotContains(t, p.stderr.String(), "zklock: held ")

	code, p = runZklock(t, "--servers", srv, "-v", "--try", path, "--", "true")
	assert.Equal(t, exitTempFail, code)
	assert.Regexp(t, `(?m)^zklock: waited `+durRe+` for mutex `+regexp.QuoteMeta(path)+`: locked \(contended\)$`, p.stderr.String())

	holder.closeStdin(t)
	require.Equal(t, 0, holder.wait(t))
}

// A lock lost to a partition: -v names the cause and the told-first
// margin (the session's: the time left before the server may expire it).
func TestVerboseLost(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	proxy := harness.NewProxy(t, strings.Split(srv, ",")[0])
	p := startZklock(t, "--servers", proxy.Addr(), "--session-timeout", "2s", "-v", path, "--", "sh", "-c", trapScript)
	readyPGID(t, p)
	waitParticipants(t, c, path, 1)

	proxy.Blackhole(t)
	assert.Equal(t, exitLockLost, p.wait(t))
	assert.Regexp(t, verboseEnd("mutex "+path,
		`lost \(connection suspended; told `+durRe+` (before|after) the server could let the lock go\): .+`), p.stderr.String())
	waitParticipants(t, c, path, 0)
	proxy.Restore(t)
}

// -v reports the wait and the hold on the other backends too.
func TestVerboseBackends(t *testing.T) {
	r := harness.StartRedisN(t, 3)
	m := harness.StartMemcached(t)
	for _, tc := range []struct {
		name, lock string
		args       []string
	}{
		{"redis", "redislock", []string{"--backend", "redis", "--redis", r[0].Addr(), "--ttl", "2s"}},
		{"redlock", "redlock", []string{"--backend", "redlock", "--redis", r[0].Addr() + "," + r[1].Addr() + "," + r[2].Addr(), "--ttl", "2s"}},
		{"memcached", "memcachedlock", []string{"--backend", "memcached", "--memcached", m.Addr(), "--ttl", "3s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := lockPath(t)
			code, p := runZklock(t, append(tc.args, "-v", path, "--", "true")...)
			require.Equal(t, 0, code, "stderr: %s", p.stderr)
			lock := tc.lock + " " + path
			// A fresh server may make the first wait its quiet period, a TTL.
			assert.Regexp(t, verboseAcquired(lock, "(?:uncontended|quiet period after a restart)"), p.stderr.String())
			assert.Regexp(t, verboseEnd(lock, "released$"), p.stderr.String())
		})
	}
}

// An acquire that waits out the quiet period of a server that just
// started (it may have forgotten a holder; nobody holds the lock) is
// reported by -v as such, not as contended. The TTL (the quiet period)
// is long enough that the servers, started moments before, are still
// in it at zklock's first attempt.
func TestVerboseQuietWait(t *testing.T) {
	for _, tc := range []struct {
		name, lock string
		start      func(t *testing.T) []string
	}{
		{"redis", "redislock", func(t *testing.T) []string {
			return []string{"--backend", "redis", "--redis", harness.StartRedis(t).Addr()}
		}},
		{"redlock", "redlock", func(t *testing.T) []string {
			r := harness.StartRedisN(t, 3)
			return []string{"--backend", "redlock", "--redis", r[0].Addr() + "," + r[1].Addr() + "," + r[2].Addr()}
		}},
		{"memcached", "memcachedlock", func(t *testing.T) []string {
			return []string{"--backend", "memcached", "--memcached", harness.StartMemcached(t).Addr()}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := lockPath(t)
			args := append(tc.start(t), "--ttl", "10s", "-v", path, "--", "true")
			code, p := runZklock(t, args...)
			require.Equal(t, exitOK, code, "stderr: %s", p.stderr)
			assert.Regexp(t, verboseAcquired(tc.lock+" "+path, "quiet period after a restart"), p.stderr.String())
			assert.NotContains(t, p.stderr.String(), "contended")
		})
	}
}
