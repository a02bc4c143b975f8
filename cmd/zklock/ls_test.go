package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLs(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)

	code, p := runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String(), "a lock path that does not exist lists nothing")

	holder := holdLock(t, srv, path, "--data", "holder data")
	// Waiters join one at a time, so the queue order is known.
	w1 := startZklock(t, "--servers", srv, path, "--", "true") // default data: HOSTNAME:PID
	waitParticipants(t, c, path, 2)
	w2 := startZklock(t, "--servers", srv, "--data", "tab\there", path, "--", "true")
	ps := waitParticipants(t, c, path, 3)

	host, err := os.Hostname()
	require.NoError(t, err)
	wantData := []string{"holder data", fmt.Sprintf("%s:%d", host, w1.cmd.Process.Pid), `"tab\there"`}
	wantRole := []string{"holder", "waiter", "waiter"}
	var want []string
	for i, p := range ps {
		want = append(want, fmt.Sprintf("%d\t%s\tmutex\t%s\t0x%x\t%s", i, wantRole[i], p.Name, p.SessionID, wantData[i]))
	}
	code, p = runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	assert.Equal(t, strings.Join(want, "\n")+"\n", p.stdout.String())
	assert.Empty(t, p.stderr.String())

	// Flags may also follow PATH.
	code, p = runZklock(t, "ls", path, "--servers", srv)
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	assert.Equal(t, strings.Join(want, "\n")+"\n", p.stdout.String())

	for _, w := range []*proc{w1, w2} {
		w.signal(t, syscall.SIGTERM)
		assert.Equal(t, 143, w.wait(t))
	}
	holder.closeStdin(t)
	require.Equal(t, 0, holder.wait(t))
	code, p = runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, 0, code)
	assert.Empty(t, p.stdout.String(), "a free lock lists nothing")
}
