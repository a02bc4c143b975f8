package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// -v reports a long wait every --progress with the position in the queue
// and the holder with how long it has held, and shows ZooKeeper's return
// after a restart (Reconnected, the session kept), not only its loss.
func TestVerboseWaitProgressAndReconnect(t *testing.T) {
	zk := harness.StartZK(t, 1)
	srv := zk.ConnectString()
	path := lockPath(t)
	holder := holdLock(t, srv, path, "--data", "the-holder")
	waiter := startZklock(t, "--servers", srv, "-v", "--progress", "200ms", path, "--", "echo", "ran")
	waitUntil(t, "a progress line", func() (bool, string) {
		return regexp.MustCompile(`zklock: still waiting for mutex ` + regexp.QuoteMeta(path) + ` after \S+: position 1 in the queue; held by the-holder, session 0x[0-9a-f]+ for \S+`).
			MatchString(waiter.stderr.String()), waiter.stderr.String()
	})

	m := zk.Members()[0]
	m.Stop(t)
	waiter.waitOutput(t, waiter.stderr, "state=Suspended")
	m.Start(t)
	waiter.waitOutput(t, waiter.stderr, "zklock: reconnected to ZooKeeper (session 0x")

	// The holder was told at the suspension: its lock is lost; the
	// waiter's queue node, of a session kept, then holds.
	assert.Equal(t, exitLockLost, holder.wait(t))
	assert.Equal(t, exitOK, waiter.wait(t), "stderr: %s", waiter.stderr)
	assert.Equal(t, "ran\n", waiter.stdout.String())
}

// Without -v, or with --progress 0, no progress line is printed.
func TestProgressOff(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	holder := holdLock(t, srv, path)
	waiter := startZklock(t, "--servers", srv, "-v", "--progress", "0", "--timeout", "1s", path, "--", "true")
	assert.Equal(t, exitTempFail, waiter.wait(t))
	assert.NotContains(t, waiter.stderr.String(), "still waiting")
	holder.closeStdin(t)
	assert.Equal(t, exitOK, holder.wait(t))
}
