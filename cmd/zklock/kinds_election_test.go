package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --leader runs COMMAND while leading the election at PATH; ls shows the
// leader and the candidates.
func TestLeader(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	first := holdLock(t, srv, path, "--leader", "--data", "first")
	second := startZklock(t, "--servers", srv, "--leader", "--data", "second", path, "--", "sh", "-c", holdScript)
	waitUntil(t, "the second candidate queued", func() (bool, string) {
		code, p := runZklock(t, "ls", "--servers", srv, path)
		out := p.stdout.String()
		return code == 0 && strings.Count(out, "\n") == 2, out
	})
	code, p := runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, exitOK, code)
	lines := strings.Split(strings.TrimSpace(withoutHeld(t, p.stdout.String())), "\n")
	assert.Regexp(t, "^0\tholder\tleader\t.*\tfirst$", lines[0])
	assert.Regexp(t, "^1\twaiter\tleader\t.*\tsecond$", lines[1])
	first.closeStdin(t)
	assert.Equal(t, exitOK, first.wait(t))
	second.waitOutput(t, second.stdout, "ready")
	second.closeStdin(t)
	assert.Equal(t, exitOK, second.wait(t))
}

// --semaphore N: at most N commands run at once; ls shows the leases.
func TestSemaphore(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	a := holdLock(t, srv, path, "--semaphore", "2", "--data", "a")
	b := holdLock(t, srv, path, "--semaphore", "2", "--data", "b")
	code, p := runZklock(t, "--servers", srv, "--semaphore", "2", "--try", path, "--", "true")
	assert.Equal(t, exitTempFail, code, "the third lease is refused: stderr %s", p.stderr)
	code, p = runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, exitOK, code)
	assert.Equal(t, 2, strings.Count(p.stdout.String(), "\tholder\tsemaphore\t"), p.stdout.String())
	withoutHeld(t, p.stdout.String()) // the leases' hold times
	a.closeStdin(t)
	assert.Equal(t, exitOK, a.wait(t))
	code, _ = runZklock(t, "--servers", srv, "--semaphore", "2", "--try", path, "--", "true")
	assert.Equal(t, exitOK, code, "a lease is free again")
	b.closeStdin(t)
	assert.Equal(t, exitOK, b.wait(t))
	code, _ = runZklock(t, "--servers", srv, "--semaphore", "0", path, "--", "true")
	assert.Equal(t, exitUsage, code)
}
