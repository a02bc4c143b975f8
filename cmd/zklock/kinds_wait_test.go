package main

import (
	"context"
	"regexp"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --timeout behind an exclusive holder: exit 75, the command does not run,
// and nothing of the waiter is left (its waiters have no nodes anyway).
func TestExclusiveTimeout(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	holder := holdLock(t, srv, path, "--exclusive", "--data", "the-holder")

	code, waiter := runZklock(t, "--servers", srv, "--exclusive", "--timeout", "1s", "--data", "the-waiter",
		path, "--", "echo", "ran")
	assert.Equal(t, 75, code)
	assert.Contains(t, waiter.stderr.String(),
		"zklock: timed out after 1s waiting for exclusive "+path+" (held by the-holder, session 0x")
	assert.Empty(t, waiter.stdout.String(), "the command must not run")

	code, try := runZklock(t, "--servers", srv, "--exclusive", "--try", path, "--", "echo", "ran")
	assert.Equal(t, 75, code)
	assert.Contains(t, try.stderr.String(), "zklock: exclusive "+path+" is held (held by the-holder, session 0x")
	assert.Empty(t, try.stdout.String())

	require.Equal(t, []string{"lock"}, children(t, c, path), "only the holder's node is left")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	data, _, err := c.Get(ctx, path+"/lock")
	require.NoError(t, err)
	assert.Equal(t, "the-holder", string(data))

	holder.closeStdin(t)
	assert.Equal(t, 0, holder.wait(t))
	assert.Empty(t, children(t, c, path))
}

// --try and --timeout messages name the holders of the read/write lock.
func TestTryReadWrite(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	reader := holdLock(t, srv, path, "--read", "--data", "r1")

	code, p := runZklock(t, "--servers", srv, "--try", "--read", path, "--", "echo", "ran")
	assert.Equal(t, 0, code, "a reader shares the lock: stderr: %s", p.stderr)
	assert.Equal(t, "ran\n", p.stdout.String())

	code, p = runZklock(t, "--servers", srv, "--try", "--write", path, "--", "echo", "ran")
	assert.Equal(t, 75, code)
	assert.Contains(t, p.stderr.String(), "zklock: rwlock "+path+" (write) is held (held by reader r1, session 0x")
	assert.Empty(t, p.stdout.String())
	require.Len(t, children(t, c, path), 1, "the refused writer left nothing")

	// A writer waits behind the reader: a new reader is refused, and the
	// message names the waiting writer that keeps it out.
	queued := startZklock(t, "--servers", srv, "--write", "--data", "w0", path, "--", "true")
	rwParticipants(t, c, path, 2)
	code, p = runZklock(t, "--servers", srv, "--try", "--read", path, "--", "echo", "ran")
	assert.Equal(t, 75, code)
	assert.Regexp(t, `zklock: rwlock `+regexp.QuoteMeta(path)+
		` \(read\) is held \(held by reader r1, session 0x[0-9a-f]+; waiting: writer w0, session 0x[0-9a-f]+\)\n`, p.stderr.String())
	assert.Empty(t, p.stdout.String())

	reader.closeStdin(t)
	assert.Equal(t, 0, reader.wait(t))
	assert.Equal(t, 0, queued.wait(t), "stderr: %s", queued.stderr)
	writer := holdLock(t, srv, path, "--write", "--data", "w1")
	code, p = runZklock(t, "--servers", srv, "--timeout", "1s", "--read", path, "--", "echo", "ran")
	assert.Equal(t, 75, code)
	assert.Contains(t, p.stderr.String(),
		"zklock: timed out after 1s waiting for rwlock "+path+" (read) (held by writer w1, session 0x")
	assert.Empty(t, p.stdout.String())
	writer.closeStdin(t)
	assert.Equal(t, 0, writer.wait(t))
	assert.Empty(t, children(t, c, path))
}

// SIGTERM to a --read waiting behind a writer: the wait stops and its node
// goes.
func TestReadSignalWhileWaiting(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	writer := holdLock(t, srv, path, "--write", "--data", "the-writer")
	reader := startZklock(t, "--servers", srv, "--read", path, "--", "echo", "ran")
	rwParticipants(t, c, path, 2)
	reader.signal(t, syscall.SIGTERM)
	assert.Equal(t, 143, reader.wait(t))
	assert.Contains(t, reader.stderr.String(), "zklock: interrupted by SIGTERM while waiting for rwlock "+path+" (read)")
	assert.Empty(t, reader.stdout.String())
	rwParticipants(t, c, path, 1)
	writer.closeStdin(t)
	assert.Equal(t, 0, writer.wait(t))
}
