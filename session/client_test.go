package session_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestOperationsAndNamespace(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	ns := fmt.Sprintf("/ns-%d", time.Now().UnixNano())
	c := connect(t, servers, session.WithNamespace(ns))
	raw := connect(t, servers)

	created, err := c.Create(ctx, "/a/b/node", []byte("v1"), session.Persistent)
	require.NoError(t, err)
	assert.Equal(t, "/a/b/node", created, "returned path has no namespace")

	// The same node seen without the namespace, and the namespace node is a container.
	data, _, err := raw.Get(ctx, ns+"/a/b/node")
	require.NoError(t, err)
	assert.Equal(t, "v1", string(data))
	_, st, err := raw.Get(ctx, ns)
	require.NoError(t, err)
	assert.Zero(t, st.EphemeralOwner)

	_, err = c.Set(ctx, "/a/b/node", []byte("v2"), 99)
	require.ErrorIs(t, err, session.ErrBadVersion)
	_, st, err = c.Get(ctx, "/a/b/node")
	require.NoError(t, err)
	_, err = c.Set(ctx, "/a/b/node", []byte("v2"), st.Version)
	require.NoError(t, err)

	seq, err := c.Create(ctx, "/a/b/s-", nil, session.Ephemeral|session.PersistentSequential)
	require.NoError(t, err)
	assert.Regexp(t, `^/a/b/s-\d{10}$`, seq)
	kids, _, err := c.Children(ctx, "/a/b")
	require.NoError(t, err)
	sort.Strings(kids)
	assert.Equal(t, []string{"node", session.BaseName(seq)}, kids)

	ok, st, err := c.Exists(ctx, seq)
	require.NoError(t, err)
	require.True(t, ok)
	s, err := c.Session(ctx)
	require.NoError(t, err)
	assert.Equal(t, s.ID(), st.EphemeralOwner)

	require.NoError(t, c.Delete(ctx, seq, -1))
	err = c.Delete(ctx, seq, -1)
	assert.ErrorIs(t, err, session.ErrNoNode)
	_, _, err = c.Get(ctx, "/nope")
	assert.ErrorIs(t, err, session.ErrNoNode)

	require.NoError(t, c.EnsurePath(ctx, "/x/y/z"))
	ok, _, err = raw.Exists(ctx, ns+"/x/y/z")
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestWatches(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	c := connect(t, servers)
	p := fmt.Sprintf("/watch-%d", time.Now().UnixNano())
	_, err := c.Create(ctx, p+"/n", nil, session.Persistent)
	require.NoError(t, err)

	_, _, ev, err := c.GetW(ctx, p+"/n")
	require.NoError(t, err)
	_, _, kev, err := c.ChildrenW(ctx, p)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, p+"/n", -1))
	select {
	case e := <-ev:
		assert.Equal(t, session.EventNodeDeleted, e.Type)
	case <-time.After(waitLimit):
		t.Fatal("no data watch event")
	}
	select {
	case e := <-kev:
		assert.Equal(t, session.EventNodeChildrenChanged, e.Type)
	case <-time.After(waitLimit):
		t.Fatal("no child watch event")
	}
	_, _, _, err = c.GetW(ctx, p+"/n")
	assert.ErrorIs(t, err, session.ErrNoNode, "GetW on a missing node")
}

func TestDigestAuth(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	acl := session.DigestACL(session.PermAll, "alice", "secret")
	alice := connect(t, servers, session.WithDigestAuth("alice", "secret"), session.WithACL(acl))
	anon := connect(t, servers)
	p := fmt.Sprintf("/auth-%d", time.Now().UnixNano())
	_, err := anon.Create(ctx, p, nil, session.Persistent)
	require.NoError(t, err)
	_, err = alice.Create(ctx, p+"/private", []byte("x"), session.Persistent)
	require.NoError(t, err)
	_, _, err = alice.Get(ctx, p+"/private")
	require.NoError(t, err)
	_, _, err = anon.Get(ctx, p+"/private")
	assert.ErrorIs(t, err, session.ErrNoAuth)
}

func TestClose(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	c := connect(t, servers)
	states := subscribe(t, c)
	s, err := c.Session(ctx)
	require.NoError(t, err)
	c.Close()
	c.Close() // twice is fine
	closed(t, s.Done(), "session Done after Close")
	assert.ErrorIs(t, s.Err(), session.ErrClosed)
	expect(t, states, session.Closed)
	_, ok := <-states
	assert.False(t, ok, "subscription closes after Closed")
	_, _, err = c.Get(ctx, "/")
	assert.ErrorIs(t, err, session.ErrClosed)
	_, err = c.Session(ctx)
	assert.ErrorIs(t, err, session.ErrClosed)
	assert.True(t, errors.Is(err, session.ErrClosed))
}

// A library writes nothing to its user's logs unasked: without WithLogger
// the client's logger is enabled at no level, and WithLogger is obeyed.
func TestQuietByDefault(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	c, err := session.Connect(ctx, servers)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	assert.False(t, c.Logger().Enabled(ctx, slog.LevelError), "the default logger must discard")

	var buf bytes.Buffer
	loud := connect(t, servers, session.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	assert.True(t, loud.Logger().Enabled(ctx, slog.LevelInfo))
}
