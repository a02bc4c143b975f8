package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/rwlock"
)

// markerScript appends "start ID" and "end ID" to FILE around a short
// pause (only to give an overlap a chance to show): sh -c markerScript sh
// ID FILE.
const markerScript = `echo "start $1" >> "$2"; sleep 0.2; echo "end $1" >> "$2"`

// runMarked starts one zklock per id at once, each with its flags and
// markerScript, waits for all of them (each must exit 0) and returns the
// marker lines.
func runMarked(t *testing.T, srv, path string, flags map[string][]string) []string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "markers")
	ids := slices.Sorted(maps.Keys(flags))
	procs := make([]*proc, len(ids))
	for i, id := range ids {
		args := append([]string{"--servers", srv}, flags[id]...)
		procs[i] = startZklock(t, append(args, path, "--", "sh", "-c", markerScript, "sh", id, file)...)
	}
	codes := make([]int, len(ids))
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() { codes[i] = procs[i].wait(t) })
	}
	wg.Wait()
	for i, code := range codes {
		require.Equal(t, 0, code, "zklock %s: %s", ids[i], procs[i].stderr)
	}
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// checkMarkers checks marker lines: every id starts once and ends once, and
// an exclusive id (a writer) starts only while no one else runs and ends
// before anyone else starts. Non-exclusive ids may overlap each other.
func checkMarkers(t *testing.T, lines []string, ids []string, exclusive func(id string) bool) {
	t.Helper()
	all := strings.Join(lines, "\n")
	running := map[string]bool{}
	started := map[string]bool{}
	for i, line := range lines {
		what, id, _ := strings.Cut(line, " ")
		switch what {
		case "start":
			require.False(t, started[id], "%s started twice:\n%s", id, all)
			started[id] = true
			if exclusive(id) {
				require.Empty(t, running, "%s started while others ran (line %d):\n%s", id, i, all)
				require.Less(t, i+1, len(lines), "%s never ended:\n%s", id, all)
				require.Equal(t, "end "+id, lines[i+1], "%s overlapped another (line %d):\n%s", id, i, all)
			}
			running[id] = true
		case "end":
			require.True(t, running[id], "%s ended without starting (line %d):\n%s", id, i, all)
			delete(running, id)
		default:
			t.Fatalf("bad marker line %d %q:\n%s", i, line, all)
		}
	}
	require.Empty(t, running, "not ended:\n%s", all)
	for _, id := range ids {
		require.True(t, started[id], "%s never ran:\n%s", id, all)
	}
}

// Two readers hold the lock at once: each command waits (bounded) until it
// sees the other's marker; neither could finish if they did not overlap.
func TestReadersOverlap(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	dir := t.TempDir()
	// sh -c script sh MINE OTHER
	const script = `touch "$0/$1"; i=0
while [ ! -e "$0/$2" ]; do
	i=$((i+1)); if [ "$i" -gt 2000 ]; then echo "never saw $2" >&2; exit 9; fi
	sleep 0.01
done`
	a := startZklock(t, "--servers", srv, "--read", path, "--", "sh", "-c", script, dir, "a", "b")
	b := startZklock(t, "--servers", srv, "--read", path, "--", "sh", "-c", script, dir, "b", "a")
	assert.Equal(t, 0, a.wait(t), "stderr: %s", a.stderr)
	assert.Equal(t, 0, b.wait(t), "stderr: %s", b.stderr)
	assert.Empty(t, children(t, zkClient(t, srv), path))
}

// Writers and readers started together: a writer never runs alongside
// anyone; readers may share.
func TestWriteExcludesRead(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	flags := map[string][]string{
		"W1": {"--write"}, "W2": {"--write"},
		"R1": {"--read"}, "R2": {"--read"}, "R3": {"--read"},
	}
	lines := runMarked(t, srv, path, flags)
	checkMarkers(t, lines, []string{"W1", "W2", "R1", "R2", "R3"},
		func(id string) bool { return strings.HasPrefix(id, "W") })
	assert.Empty(t, children(t, zkClient(t, srv), path))
}

// A writer queued behind a reader waits for it, and a reader queued behind
// that writer waits for the writer (no writer starvation).
func TestWriteWaitsForReadAndReadBehindWriteWaits(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	file := filepath.Join(t.TempDir(), "markers")
	reader := holdLock(t, srv, path, "--read", "--data", "r1")

	writer := startZklock(t, "--servers", srv, "--write", path, "--", "sh", "-c", markerScript, "sh", "W", file)
	rwParticipants(t, c, path, 2)
	late := startZklock(t, "--servers", srv, "--read", path, "--", "sh", "-c", markerScript, "sh", "R", file)
	nodes := rwParticipants(t, c, path, 3)
	require.Contains(t, nodes[1], rwlock.WriteName, "queue: %v", nodes)
	require.Contains(t, nodes[2], rwlock.ReadName, "queue: %v", nodes)
	_, err := os.Stat(file)
	require.True(t, os.IsNotExist(err), "nothing may run while the first reader holds the lock (writer) or a writer is ahead (reader)")

	reader.closeStdin(t)
	assert.Equal(t, 0, reader.wait(t))
	assert.Equal(t, 0, writer.wait(t), "stderr: %s", writer.stderr)
	assert.Equal(t, 0, late.wait(t), "stderr: %s", late.stderr)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "start W\nend W\nstart R\nend R\n", string(data))
	assert.Empty(t, children(t, c, path))
}

func TestWriteExcludesWrite(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	flags := map[string][]string{}
	var ids []string
	for i := range 4 {
		id := "W" + strconv.Itoa(i)
		flags[id], ids = []string{"--write"}, append(ids, id)
	}
	lines := runMarked(t, srv, path, flags)
	checkMarkers(t, lines, ids, func(string) bool { return true })
	assert.Empty(t, children(t, zkClient(t, srv), path))
}

func TestExclusiveMutualExclusion(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	flags := map[string][]string{}
	var ids []string
	for i := range 4 {
		id := "X" + strconv.Itoa(i)
		flags[id], ids = []string{"--exclusive"}, append(ids, id)
	}
	lines := runMarked(t, srv, path, flags)
	checkMarkers(t, lines, ids, func(string) bool { return true })
	assert.Empty(t, children(t, zkClient(t, srv), path))
}
