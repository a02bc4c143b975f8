// Package acltest is the scenario every ZooKeeper recipe runs under a
// creator-only ACL (session.WithACL(session.AuthACL(session.PermAll)) with
// session.WithDigestAuth), written once: every node the recipe makes gets
// the user's ACL, a client without the credentials can neither delete nor
// change the holder's nodes nor acquire (its Acquire fails at once with
// an error that is session.ErrNoAuth), the holder is untouched by all that, and
// another session of the same user queues and acquires after the release.
// It is test support, not API.
package acltest

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
	"github.com/zkrecipes/zkrecipes/znode"
)

// The credentials of the scenario's user.
const (
	User     = "alice"
	Password = "alice-secret"
)

// Backend is one recipe under the scenario.
type Backend struct {
	// New returns the recipe at path on client c, as a Locker; the
	// scenario calls it once per client (holder, stranger, peer).
	New func(t testing.TB, c *session.Client, path string) recipes.Locker
	// Queues says that a waiter has a node of its own beside the holder's
	// while it waits (every recipe but the exclusive lock, whose waiters
	// only watch).
	Queues bool
}

// Options are the session options of the user's clients: its credentials
// and the creator-only ACL.
func Options() []session.Option {
	return []session.Option{session.WithDigestAuth(User, Password), session.WithACL(session.AuthACL(session.PermAll))}
}

// WantACL is the ACL that the server gives a node created under Options.
func WantACL() []zk.ACL { return zk.DigestACL(zk.PermAll, User, Password) }

var roots atomic.Int64

// Root is a fresh path right under "/" for one test. The lock paths go
// below it, so that the parent of a lock path is the user's too (a delete
// is checked against the ACL of the node's parent, and "/" is open to all).
func Root() string {
	return fmt.Sprintf("/acl-%d-%d", time.Now().UnixNano(), roots.Add(1))
}

// Run runs the scenario on servers, on a lock path of its own.
func Run(t *testing.T, servers []string, b Backend) {
	ctx := zktest.Ctx(t)
	root := Root()
	lockPath := root + "/lock"
	holder := zktest.Connect(t, servers, Options()...)
	stranger := zktest.Connect(t, servers) // no credentials
	peer := zktest.Connect(t, servers, Options()...)
	raw := Raw(t, servers)

	lease, err := b.New(t, holder, lockPath).Acquire(ctx)
	require.NoError(t, err, "the holder's Acquire")
	node := lease.(znode.Lease).Node()
	RequireTree(t, raw, root, node)

	// The stranger can touch none of the holder's nodes: a delete is
	// checked against the parent's ACL, a write against the node's own.
	for p := node; p != root; p = path.Dir(p) {
		require.ErrorIs(t, stranger.Delete(ctx, p, -1), session.ErrNoAuth, "the stranger deletes %s", p)
	}
	for p := node; p != "/"; p = path.Dir(p) {
		_, err := stranger.Set(ctx, p, []byte("x"), -1)
		require.ErrorIs(t, err, session.ErrNoAuth, "the stranger writes %s", p)
	}
	_, _, err = stranger.Get(ctx, node)
	require.ErrorIs(t, err, session.ErrNoAuth, "the stranger reads the holder's node")
	_, err = stranger.Create(ctx, path.Dir(node)+"/stranger", nil, session.Ephemeral)
	require.ErrorIs(t, err, session.ErrNoAuth, "the stranger creates beside the holder's node")

	// Nor acquire: at once, with an error that says why, for both calls.
	l := b.New(t, stranger, lockPath)
	for _, try := range []bool{false, true} {
		acquire, what := l.Acquire, "the stranger's Acquire"
		if try {
			acquire, what = l.TryAcquire, "the stranger's TryAcquire"
		}
		got, err := acquire(ctx)
		require.Nil(t, got, what)
		RequireNoAuth(t, err, lockPath, what)
	}

	// The holder holds on.
	require.NoError(t, lease.Err(), "the holder's lease after the stranger's tries")
	require.NoError(t, lease.Context().Err(), "the holder's lease context")
	ok, _, err := holder.Exists(ctx, node)
	require.NoError(t, err)
	require.True(t, ok, "the holder's node %s is still there", node)

	// Another session of the same user queues, and acquires on release.
	peerLock := b.New(t, peer, lockPath)
	pending := zktest.AcquireAsync(func() (recipes.Lease, error) { return peerLock.Acquire(ctx) })
	if b.Queues {
		WaitChildren(t, raw, path.Dir(node), 2)
		RequireTree(t, raw, root, node) // the waiter's nodes too
	}
	pending.Waiting(t, "the peer, while the holder holds")
	require.NoError(t, lease.Release(ctx))
	next := pending.Acquired(t, "the peer, after the release")
	nextNode := next.(znode.Lease).Node()
	require.Greater(t, zktest.Token(t, next), zktest.Token(t, lease), "the peer's node is a new one")
	RequireTree(t, raw, root, nextNode)
	require.ErrorIs(t, stranger.Delete(ctx, nextNode, -1), session.ErrNoAuth, "the stranger deletes the peer's node")
	require.NoError(t, next.Release(ctx))
	for _, n := range []string{node, nextNode} {
		ok, _, err := raw.Exists(n)
		require.NoError(t, err)
		require.False(t, ok, "%s left behind", n)
	}
}

// RequireNoAuth checks the error of an Acquire refused by the ACL: it is
// recipes.ErrNotAcquired, recipes.ErrRefused and zk.ErrNoAuth, names the
// lock path, and is not a timeout (the Acquire gave up by itself).
func RequireNoAuth(t testing.TB, err error, lockPath, what string) {
	t.Helper()
	require.ErrorIs(t, err, zk.ErrNoAuth, what)
	require.ErrorIs(t, err, recipes.ErrRefused, what)
	require.ErrorIs(t, err, recipes.ErrNotAcquired, what)
	require.NotErrorIs(t, err, context.DeadlineExceeded, what)
	require.ErrorContains(t, err, lockPath, what)
}

// Raw is a go-zookeeper connection authenticated as the user, closed at
// t's cleanup: session.Client does not read ACLs.
func Raw(t testing.TB, servers []string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(servers, 15*time.Second, zk.WithLogInfo(false), zk.WithLogger(discard{}))
	require.NoError(t, err)
	t.Cleanup(conn.Close)
	require.NoError(t, conn.AddAuth("digest", []byte(User+":"+Password)))
	return conn
}

type discard struct{}

func (discard) Printf(string, ...any) {}

// RequireTree checks that every node under root, root and node (which must
// be there) included, has the user's ACL. Nodes that go meanwhile are
// skipped.
func RequireTree(t testing.TB, raw *zk.Conn, root, node string) {
	t.Helper()
	var seen []string
	var walk func(p string)
	walk = func(p string) {
		acl, _, err := raw.GetACL(p)
		if errors.Is(err, session.ErrNoNode) {
			return
		}
		require.NoError(t, err, "GetACL %s", p)
		require.Equal(t, WantACL(), acl, "the ACL of %s", p)
		seen = append(seen, p)
		kids, _, err := raw.Children(p)
		if errors.Is(err, session.ErrNoNode) {
			return
		}
		require.NoError(t, err, "Children %s", p)
		for _, k := range kids {
			walk(path.Join(p, k))
		}
	}
	walk(root)
	for p := node; p != path.Dir(root); p = path.Dir(p) {
		require.True(t, slices.Contains(seen, p), "%s is not in the tree under %s: %v", p, root, seen)
	}
}

// WaitChildren waits (bounded) until parent has n children; a parent
// that is gone (an empty container, reaped) has none.
func WaitChildren(t testing.TB, raw *zk.Conn, parent string, n int) {
	t.Helper()
	deadline := time.Now().Add(zktest.WaitLimit)
	for {
		kids, _, err := raw.Children(parent)
		if !errors.Is(err, session.ErrNoNode) {
			require.NoError(t, err, "Children %s", parent)
		}
		if len(kids) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d children after %v, want %d: %v", parent, len(kids), zktest.WaitLimit, n, kids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
