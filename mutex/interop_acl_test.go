package mutex_test

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/mutex"
	"github.com/zkrecipes/zkrecipes/session"
)

// Interoperability with Curator's InterProcessMutex under a creator-only
// ACL: Go (session.WithDigestAuth and session.WithACL(zk.AuthACL(...)))
// and Curator (authorization and an ACLProvider of CREATOR_ALL_ACL) as
// the same user share the lock both ways, every node either makes is the
// user's, and neither a Curator nor a Go client without the credentials
// can acquire.

// interopCuratorAs is a Curator agent with the user's credentials (or
// none: a stranger) and an InterProcessMutex on lockPath.
func interopCuratorAs(t *testing.T, servers []string, lockPath string, user bool) *curator.Agent {
	t.Helper()
	opts := []curator.Option{curator.WithName("curator stranger")}
	if user {
		opts = []curator.Option{curator.WithName("curator " + acltest.User),
			curator.WithDigestAuth(acltest.User, acltest.Password)}
	}
	a := curator.Start(t, servers, opts...)
	a.DoExpect(t, "mutex "+lockPath, "ok")
	return a
}

// interopMutexWith is a Go mutex on lockPath over a session of its own
// with opts (acltest.Options: the user's; none: a stranger).
func interopMutexWith(t *testing.T, servers []string, lockPath string, opts ...session.Option) *mutex.Mutex {
	t.Helper()
	m, err := mutex.New(connect(t, servers, opts...), lockPath)
	require.NoError(t, err)
	return m
}

// interopRequireNoAuth checks a Curator agent's reply to an acquire that
// the ACL refuses.
func interopRequireNoAuth(t *testing.T, a *curator.Agent, cmd string) {
	t.Helper()
	reply := a.Do(t, cmd)
	require.True(t, strings.HasPrefix(reply, "error ") && strings.Contains(reply, "NoAuth"),
		"%s: reply to %q is %q, want an error with NoAuth", a.Name(), cmd, reply)
	a.DoExpect(t, "held", "held false")
	a.DoExpect(t, "node", "node none")
}

// TestInteropCreatorOnlyACL: Go holds (its client makes the lock path),
// Curator as the same user waits and gets the lock on Go's release; then
// Curator holds and Go waits. Strangers on both sides are refused
// throughout.
func TestInteropCreatorOnlyACL(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	root := acltest.Root()
	lockPath := root + "/lock"
	raw := acltest.Raw(t, servers)
	m := interopMutexWith(t, servers, lockPath, acltest.Options()...)
	goStranger := interopMutexWith(t, servers, lockPath)
	a := interopCuratorAs(t, servers, lockPath, true)
	stranger := interopCuratorAs(t, servers, lockPath, false)

	// Go holds; Curator queues behind it, and its node is the user's too.
	lease, err := m.Acquire(ctx)
	require.NoError(t, err)
	goNode := interopLeaseNode(t, lease)
	a.Send(t, "acquire")
	acltest.WaitChildren(t, raw, lockPath, 2)
	acltest.RequireTree(t, raw, root, path.Join(lockPath, goNode))
	a.ExpectNoReply(t, zktest.StillWaiting)
	interopRequireNoAuth(t, stranger, "acquire")
	require.NoError(t, lease.Err(), "Go's lease after the stranger's acquire")

	require.NoError(t, lease.Release(ctx))
	a.Expect(t, "acquired", curator.ReplyTimeout)
	javaNode := a.Node(t, "node")
	require.Equal(t, lockPath, path.Dir(javaNode))
	require.Regexp(t, interopNodeName, path.Base(javaNode))

	// Curator holds; Go queues behind it. The strangers get nothing.
	_, err = goStranger.Acquire(ctx)
	acltest.RequireNoAuth(t, err, lockPath, "the Go stranger's Acquire while Curator holds")
	interopRequireNoAuth(t, stranger, "tryacquire")
	res := interopAcquireAsync(ctx, m)
	acltest.WaitChildren(t, raw, lockPath, 2)
	acltest.RequireTree(t, raw, root, javaNode)
	res.Waiting(t, "Go behind Curator")
	a.DoExpect(t, "release", "released")
	lease = res.Acquired(t, "Go after Curator's release")
	a.DoExpect(t, "held", "held false")
	require.NoError(t, lease.Release(ctx))
	acltest.WaitChildren(t, raw, lockPath, 0)
}

// TestInteropCreatorOnlyACLCuratorFirst: the tree Curator makes (its
// parents too, through its ACLProvider) is the user's, so that a Go
// stranger cannot acquire and a Go client of the same user queues and
// acquires after Curator's release.
func TestInteropCreatorOnlyACLCuratorFirst(t *testing.T) {
	servers := sharedServers(t)
	ctx := ctxT(t)
	root := acltest.Root()
	lockPath := root + "/lock"
	raw := acltest.Raw(t, servers)
	a := interopCuratorAs(t, servers, lockPath, true)

	a.DoExpect(t, "acquire", "acquired")
	javaNode := a.Node(t, "node")
	acltest.RequireTree(t, raw, root, javaNode)
	_, err := interopMutexWith(t, servers, lockPath).Acquire(ctx)
	acltest.RequireNoAuth(t, err, lockPath, "the Go stranger's Acquire")

	res := interopAcquireAsync(ctx, interopMutexWith(t, servers, lockPath, acltest.Options()...))
	acltest.WaitChildren(t, raw, lockPath, 2)
	res.Waiting(t, "Go behind Curator")
	a.DoExpect(t, "release", "released")
	lease := res.Acquired(t, "Go after Curator's release")
	require.NoError(t, lease.Release(ctx))
	acltest.WaitChildren(t, raw, lockPath, 0)
}
