package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/rwlock"
	"github.com/zkrecipes/zkrecipes/session"
)

// children lists the nodes under path (none if it does not exist).
func children(t *testing.T, c *session.Client, path string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	names, _, err := c.Children(ctx, path)
	if errors.Is(err, session.ErrNoNode) {
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
			nodes = append(nodes, p.Name)
		}
		return len(ps) == n, fmt.Sprint(nodes)
	})
	return nodes
}

// Each kind: --data is stored in the node, the environment names the node,
// -v names the kind of lock.
func TestKindsEnvironmentAndMessages(t *testing.T) {
	srv := zkServers(t)
	for _, tc := range []struct {
		flag, name, node string // name: the lock's String, of PATH; node: what ZKLOCK_NODE holds after PATH/
	}{
		{"--read", "rwlock %s (read)", rwlock.ReadName},
		{"--write", "rwlock %s (write)", rwlock.WriteName},
		{"--exclusive", "exclusive %s", "lock"},
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
			name := fmt.Sprintf(tc.name, path)
			assert.Contains(t, stderr, "zklock: waiting for "+name+"\n")
			assert.Contains(t, stderr, fmt.Sprintf("zklock: acquired %s (token %d, node %s) after waiting ", name, tok, node))
			assert.Contains(t, stderr, "zklock: released "+name+"\n")
			assert.Empty(t, children(t, c, path))
		})
	}
}

// The lock node of any kind deleted while the command runs: SIGTERM to its
// group, exit 76, as for the mutex.
func TestKindsLockLostNodeDeleted(t *testing.T) {
	srv := zkServers(t)
	for _, tc := range []struct{ flag, name string }{ // name: the lock's String, of PATH
		{"--write", "rwlock %s (write)"},
		{"--read", "rwlock %s (read)"},
		{"--exclusive", "exclusive %s"},
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
			assert.Contains(t, stderr, "zklock: "+fmt.Sprintf(tc.name, path)+" lost while sh was running")
			assert.Contains(t, stderr, "lock node "+node+" was deleted")
			assert.Contains(t, stderr, "SIGTERM sent to its process group; sh exited with status 7")
			waitGroupGone(t, pgid)
			assert.Empty(t, children(t, c, path))
		})
	}
}
