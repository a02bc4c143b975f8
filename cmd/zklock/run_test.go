package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExitStatusPassthrough(t *testing.T) {
	srv := zkServers(t)
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"true", 0},
		{"exit 3", 3},
		{"kill -KILL $$", 128 + 9}, // killed by a signal: 128+N, as a shell reports it
	} {
		t.Run(tc.script, func(t *testing.T) {
			code, p := runZklock(t, "--servers", srv, lockPath(t), "--", "sh", "-c", tc.script)
			assert.Equal(t, tc.want, code, "stderr: %s", p.stderr)
			assert.Empty(t, participants(t, zkClient(t, srv), lockPath(t)), "lock released")
		})
	}
}

func TestEnvironment(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	script := `echo "path=$ZKLOCK_PATH"; echo "node=$ZKLOCK_NODE"; echo "token=$ZKLOCK_TOKEN"; echo "arg=$1"`
	env := func() map[string]string {
		code, p := runZklock(t, "--servers", srv, "-v", path, "--", "sh", "-c", script, "sh", "an arg")
		require.Equal(t, 0, code, "stderr: %s", p.stderr)
		out := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(p.stdout.String()), "\n") {
			k, v, _ := strings.Cut(line, "=")
			out[k] = v
		}
		assert.Contains(t, p.stderr.String(), "zklock: waiting for mutex "+path)
		assert.Contains(t, p.stderr.String(),
			fmt.Sprintf("zklock: acquired mutex %s (token %s, node %s)", path, out["token"], out["node"]))
		assert.Contains(t, p.stderr.String(), "zklock: released mutex "+path)
		return out
	}
	first := env()
	assert.Equal(t, path, first["path"])
	assert.True(t, strings.HasPrefix(first["node"], path+"/_c_"), "node %q under %s", first["node"], path)
	assert.Contains(t, first["node"], "-lock-")
	assert.Equal(t, "an arg", first["arg"])
	tok1, err := strconv.ParseInt(first["token"], 10, 64)
	require.NoError(t, err, "token %q", first["token"])
	assert.Positive(t, tok1)

	second := env()
	tok2, err := strconv.ParseInt(second["token"], 10, 64)
	require.NoError(t, err)
	assert.Greater(t, tok2, tok1, "fencing tokens grow from holder to holder")
	assert.NotEqual(t, first["node"], second["node"])
}

func TestNamespace(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	const ns = "/zklock-test-ns"
	p := startZklock(t, "--servers", srv, "--namespace", ns, path, "--",
		"sh", "-c", `echo "node=$ZKLOCK_NODE"; read x; exit 0`)
	p.waitOutput(t, p.stdout, "\n")
	node := strings.TrimSpace(strings.TrimPrefix(p.stdout.String(), "node="))
	require.True(t, strings.HasPrefix(node, path+"/"), "ZKLOCK_NODE %q is without the namespace", node)

	c := zkClient(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ok, _, err := c.Exists(ctx, ns+node)
	require.NoError(t, err)
	assert.True(t, ok, "the node lives under the namespace on the server")
	assert.Len(t, participants(t, c, ns+path), 1)

	code, ls := runZklock(t, "ls", "--servers", srv, "--namespace", ns, path)
	require.Equal(t, 0, code, "stderr: %s", ls.stderr)
	assert.Contains(t, ls.stdout.String(), "\tholder\tmutex\t"+node[len(path)+1:]+"\t")

	p.closeStdin(t)
	assert.Equal(t, 0, p.wait(t))
	assert.Empty(t, participants(t, c, ns+path))
}

// Several zklocks on one path: the commands' start and end markers never
// interleave.
func TestNoOverlap(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	file := filepath.Join(t.TempDir(), "markers")
	const n = 4
	script := `echo "start $1" >> "$2"; sleep 0.2; echo "end $1" >> "$2"`

	var wg sync.WaitGroup
	codes := make([]int, n)
	procs := make([]*proc, n)
	for i := range n {
		procs[i] = startZklock(t, "--servers", srv, path, "--", "sh", "-c", script, "sh", strconv.Itoa(i), file)
	}
	for i := range n {
		wg.Go(func() { codes[i] = procs[i].wait(t) })
	}
	wg.Wait()
	for i, code := range codes {
		assert.Equal(t, 0, code, "zklock %d: %s", i, procs[i].stderr)
	}

	data, err := os.ReadFile(file)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	require.Len(t, lines, 2*n, "markers:\n%s", data)
	seen := map[string]bool{}
	for i := 0; i < len(lines); i += 2 {
		id, ok := strings.CutPrefix(lines[i], "start ")
		require.True(t, ok, "line %d should start a command:\n%s", i, data)
		require.Equal(t, "end "+id, lines[i+1], "command %s overlapped another:\n%s", id, data)
		require.False(t, seen[id], "command %s ran twice", id)
		seen[id] = true
	}
	assert.Empty(t, participants(t, zkClient(t, srv), path))
}

func TestCommandCannotRun(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	// The command is looked up before anything else: no ZooKeeper is needed
	// (port 1 has none), and no lock is taken for a command that cannot run.
	for _, tc := range []struct {
		name string
		cmd  string
		want int
		msg  string
	}{
		{"not in PATH", "zklock-test-no-such-command", 127, "command not found"},
		{"no such file", filepath.Join(dir, "missing"), 127, "no such file or directory"},
		{"not executable", notExec, 126, "permission denied"},
		{"directory", dir, 126, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, p := runZklock(t, "--servers", "127.0.0.1:1", "/zklock-test/cannot-run", "--", tc.cmd, "arg")
			assert.Equal(t, tc.want, code)
			assert.Contains(t, p.stderr.String(), "zklock: "+tc.cmd+": "+tc.msg)
		})
	}
}
