package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/session"
)

// ctxT is a context bounded by waitLimit, for the test's own requests.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx
}

// mkNodes creates the nodes "PATH=DATA", in order (parents first).
func mkNodes(t *testing.T, c *session.Client, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		p, data, _ := strings.Cut(n, "=")
		_, err := c.Create(ctxT(t), p, []byte(data), session.Persistent)
		require.NoError(t, err, p)
	}
}

// ownTree deletes the tree at root at the end of the test, so that the
// test can run again on the same server (-count).
func ownTree(t *testing.T, c *session.Client, root string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		require.NoError(t, deleteTree(ctx, c, root))
	})
}

// deleteTree deletes p and everything below it; a node gone already is
// no error.
func deleteTree(ctx context.Context, c *session.Client, p string) error {
	kids, _, err := c.Children(ctx, p)
	if errors.Is(err, session.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := deleteTree(ctx, c, session.JoinPath(p, k)); err != nil {
			return err
		}
	}
	if err := c.Delete(ctx, p, -1); err != nil && !errors.Is(err, session.ErrNoNode) {
		return err
	}
	return nil
}

// stat reads p's Stat.
func stat(t *testing.T, c *session.Client, p string) *session.Stat {
	t.Helper()
	_, st, err := c.Get(ctxT(t), p)
	require.NoError(t, err, p)
	return st
}

// line is watch's text line for p of kind, as the server has p now.
func line(t *testing.T, c *session.Client, kind, p string) string {
	t.Helper()
	st := stat(t, c, p)
	return fmt.Sprintf("%s\t%s\t0x%x\t%d", kind, p, st.Mzxid, st.DataLength)
}

// deletedLine is the line of p's deletion, st being p's Stat before it.
func deletedLine(p string, st *session.Stat) string {
	return fmt.Sprintf("deleted\t%s\t0x%x\t%d", p, st.Mzxid, st.DataLength)
}

// lines are the lines of out (each ended by a newline).
func lines(out string) []string {
	if out == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// waitLines waits (bounded) until zklock's stdout is exactly want, line by
// line; more lines than want fail at once.
func waitLines(t *testing.T, p *proc, want ...string) {
	t.Helper()
	waitLinesThen(t, p, want, nil)
}

// waitLinesThen waits (bounded) until zklock's stdout is exactly first,
// then the lines of then in any order (the events of different nodes come
// in the order their watches are handled); more lines fail at once.
func waitLinesThen(t *testing.T, p *proc, first, then []string) {
	t.Helper()
	n := len(first) + len(then)
	sorted := slices.Sorted(slices.Values(then))
	waitUntil(t, fmt.Sprintf("stdout %q then %q", first, then), func() (bool, string) {
		out := p.stdout.String()
		if !strings.HasSuffix(out, "\n") && out != "" {
			return false, out // a line still being written
		}
		got := lines(out)
		if len(got) > n {
			t.Fatalf("more lines than expected:\n got %q\nwant %q then %q", got, first, then)
		}
		if p.exited() {
			t.Fatalf("zklock exited (%v); stdout %q; stderr:\n%s", p.cmd.ProcessState, got, p.stderr)
		}
		if len(got) < n {
			return false, out
		}
		return slices.Equal(got[:len(first)], first) && slices.Equal(slices.Sorted(slices.Values(got[len(first):])), sorted), out
	})
}

// interrupt sends sig and checks that the watch ends with 0.
func interrupt(t *testing.T, p *proc, sig syscall.Signal) {
	t.Helper()
	p.signal(t, sig)
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
}

// The current state, then a line per change, until SIGINT.
func TestWatch(t *testing.T) {
	srv := zkServers(t)
	c := zkClient(t, srv)
	root := lockPath(t)
	ownTree(t, c, root)
	mkNodes(t, c, root+"=r", root+"/b=bb", root+"/a=a", root+"/a/x=")

	p := startZklock(t, "watch", "--servers", srv, root)
	state := []string{line(t, c, "exists", root), line(t, c, "exists", root+"/a"),
		line(t, c, "exists", root+"/a/x"), line(t, c, "exists", root+"/b")}
	waitLines(t, p, state...)

	want := state
	mkNodes(t, c, root+"/a/y=new")
	want = append(want, line(t, c, "created", root+"/a/y"))
	waitLines(t, p, want...)

	_, err := c.Set(ctxT(t), root+"/b", []byte("changed"), -1)
	require.NoError(t, err)
	want = append(want, line(t, c, "changed", root+"/b"))
	waitLines(t, p, want...)

	before := stat(t, c, root+"/a/x")
	require.NoError(t, c.Delete(ctxT(t), root+"/a/x", -1))
	want = append(want, deletedLine(root+"/a/x", before))
	waitLines(t, p, want...)

	// Deleted and created again with the same data and version 0: told by
	// its czxid.
	before = stat(t, c, root+"/a/y")
	require.NoError(t, c.Delete(ctxT(t), root+"/a/y", -1))
	mkNodes(t, c, root+"/a/y=new")
	want = append(want, deletedLine(root+"/a/y", before), line(t, c, "created", root+"/a/y"))
	waitLines(t, p, want...)

	interrupt(t, p, syscall.SIGINT)
	assert.Empty(t, p.stderr.String())
}

// --data adds the data, quoted when it is not printable text; a PATH that
// does not exist prints nothing until it is created, and --namespace is
// left out of the paths.
func TestWatchData(t *testing.T) {
	srv := zkServers(t)
	ns := lockPath(t)
	c := zkClient(t, srv)
	ownTree(t, c, ns)
	mkNodes(t, c, ns+"=")
	p := startZklock(t, "--servers", srv, "watch", "--namespace", ns, "-v", "--data", "/w") // global flags first
	p.waitOutput(t, p.stderr, "the current state is printed (0 nodes)")

	mkNodes(t, c, ns+"/w=text here", ns+"/w/bin=\x00\x01\ttab")
	waitLines(t, p, "created\t/w\t"+hexMzxid(t, c, ns+"/w")+"\t9\ttext here",
		"created\t/w/bin\t"+hexMzxid(t, c, ns+"/w/bin")+"\t6\t"+`"\x00\x01\ttab"`)
	interrupt(t, p, syscall.SIGTERM)
}

func hexMzxid(t *testing.T, c *session.Client, p string) string {
	return fmt.Sprintf("0x%x", stat(t, c, p).Mzxid)
}

// --json writes one JSON object per line, every one of them parsing: the
// current state, "initialized", then the changes; --data in base64.
func TestWatchJSON(t *testing.T) {
	srv := zkServers(t)
	c := zkClient(t, srv)
	root := lockPath(t)
	ownTree(t, c, root)
	mkNodes(t, c, root+"=r&<x>", root+"/k=\xff\xfe")

	p := startZklock(t, "watch", "--servers", srv, "--json", "--data", root)
	p.waitOutput(t, p.stdout, `{"type":"initialized"}`)
	mkNodes(t, c, root+"/new=")
	p.waitOutput(t, p.stdout, `"path":"`+root+`/new"`)
	interrupt(t, p, syscall.SIGINT)

	type record struct {
		Type       string  `json:"type"`
		Path       string  `json:"path"`
		Mzxid      *int64  `json:"mzxid"`
		Czxid      *int64  `json:"czxid"`
		Version    *int32  `json:"version"`
		DataLength *int32  `json:"data_length"`
		Data       *string `json:"data"`
	}
	var got []record
	for _, l := range lines(p.stdout.String()) {
		var r record
		require.NoError(t, json.Unmarshal([]byte(l), &r), "line %q", l)
		got = append(got, r)
	}
	require.Len(t, got, 4, "%s", p.stdout)
	wantTypes := []string{"exists", "exists", "initialized", "created"}
	wantPaths := []string{root, root + "/k", "", root + "/new"}
	wantData := []string{"r&<x>", "\xff\xfe", "", ""}
	for i, r := range got {
		assert.Equal(t, wantTypes[i], r.Type)
		assert.Equal(t, wantPaths[i], r.Path)
		if r.Type == "initialized" {
			assert.Nil(t, r.Mzxid)
			assert.Nil(t, r.Data)
			continue
		}
		st := stat(t, c, r.Path)
		require.NotNil(t, r.Mzxid)
		require.NotNil(t, r.Czxid)
		require.NotNil(t, r.Version)
		require.NotNil(t, r.DataLength)
		require.NotNil(t, r.Data, "--data")
		assert.Equal(t, st.Mzxid, *r.Mzxid)
		assert.Equal(t, st.Czxid, *r.Czxid)
		assert.Equal(t, st.Version, *r.Version)
		assert.Equal(t, st.DataLength, *r.DataLength)
		data, err := base64.StdEncoding.DecodeString(*r.Data)
		require.NoError(t, err)
		assert.Equal(t, wantData[i], string(data))
	}
}

// --node, --children and --depth N watch that many levels below PATH.
func TestWatchDepth(t *testing.T) {
	srv := zkServers(t)
	c := zkClient(t, srv)
	root := lockPath(t)
	ownTree(t, c, root)
	mkNodes(t, c, root+"=", root+"/a=", root+"/a/b=", root+"/a/b/c=")
	all := []string{root, root + "/a", root + "/a/b", root + "/a/b/c"}
	for _, tc := range []struct {
		flags  []string
		levels int
	}{
		{[]string{"--node"}, 1},
		{[]string{"--children"}, 2},
		{[]string{"--depth", "2"}, 3},
		{[]string{"--depth=0"}, 1},
		{nil, 4},
	} {
		t.Run(strings.Join(tc.flags, " "), func(t *testing.T) {
			p := startZklock(t, append(append([]string{"watch", "--servers", srv}, tc.flags...), root)...)
			var want []string
			for _, n := range all[:tc.levels] {
				want = append(want, line(t, c, "exists", n))
			}
			waitLines(t, p, want...)
			// A write at every level, the deepest first: a line for a
			// level beyond the depth would come with the others.
			var changed []string
			for i := len(all) - 1; i >= 0; i-- {
				_, err := c.Set(ctxT(t), all[i], []byte(t.Name()), -1)
				require.NoError(t, err)
				if i < tc.levels {
					changed = append(changed, line(t, c, "changed", all[i]))
				}
			}
			waitLinesThen(t, p, want, changed)
			interrupt(t, p, syscall.SIGINT)
		})
	}
}

// A lock's queue, watched live while holders and waiters come and go:
// zklock processes, then a Curator InterProcessMutex.
func TestWatchLockQueue(t *testing.T) {
	srv := zkServers(t)
	c := zkClient(t, srv)
	path := lockPath(t)
	ownTree(t, c, path)
	mkNodes(t, c, path+"=")
	p := startZklock(t, "watch", "--servers", srv, "--children", "--data", path)
	want := []string{line(t, c, "exists", path) + "\t"}
	waitLines(t, p, want...)

	// joined waits for the created line of the queue's node i, and
	// returns its path and the deleted line it will have (the last view).
	joined := func(i int) (node, deleted string) {
		t.Helper()
		n := path + "/" + waitParticipants(t, c, path, i+1)[i].Name
		data, st, err := c.Get(ctxT(t), n)
		require.NoError(t, err)
		fields := fmt.Sprintf("\t%s\t0x%x\t%d\t%s", n, st.Mzxid, st.DataLength, displayData(data))
		want = append(want, "created"+fields)
		waitLines(t, p, want...)
		return n, "deleted" + fields
	}
	left := func(deleted string) {
		t.Helper()
		want = append(want, deleted)
		waitLines(t, p, want...)
	}

	holder := holdLock(t, srv, path, "--data", "holder")
	_, h := joined(0)
	waiter := startZklock(t, "--servers", srv, "--data", "waiter", path, "--", "sh", "-c", holdScript)
	_, w := joined(1)
	holder.closeStdin(t)
	require.Equal(t, 0, holder.wait(t))
	left(h)
	waiter.waitOutput(t, waiter.stdout, "ready")

	a := curator.Start(t, strings.Split(srv, ","))
	a.DoExpect(t, "mutex "+path, "ok")
	a.Send(t, "acquire")
	cn, cdel := joined(1)
	waiter.closeStdin(t)
	require.Equal(t, 0, waiter.wait(t))
	left(w)
	a.Expect(t, "acquired", waitLimit)
	assert.Equal(t, cn, a.Node(t, "node"))
	a.DoExpect(t, "release", "released")
	left(cdel)

	interrupt(t, p, syscall.SIGINT)
}

// A cut of the connection past the session timeout: zklock says stale,
// the session is lost, and once connected again (a new session) it prints
// exactly what changed meanwhile (nothing for the node left alone), says
// fresh, and goes on.
func TestWatchAcrossSessionLoss(t *testing.T) {
	srv := zkServers(t)
	c := zkClient(t, srv)
	root := lockPath(t)
	ownTree(t, c, root)
	mkNodes(t, c, root+"=", root+"/still=s", root+"/set=1", root+"/gone=g", root+"/again=a")
	proxy := harness.NewProxy(t, strings.Split(srv, ",")[0])
	p := startZklock(t, "watch", "-v", "--servers", proxy.Addr(), "--session-timeout", "2s", "--timeout", "60s", root)
	var state []string
	for _, n := range []string{"", "/again", "/gone", "/set", "/still"} {
		state = append(state, line(t, c, "exists", root+n))
	}
	waitLines(t, p, state...)

	proxy.Cut(t)
	p.waitOutput(t, p.stderr, "zklock: watch "+root+": stale: ")
	p.waitOutput(t, p.stderr, " lost: ") // the session, past its timeout
	_, err := c.Set(ctxT(t), root+"/set", []byte("2"), -1)
	require.NoError(t, err)
	gone, again := stat(t, c, root+"/gone"), stat(t, c, root+"/again")
	require.NoError(t, c.Delete(ctxT(t), root+"/gone", -1))
	require.NoError(t, c.Delete(ctxT(t), root+"/again", -1))
	mkNodes(t, c, root+"/again=a", root+"/new=n")
	require.NotContains(t, p.stderr.String(), ": fresh: ")
	proxy.Restore(t)

	p.waitOutput(t, p.stderr, "zklock: watch "+root+": fresh: ")
	meanwhile := []string{deletedLine(root+"/gone", gone), deletedLine(root+"/again", again),
		line(t, c, "created", root+"/again"), line(t, c, "created", root+"/new"), line(t, c, "changed", root+"/set")}
	waitLinesThen(t, p, state, meanwhile)
	// The cache's resynchronisation is done when fresh is said: the lines
	// of what changed meanwhile were printed before it.
	out := p.stdout.String()
	require.Len(t, lines(out), len(state)+len(meanwhile))

	// And it goes on.
	mkNodes(t, c, root+"/after=x")
	waitLines(t, p, append(lines(out), line(t, c, "created", root+"/after"))...)
	interrupt(t, p, syscall.SIGINT)
}

// With --json the connection's loss and return are records, in order
// with the changes.
func TestWatchJSONStaleFresh(t *testing.T) {
	srv := zkServers(t)
	c := zkClient(t, srv)
	root := lockPath(t)
	ownTree(t, c, root)
	mkNodes(t, c, root+"=")
	proxy := harness.NewProxy(t, strings.Split(srv, ",")[0])
	p := startZklock(t, "watch", "--json", "--servers", proxy.Addr(), "--session-timeout", "2s", root)
	p.waitOutput(t, p.stdout, `{"type":"initialized"}`)
	proxy.Cut(t)
	p.waitOutput(t, p.stdout, `{"type":"stale"}`)
	mkNodes(t, c, root+"/n=")
	proxy.Restore(t)
	p.waitOutput(t, p.stdout, `{"type":"fresh"}`)
	interrupt(t, p, syscall.SIGTERM)

	var types []string
	for _, l := range lines(p.stdout.String()) {
		var r struct{ Type, Path string }
		require.NoError(t, json.Unmarshal([]byte(l), &r), "%q", l)
		types = append(types, r.Type+" "+r.Path)
	}
	assert.Equal(t, []string{"exists " + root, "initialized ", "stale ", "created " + root + "/n", "fresh "}, types)
	assert.NotContains(t, p.stderr.String(), "stale", "with --json, stale and fresh are records, not messages")
}

// No server within --timeout: at the start, or after the connection was
// lost. zklock says why and exits 69.
func TestWatchTimeout(t *testing.T) {
	t.Run("at the start", func(t *testing.T) {
		code, p := runZklock(t, "watch", "--servers", "127.0.0.1:1", "--timeout", "1s", "/x")
		assert.Equal(t, 69, code)
		assert.Contains(t, p.stderr.String(), "zklock: watch /x: cannot connect to ZooKeeper at 127.0.0.1:1 within --timeout 1s: ")
		assert.Empty(t, p.stdout.String())
	})
	t.Run("after a loss", func(t *testing.T) {
		srv := zkServers(t)
		c := zkClient(t, srv)
		root := lockPath(t)
		ownTree(t, c, root)
		mkNodes(t, c, root+"=")
		proxy := harness.NewProxy(t, strings.Split(srv, ",")[0])
		// --timeout bounds the first read too: a small PATH, and time
		// enough for it on a busy machine.
		p := startZklock(t, "watch", "--servers", proxy.Addr(), "--timeout", "5s", root)
		waitLines(t, p, line(t, c, "exists", root))
		proxy.Cut(t)
		assert.Equal(t, 69, p.wait(t))
		assert.Contains(t, p.stderr.String(), "zklock: watch "+root+": stale: ")
		assert.Regexp(t, `zklock: watch `+root+`: no ZooKeeper server could be reached within --timeout 5s of losing the connection at [0-9:.]+: `,
			p.stderr.String())
	})
}

// A signal ends the watch with 0 even while no server answers yet
// (--timeout 0: it would wait forever).
func TestWatchInterruptWhileConnecting(t *testing.T) {
	p := startZklock(t, "watch", "-v", "--servers", "127.0.0.1:1", "--timeout", "0", "/x")
	p.waitOutput(t, p.stderr, "zklock: watch /x: connecting to ZooKeeper at 127.0.0.1:1\n")
	interrupt(t, p, syscall.SIGTERM)
	assert.Empty(t, p.stdout.String())
}

// A PATH that zklock may not read (its ACL the creator's alone): exit 69
// with the refusal and what to check, at once rather than at --timeout;
// with the credentials, the watch runs.
func TestWatchRefused(t *testing.T) {
	srv := zkServers(t)
	path := authPath(t)
	good := secretFile(t, "auth", "digest alice:zk-s3cr3t\n")
	alice, err := session.Connect(ctxT(t), strings.Split(srv, ","), session.WithDigestAuth("alice", "zk-s3cr3t"),
		session.WithACL(session.AuthACL(session.PermAll)), session.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(alice.Close)
	ownTree(t, alice, path)
	require.NoError(t, alice.EnsurePath(ctxT(t), path))

	code, p := runZklock(t, "watch", "--servers", srv, "--timeout", "0", path)
	assert.Equal(t, exitUnavailable, code)
	assert.Contains(t, p.stderr.String(), "zklock: watch "+path+": zookeeper "+srv+": authentication refused: zk: not authenticated (")
	assert.Empty(t, p.stdout.String())

	p = startZklock(t, "watch", "--servers", srv, "--auth-file", good, path)
	waitLines(t, p, line(t, alice, "exists", path))
	interrupt(t, p, syscall.SIGINT)
	assertNoSecret(t, p, "zk-s3cr3t")
}

// A node below PATH whose ACL refuses zklock is not printed, and said once
// on stderr ("refused"); the rest of the tree is printed.
func TestWatchRefusedBelow(t *testing.T) {
	srv := zkServers(t)
	c := zkClient(t, srv)
	root := lockPath(t)
	ownTree(t, c, root)
	mkNodes(t, c, root+"=", root+"/a=1")
	alice, err := session.Connect(ctxT(t), strings.Split(srv, ","), session.WithDigestAuth("alice", "zk-s3cr3t"),
		session.WithACL(session.AuthACL(session.PermAll)), session.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(alice.Close)
	mkNodes(t, alice, root+"/secret=s")
	t.Cleanup(func() { _ = alice.Delete(context.Background(), root+"/secret", -1) })

	p := startZklock(t, "watch", "--servers", srv, root)
	waitLines(t, p, line(t, c, "exists", root), line(t, c, "exists", root+"/a"))
	p.waitOutput(t, p.stderr, "watch "+root+": refused: "+root+"/secret is not shown: ")
	interrupt(t, p, syscall.SIGINT)
	assert.NotContains(t, p.stdout.String(), root+"/secret")
}
