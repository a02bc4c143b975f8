package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/session"
)

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
	assert.Equal(t, want, withoutHeld(t, ls.stdout.String()))
	assert.Empty(t, ls.stderr.String())

	r1.closeStdin(t)
	r2.closeStdin(t)
	for _, p := range []*proc{r1, r2, w, r3} {
		assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	}
	code, ls = runZklock(t, "ls", "--servers", srv, path)
	require.Contains(t, freeOrGone, code, "stderr: %s", ls.stderr)
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
	assert.Equal(t, fmt.Sprintf("0\tholder\texclusive\tlock\t0x%x\tex holder\n", st.EphemeralOwner), withoutHeld(t, ls.stdout.String()))

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
	seqNode, err := c.Create(ctx, path+"/other-", []byte("seq"), session.Ephemeral|session.PersistentSequential)
	require.NoError(t, err)
	_, err = c.Create(ctx, path+"/zz-plain", []byte("plain"), session.Ephemeral)
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
	want := fmt.Sprintf("0\tholder\tmutex\t%s\t0x%x\tthe-holder\n", ps[0].Name, ps[0].SessionID) +
		fmt.Sprintf("1\tunknown\tunknown\t%s\t0x%x\tseq\n", session.BaseName(seqNode), sess) +
		fmt.Sprintf("2\tunknown\tunknown\tzz-plain\t0x%x\tplain\n", sess)
	assert.Equal(t, want, withoutHeld(t, ls.stdout.String()))

	holder.closeStdin(t)
	assert.Equal(t, 0, holder.wait(t))
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
	assert.Equal(t, want, withoutHeld(t, ls.stdout.String()))

	holder.closeStdin(t)
	assert.Equal(t, 0, holder.wait(t))
	assert.Equal(t, 0, reader.wait(t), "stderr: %s", reader.stderr)
}
