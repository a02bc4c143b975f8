package main

import (
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --timeout behind a holder: exit 75, and the waiter's node is gone.
func TestTimeoutBehindHolder(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	holder := holdLock(t, srv, path, "--data", "the-holder")

	waiter := startZklock(t, "--servers", srv, "--timeout", "5s", "--data", "the-waiter", path, "--", "echo", "ran")
	// The waiter queues (its node shows up), then gives up.
	sawQueued := false
	waitUntil(t, "the waiter to queue or exit", func() (bool, string) {
		ps := participants(t, c, path)
		if len(ps) == 2 && string(ps[1].Data) == "the-waiter" {
			sawQueued = true
		}
		return sawQueued || waiter.exited(), describe(ps)
	})
	assert.True(t, sawQueued, "the waiter's node was never seen queued")
	assert.Equal(t, 75, waiter.wait(t))
	assert.Contains(t, waiter.stderr.String(), "zklock: timed out after 5s waiting for mutex "+path+" (held by the-holder, session 0x")
	assert.Empty(t, waiter.stdout.String(), "the command must not run")

	// No node of the timed-out process is left: ZooKeeper's listing and
	// zklock ls show the holder only.
	ps := participants(t, c, path)
	require.Len(t, ps, 1, "left: %s", describe(ps))
	assert.Equal(t, "the-holder", string(ps[0].Data))
	code, ls := runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(ls.stdout.String()), "\n")
	require.Len(t, lines, 1, "ls:\n%s", ls.stdout)
	assert.True(t, strings.HasPrefix(lines[0], "0\tholder\tmutex\t"+ps[0].Name+"\t"), "ls: %q", lines[0])

	holder.closeStdin(t)
	assert.Equal(t, 0, holder.wait(t))
	assert.Empty(t, participants(t, c, path))
}

func TestTry(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	holder := holdLock(t, srv, path, "--data", "the-holder")

	code, p := runZklock(t, "--servers", srv, "--try", path, "--", "echo", "ran")
	assert.Equal(t, 75, code)
	assert.Contains(t, p.stderr.String(), "zklock: mutex "+path+" is held (held by the-holder, session 0x")
	assert.Empty(t, p.stdout.String(), "the command must not run")
	ps := participants(t, c, path)
	require.Len(t, ps, 1, "left: %s", describe(ps))

	holder.closeStdin(t)
	require.Equal(t, 0, holder.wait(t))
	code, p = runZklock(t, "--servers", srv, "--try", path, "--", "echo", "ran")
	assert.Equal(t, 0, code, "stderr: %s", p.stderr)
	assert.Equal(t, "ran\n", p.stdout.String())
	assert.Empty(t, participants(t, c, path))
}

// SIGTERM or SIGINT while waiting: the wait stops, the node goes, and the
// status is the shell's for the signal.
func TestSignalWhileWaiting(t *testing.T) {
	srv := zkServers(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
	}{
		{syscall.SIGTERM, 143},
		{syscall.SIGINT, 130},
	} {
		t.Run(signalName(tc.sig), func(t *testing.T) {
			path := lockPath(t)
			c := zkClient(t, srv)
			holder := holdLock(t, srv, path, "--data", "the-holder")

			waiter := startZklock(t, "--servers", srv, "-v", "--data", "the-waiter", path, "--", "echo", "ran")
			ps := waitParticipants(t, c, path, 2)
			require.Equal(t, "the-waiter", string(ps[1].Data))
			waiter.signal(t, tc.sig)
			assert.Equal(t, tc.want, waiter.wait(t))
			assert.Contains(t, waiter.stderr.String(),
				"zklock: interrupted by "+signalName(tc.sig)+" while waiting for mutex "+path)
			assert.Empty(t, waiter.stdout.String())

			ps = participants(t, c, path)
			require.Len(t, ps, 1, "left: %s", describe(ps))
			assert.Equal(t, "the-holder", string(ps[0].Data))

			holder.closeStdin(t)
			assert.Equal(t, 0, holder.wait(t))
		})
	}
}
