package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/session"
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

// children lists the nodes under path (none if it does not exist).
func children(t *testing.T, c *session.Client, path string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	names, _, err := c.Children(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	require.NoError(t, err)
	slices.Sort(names)
	return names
}

// waitChildren waits (bounded) until path has n nodes, and returns them.
func waitChildren(t *testing.T, c *session.Client, path string, n int) []string {
	t.Helper()
	var names []string
	waitUntil(t, fmt.Sprintf("%d nodes under %s", n, path), func() (bool, string) {
		names = children(t, c, path)
		return len(names) == n, fmt.Sprint(names)
	})
	return names
}

// rwParticipants waits (bounded) until the read/write lock at path has n
// nodes and returns them in queue order.
func rwParticipants(t *testing.T, c *session.Client, path string, n int) []string {
	t.Helper()
	l, err := rwlock.New(c, path)
	require.NoError(t, err)
	var nodes []string
	waitUntil(t, fmt.Sprintf("%d readers and writers at %s", n, path), func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		ps, err := l.Participants(ctx)
		require.NoError(t, err)
		nodes = nodes[:0]
		for _, p := range ps {
			nodes = append(nodes, p.Node)
		}
		return len(ps) == n, fmt.Sprint(nodes)
	})
	return nodes
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
		"zklock: timed out after 1s waiting for exclusive lock "+path+" (held by the-holder, session 0x")
	assert.Empty(t, waiter.stdout.String(), "the command must not run")

	code, try := runZklock(t, "--servers", srv, "--exclusive", "--try", path, "--", "echo", "ran")
	assert.Equal(t, 75, code)
	assert.Contains(t, try.stderr.String(), "zklock: exclusive lock "+path+" is held (held by the-holder, session 0x")
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
	assert.Contains(t, p.stderr.String(), "zklock: write lock "+path+" is held (held by reader r1, session 0x")
	assert.Empty(t, p.stdout.String())
	require.Len(t, children(t, c, path), 1, "the refused writer left nothing")

	// A writer waits behind the reader: a new reader is refused, and the
	// message names the waiting writer that keeps it out.
	queued := startZklock(t, "--servers", srv, "--write", "--data", "w0", path, "--", "true")
	rwParticipants(t, c, path, 2)
	code, p = runZklock(t, "--servers", srv, "--try", "--read", path, "--", "echo", "ran")
	assert.Equal(t, 75, code)
	assert.Regexp(t, `zklock: read lock `+regexp.QuoteMeta(path)+
		` is held \(held by reader r1, session 0x[0-9a-f]+; waiting: writer w0, session 0x[0-9a-f]+\)\n`, p.stderr.String())
	assert.Empty(t, p.stdout.String())

	reader.closeStdin(t)
	assert.Equal(t, 0, reader.wait(t))
	assert.Equal(t, 0, queued.wait(t), "stderr: %s", queued.stderr)
	writer := holdLock(t, srv, path, "--write", "--data", "w1")
	code, p = runZklock(t, "--servers", srv, "--timeout", "1s", "--read", path, "--", "echo", "ran")
	assert.Equal(t, 75, code)
	assert.Contains(t, p.stderr.String(),
		"zklock: timed out after 1s waiting for read lock "+path+" (held by writer w1, session 0x")
	assert.Empty(t, p.stdout.String())
	writer.closeStdin(t)
	assert.Equal(t, 0, writer.wait(t))
	assert.Empty(t, children(t, c, path))
}

// Each kind: --data is stored in the node, the environment names the node,
// -v names the kind of lock.
func TestKindsEnvironmentAndMessages(t *testing.T) {
	srv := zkServers(t)
	for _, tc := range []struct {
		flag, noun, node string // node: what ZKLOCK_NODE holds after PATH/
	}{
		{"--read", "read lock", rwlock.ReadName},
		{"--write", "write lock", rwlock.WriteName},
		{"--exclusive", "exclusive lock", "lock"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			path := lockPath(t)
			c := zkClient(t, srv)
			const script = `echo "node=$ZKLOCK_NODE token=$ZKLOCK_TOKEN path=$ZKLOCK_PATH"; read x; exit 0`
			p := startZklock(t, "--servers", srv, "-v", tc.flag, "--data", "data of "+tc.flag,
				path, "--", "sh", "-c", script)
			p.waitOutput(t, p.stdout, "\n")
			fields := map[string]string{}
			for _, f := range strings.Fields(p.stdout.String()) {
				k, v, _ := strings.Cut(f, "=")
				fields[k] = v
			}
			assert.Equal(t, path, fields["path"])
			node := fields["node"]
			require.True(t, strings.HasPrefix(node, path+"/"), "ZKLOCK_NODE %q", node)
			assert.Contains(t, node[len(path)+1:], tc.node)
			tok, err := strconv.ParseInt(fields["token"], 10, 64)
			require.NoError(t, err, "ZKLOCK_TOKEN %q", fields["token"])
			assert.Positive(t, tok)

			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			data, _, err := c.Get(ctx, node)
			require.NoError(t, err)
			assert.Equal(t, "data of "+tc.flag, string(data))

			p.closeStdin(t)
			require.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
			stderr := p.stderr.String()
			assert.Contains(t, stderr, "zklock: waiting for "+tc.noun+" "+path+"\n")
			assert.Contains(t, stderr, fmt.Sprintf("zklock: acquired %s %s (token %d, node %s)\n", tc.noun, path, tok, node))
			assert.Contains(t, stderr, "zklock: released "+tc.noun+" "+path+"\n")
			assert.Empty(t, children(t, c, path))
		})
	}
}

// ls on a read/write lock: two readers hold, a writer waits behind them,
// and a reader behind the writer waits too.
func TestLsReadWrite(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	r1 := holdLock(t, srv, path, "--read", "--data", "reader one")
	r2 := holdLock(t, srv, path, "--read", "--data", "reader two")
	w := startZklock(t, "--servers", srv, "--write", "--data", "the writer", path, "--", "true")
	rwParticipants(t, c, path, 3)
	r3 := startZklock(t, "--servers", srv, "--read", "--data", "reader three", path, "--", "true")
	nodes := rwParticipants(t, c, path, 4)

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	want := ""
	for i, tc := range []struct{ role, kind, data string }{
		{"holder", "read", "reader one"},
		{"holder", "read", "reader two"},
		{"waiter", "write", "the writer"},
		{"waiter", "read", "reader three"},
	} {
		data, st, err := c.Get(ctx, session.JoinPath(path, nodes[i]))
		require.NoError(t, err)
		require.Equal(t, tc.data, string(data), "queue order: %v", nodes)
		want += fmt.Sprintf("%d\t%s\t%s\t%s\t0x%x\t%s\n", i, tc.role, tc.kind, nodes[i], st.EphemeralOwner, tc.data)
	}
	code, ls := runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, 0, code, "stderr: %s", ls.stderr)
	assert.Equal(t, want, ls.stdout.String())
	assert.Empty(t, ls.stderr.String())

	r1.closeStdin(t)
	r2.closeStdin(t)
	for _, p := range []*proc{r1, r2, w, r3} {
		assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	}
	code, ls = runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, 0, code)
	assert.Empty(t, ls.stdout.String(), "a free lock lists nothing")
}

// ls on an exclusive lock: its node is the holder; its waiters have no
// nodes, so they are not listed.
func TestLsExclusive(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	holder := holdLock(t, srv, path, "--exclusive", "--data", "ex holder")
	waiter := startZklock(t, "--servers", srv, "--exclusive", path, "--", "true")

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, st, err := c.Get(ctx, path+"/lock")
	require.NoError(t, err)
	code, ls := runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, 0, code, "stderr: %s", ls.stderr)
	assert.Equal(t, fmt.Sprintf("0\tholder\texclusive\tlock\t0x%x\tex holder\n", st.EphemeralOwner), ls.stdout.String())

	holder.closeStdin(t)
	assert.Equal(t, 0, holder.wait(t))
	assert.Equal(t, 0, waiter.wait(t), "stderr: %s", waiter.stderr)
}

// ls shows nodes it cannot classify with role and kind "unknown": in queue
// order when they end in a sequence number, else last.
func TestLsUnknownNodes(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	holder := holdLock(t, srv, path, "--data", "the-holder")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	seqNode, err := c.Create(ctx, path+"/other-", []byte("seq"), zk.FlagEphemeral|zk.FlagSequence)
	require.NoError(t, err)
	_, err = c.Create(ctx, path+"/zz-plain", []byte("plain"), zk.FlagEphemeral)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		_ = c.Delete(ctx, seqNode, -1)
		_ = c.Delete(ctx, path+"/zz-plain", -1)
	})
	ps := participants(t, c, path)
	require.Len(t, ps, 2)
	sess := c.CurrentSession().ID()

	code, ls := runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, 0, code, "stderr: %s", ls.stderr)
	want := fmt.Sprintf("0\tholder\tmutex\t%s\t0x%x\tthe-holder\n", ps[0].Node, ps[0].SessionID) +
		fmt.Sprintf("1\tunknown\tunknown\t%s\t0x%x\tseq\n", session.BaseName(seqNode), sess) +
		fmt.Sprintf("2\tunknown\tunknown\tzz-plain\t0x%x\tplain\n", sess)
	assert.Equal(t, want, ls.stdout.String())

	holder.closeStdin(t)
	assert.Equal(t, 0, holder.wait(t))
}

// The lock node of any kind deleted while the command runs: SIGTERM to its
// group, exit 76, as for the mutex.
func TestKindsLockLostNodeDeleted(t *testing.T) {
	srv := zkServers(t)
	for _, tc := range []struct{ flag, noun string }{
		{"--write", "write lock"},
		{"--read", "read lock"},
		{"--exclusive", "exclusive lock"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			path := lockPath(t)
			c := zkClient(t, srv)
			p := startZklock(t, "--servers", srv, tc.flag, path, "--", "sh", "-c", trapScript)
			pgid := readyPGID(t, p)

			names := waitChildren(t, c, path, 1)
			node := session.JoinPath(path, names[0])
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			require.NoError(t, c.Delete(ctx, node, -1))

			assert.Equal(t, 76, p.waitFor(t, "zklock to see its lock node deleted"))
			assert.Contains(t, p.stdout.String(), "got TERM", "the command got SIGTERM")
			stderr := p.stderr.String()
			assert.Contains(t, stderr, "zklock: "+tc.noun+" "+path+" lost while sh was running")
			assert.Contains(t, stderr, "lock node "+node+" was deleted")
			assert.Contains(t, stderr, "SIGTERM sent to its process group; sh exited with status 7")
			waitGroupGone(t, pgid)
			assert.Empty(t, children(t, c, path))
		})
	}
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
	assert.Contains(t, reader.stderr.String(), "zklock: interrupted by SIGTERM while waiting for read lock "+path)
	assert.Empty(t, reader.stdout.String())
	rwParticipants(t, c, path, 1)
	writer.closeStdin(t)
	assert.Equal(t, 0, writer.wait(t))
}

// ls on a path where a mutex and a reader queue together: each node shows
// its kind, and the holders follow the read/write lock's rules (a mutex
// node counts as a writer).
func TestLsMixedKinds(t *testing.T) {
	srv := zkServers(t)
	path := lockPath(t)
	c := zkClient(t, srv)
	holder := holdLock(t, srv, path, "--data", "the-mutex")
	reader := startZklock(t, "--servers", srv, "--read", "--data", "the-reader", path, "--", "true")
	nodes := rwParticipants(t, c, path, 2)

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	want := ""
	for i, tc := range []struct{ role, kind, data string }{
		{"holder", "mutex", "the-mutex"},
		{"waiter", "read", "the-reader"},
	} {
		_, st, err := c.Get(ctx, session.JoinPath(path, nodes[i]))
		require.NoError(t, err)
		want += fmt.Sprintf("%d\t%s\t%s\t%s\t0x%x\t%s\n", i, tc.role, tc.kind, nodes[i], st.EphemeralOwner, tc.data)
	}
	code, ls := runZklock(t, "ls", "--servers", srv, path)
	require.Equal(t, 0, code, "stderr: %s", ls.stderr)
	assert.Equal(t, want, ls.stdout.String())

	holder.closeStdin(t)
	assert.Equal(t, 0, holder.wait(t))
	assert.Equal(t, 0, reader.wait(t), "stderr: %s", reader.stderr)
}
