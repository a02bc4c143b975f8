package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/session"
)

// trapScript reports the signals its shell gets, stopping its background
// sleep, and exits with a status of its own per signal. It prints
// "ready PGID" once the traps are set.
const trapScript = `
trap 'kill $! 2>/dev/null; echo "got TERM"; exit 7' TERM
trap 'kill $! 2>/dev/null; echo "got INT"; exit 8' INT
echo "ready $$"
sleep 120 &
wait`

// A signal to zklock while the command runs is forwarded to the command;
// zklock then releases and exits with the command's status.
func TestSignalWhileRunning(t *testing.T) {
	srv := zkServers(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
		out  string
	}{
		{syscall.SIGTERM, 7, "got TERM"},
		{syscall.SIGINT, 8, "got INT"},
	} {
		t.Run(signalName(tc.sig), func(t *testing.T) {
			path := lockPath(t)
			p := startZklock(t, "--servers", srv, "-v", path, "--", "sh", "-c", trapScript)
			pgid := readyPGID(t, p)
			p.signal(t, tc.sig)
			assert.Equal(t, tc.want, p.wait(t))
			assert.Contains(t, p.stdout.String(), tc.out)
			assert.Contains(t, p.stderr.String(), "zklock: released mutex "+path)
			assert.Empty(t, participants(t, zkClient(t, srv), path))
			waitGroupGone(t, pgid)
		})
	}
}

// readyPGID parses the "ready PGID" line of trapScript, and waits until
// the script's sleep runs: a signal that reaches a shell's child between
// fork and exec is caught by the shell's trap and lost, and the sleep would
// outlive the test.
func readyPGID(t *testing.T, p *proc) int {
	t.Helper()
	p.waitOutput(t, p.stdout, "\n")
	line, _, _ := strings.Cut(p.stdout.String(), "\n")
	pgid, err := strconv.Atoi(strings.TrimPrefix(line, "ready "))
	require.NoError(t, err, "line %q", line)
	waitUntil(t, "the command's sleep to run", func() (bool, string) {
		return groupRuns(pgid, "sleep"), "no sleep in process group " + line
	})
	return pgid
}

// groupRuns reports whether a process named comm runs in process group pgid.
func groupRuns(pgid int, comm string) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid pgrp ..."
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open {
			continue
		}
		f := bytes.Fields(b[end+1:])
		if string(b[open+1:end]) == comm && len(f) >= 3 && string(f[2]) == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// deleteHolderNode deletes the lock's only node with another session, as
// an operator (or a bug) might: the holder's lease ends.
func deleteHolderNode(t *testing.T, c *session.Client, path string) string {
	t.Helper()
	ps := waitParticipants(t, c, path, 1)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	node := ps[0].Path
	require.NoError(t, c.Delete(ctx, node, -1))
	return node
}

// The lock node is deleted while the command runs: its process group gets
// SIGTERM and zklock exits 76 naming the cause.
func TestLockLostNodeDeleted(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	p := startZklock(t, "--servers", srv, path, "--", "sh", "-c", trapScript)
	pgid := readyPGID(t, p)

	node := deleteHolderNode(t, c, path)
	// The lease must end when its node is deleted (recipes.Lease contract).
	assert.Equal(t, 76, p.waitFor(t, "zklock to see its lock node deleted (lease.Done)"))
	assert.Contains(t, p.stdout.String(), "got TERM", "the command got SIGTERM")
	stderr := p.stderr.String()
	assert.Contains(t, stderr, "zklock: mutex "+path+" lost while sh was running")
	assert.Contains(t, stderr, "lock node "+node+" was deleted")
	assert.Contains(t, stderr, "SIGTERM sent to its process group; sh exited with status 7")
	assert.NotContains(t, stderr, "SIGKILL")
	waitGroupGone(t, pgid)
	assert.Empty(t, participants(t, c, path))
}

// A command that ignores SIGTERM is killed after --grace. (The lock is lost
// to a partition here, so that this test does not depend on node deletion.)
func TestLockLostGraceKill(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	proxy := harness.NewProxy(t, strings.Split(srv, ",")[0])
	// The background sleep inherits the ignored SIGTERM too.
	script := `trap '' TERM; echo "ready $$"; sleep 60 & wait`
	p := startZklock(t, "--servers", proxy.Addr(), "--session-timeout", "2s", "--grace", "300ms",
		path, "--", "sh", "-c", script)
	pgid := readyPGID(t, p)

	proxy.Blackhole(t)
	assert.Equal(t, 76, p.wait(t))
	stderr := p.stderr.String()
	assert.Contains(t, stderr, "zklock: mutex "+path+" lost while sh was running")
	assert.Contains(t, stderr, "then SIGKILL after --grace 300ms; sh exited with status 137")
	waitGroupGone(t, pgid)
}

// The session is cut off by a network partition (a blackholed proxy) while
// the command runs: the connection is suspended, which the library treats
// as a lost lock; the command gets SIGTERM and zklock exits 76.
func TestLockLostPartition(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	proxy := harness.NewProxy(t, strings.Split(srv, ",")[0])
	p := startZklock(t, "--servers", proxy.Addr(), "--session-timeout", "2s", path, "--", "sh", "-c", trapScript)
	readyPGID(t, p)
	waitParticipants(t, c, path, 1)

	proxy.Blackhole(t)
	assert.Equal(t, 76, p.wait(t))
	assert.Contains(t, p.stdout.String(), "got TERM")
	stderr := p.stderr.String()
	assert.Contains(t, stderr, "zklock: mutex "+path+" lost while sh was running")
	assert.Contains(t, stderr, "connection suspended")
	// The server expires the partitioned session, and its node with it.
	waitParticipants(t, c, path, 0)
	proxy.Restore(t)
}
