package session_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/integration"
	"github.com/zkrecipes/zkrecipes/internal/zktest"
	"github.com/zkrecipes/zkrecipes/session"
)

func TestOperationsAndNamespace(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	ns := fmt.Sprintf("/ns-%d", time.Now().UnixNano())
	c := connect(t, servers, session.WithNamespace(ns))
	raw := connect(t, servers)

	created, err := c.Create(ctx, "/a/b/node", []byte("v1"), zk.FlagPersistent)
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
	require.ErrorIs(t, err, zk.ErrBadVersion)
	_, st, err = c.Get(ctx, "/a/b/node")
	require.NoError(t, err)
	_, err = c.Set(ctx, "/a/b/node", []byte("v2"), st.Version)
	require.NoError(t, err)

	seq, err := c.Create(ctx, "/a/b/s-", nil, zk.FlagEphemeral|zk.FlagSequence)
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
	assert.ErrorIs(t, err, zk.ErrNoNode)
	_, _, err = c.Get(ctx, "/nope")
	assert.ErrorIs(t, err, zk.ErrNoNode)

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
	_, err := c.Create(ctx, p+"/n", nil, zk.FlagPersistent)
	require.NoError(t, err)

	_, _, ev, err := c.GetW(ctx, p+"/n")
	require.NoError(t, err)
	_, _, kev, err := c.ChildrenW(ctx, p)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, p+"/n", -1))
	select {
	case e := <-ev:
		assert.Equal(t, zk.EventNodeDeleted, e.Type)
	case <-time.After(waitLimit):
		t.Fatal("no data watch event")
	}
	select {
	case e := <-kev:
		assert.Equal(t, zk.EventNodeChildrenChanged, e.Type)
	case <-time.After(waitLimit):
		t.Fatal("no child watch event")
	}
	_, _, _, err = c.GetW(ctx, p+"/n")
	assert.ErrorIs(t, err, zk.ErrNoNode, "GetW on a missing node")
}

func TestGuardedMulti(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	c := connect(t, servers)
	base := fmt.Sprintf("/guard-%d", time.Now().UnixNano())
	lock, err := c.Create(ctx, base+"/lock/n-", nil, zk.FlagEphemeral|zk.FlagSequence)
	require.NoError(t, err)
	_, err = c.Create(ctx, base+"/data", []byte("0"), zk.FlagPersistent)
	require.NoError(t, err)

	_, err = c.GuardedMulti(ctx, lock, session.SetOp(base+"/data", []byte("1"), -1))
	require.NoError(t, err, "guard holds")

	require.NoError(t, c.Delete(ctx, lock, -1)) // the lock is gone (lost, released, ...)
	_, err = c.GuardedMulti(ctx, lock, session.SetOp(base+"/data", []byte("2"), -1),
		session.CreateOp(base+"/other", nil, zk.FlagPersistent))
	assert.ErrorIs(t, err, session.ErrGuardFailed)
	data, _, err := c.Get(ctx, base+"/data")
	require.NoError(t, err)
	assert.Equal(t, "1", string(data), "nothing applied without the guard")
	ok, _, err := c.Exists(ctx, base+"/other")
	require.NoError(t, err)
	assert.False(t, ok)

	// A failure of another op is not a guard failure, and applies nothing.
	lock2, err := c.Create(ctx, base+"/lock/n-", nil, zk.FlagEphemeral|zk.FlagSequence)
	require.NoError(t, err)
	_, err = c.GuardedMulti(ctx, lock2, session.SetOp(base+"/data", []byte("3"), -1),
		session.CreateOp(base+"/data", nil, zk.FlagPersistent))
	assert.ErrorIs(t, err, zk.ErrNodeExists)
	assert.NotErrorIs(t, err, session.ErrGuardFailed)
	data, _, err = c.Get(ctx, base+"/data")
	require.NoError(t, err)
	assert.Equal(t, "1", string(data))
}

func TestFencedResource(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	c := connect(t, servers)
	r, err := c.FencedResource(fmt.Sprintf("/fenced-%d/res", time.Now().UnixNano()))
	require.NoError(t, err)

	require.NoError(t, r.Write(ctx, 5, []byte("from 5")))
	err = r.Write(ctx, 3, []byte("stale"))
	assert.ErrorIs(t, err, session.ErrStaleToken)
	require.NoError(t, r.Write(ctx, 5, []byte("again 5")), "the same holder may write again")
	require.NoError(t, r.Write(ctx, 9, []byte("from 9")))
	assert.ErrorIs(t, r.Write(ctx, 5, []byte("late")), session.ErrStaleToken)
	tok, data, err := r.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(9), tok)
	assert.Equal(t, "from 9", string(data))

	// Racing writers: the highest token wins, no lower write lands after it.
	const writers = 8
	errs := make(chan error, writers)
	for i := range writers {
		go func() { errs <- r.Write(ctx, int64(10+i), []byte(fmt.Sprint(10+i))) }()
	}
	for range writers {
		if err := <-errs; err != nil {
			assert.ErrorIs(t, err, session.ErrStaleToken)
		}
	}
	tok, data, err = r.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(10+writers-1), tok)
	assert.Equal(t, fmt.Sprint(tok), string(data))

	assert.ErrorIs(t, r.Write(ctx, -1, nil), session.ErrInvalidArgument)
	_, err = c.FencedResource("relative")
	assert.ErrorIs(t, err, session.ErrInvalidArgument)
}

func TestDigestAuth(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	acl := zk.DigestACL(zk.PermAll, "alice", "secret")
	alice := connect(t, servers, session.WithDigestAuth("alice", "secret"), session.WithACL(acl))
	anon := connect(t, servers)
	p := fmt.Sprintf("/auth-%d", time.Now().UnixNano())
	_, err := anon.Create(ctx, p, nil, zk.FlagPersistent)
	require.NoError(t, err)
	_, err = alice.Create(ctx, p+"/private", []byte("x"), zk.FlagPersistent)
	require.NoError(t, err)
	_, _, err = alice.Get(ctx, p+"/private")
	require.NoError(t, err)
	_, _, err = anon.Get(ctx, p+"/private")
	assert.ErrorIs(t, err, zk.ErrNoAuth)
}

func TestBadInput(t *testing.T) {
	servers := zktest.Shared(t)
	var nilCtx context.Context
	done, cancel := context.WithCancel(context.Background())
	cancel()
	ok := servers

	for name, tc := range map[string]struct {
		ctx     context.Context
		servers []string
		opts    []session.Option
		want    error
	}{
		"nil ctx":              {nilCtx, ok, nil, session.ErrInvalidArgument},
		"done ctx":             {done, ok, nil, context.Canceled},
		"no servers":           {context.Background(), nil, nil, session.ErrInvalidArgument},
		"empty server":         {context.Background(), []string{""}, nil, session.ErrInvalidArgument},
		"unparseable":          {context.Background(), []string{"a:b:c"}, nil, session.ErrInvalidArgument},
		"bad port":             {context.Background(), []string{"127.0.0.1:http"}, nil, session.ErrInvalidArgument},
		"zero session timeout": {context.Background(), ok, []session.Option{session.WithSessionTimeout(0)}, session.ErrInvalidArgument},
		"negative conn timeout": {context.Background(), ok,
			[]session.Option{session.WithConnectionTimeout(-time.Second)}, session.ErrInvalidArgument},
		"relative namespace": {context.Background(), ok, []session.Option{session.WithNamespace("app")}, session.ErrInvalidArgument},
		"nil retry policy":   {context.Background(), ok, []session.Option{session.WithRetryPolicy(nil)}, session.ErrInvalidArgument},
		"empty ACL":          {context.Background(), ok, []session.Option{session.WithACL(nil)}, session.ErrInvalidArgument},
		"empty digest user":  {context.Background(), ok, []session.Option{session.WithDigestAuth("", "x")}, session.ErrInvalidArgument},
		"bad policy":         {context.Background(), ok, []session.Option{session.WithErrorPolicy(9)}, session.ErrInvalidArgument},
		"nil option":         {context.Background(), ok, []session.Option{nil}, session.ErrInvalidArgument},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := session.Connect(tc.ctx, tc.servers, tc.opts...)
			assert.Nil(t, c)
			assert.ErrorIs(t, err, tc.want)
		})
	}

	t.Run("nobody listening", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		c, err := session.Connect(ctx, []string{"127.0.0.1:1"}, quiet())
		assert.Nil(t, c)
		assert.ErrorIs(t, err, session.ErrNotConnected)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("operations", func(t *testing.T) {
		c := connect(t, ok)
		ctx := ctxT(t)
		for _, p := range []string{"", "rel", "/trailing/", "/a//b", "/a/../b", "/nul\x00"} {
			_, err := c.Create(ctx, p, nil, zk.FlagPersistent)
			assert.ErrorIs(t, err, session.ErrInvalidArgument, "create %q", p)
			_, _, err = c.Get(ctx, p)
			assert.ErrorIs(t, err, session.ErrInvalidArgument, "get %q", p)
			assert.ErrorIs(t, c.Delete(ctx, p, -1), session.ErrInvalidArgument, "delete %q", p)
		}
		_, _, err := c.Get(nilCtx, "/")
		assert.ErrorIs(t, err, session.ErrInvalidArgument)
		_, _, err = c.Get(done, "/")
		assert.ErrorIs(t, err, context.Canceled)
		_, err = c.Multi(ctx)
		assert.ErrorIs(t, err, session.ErrInvalidArgument)
		_, err = c.Multi(ctx, session.Op{})
		assert.ErrorIs(t, err, session.ErrInvalidArgument)
		_, err = c.Subscribe(nilCtx)
		assert.ErrorIs(t, err, session.ErrInvalidArgument)
		_, err = c.Session(nilCtx)
		assert.ErrorIs(t, err, session.ErrInvalidArgument)
	})
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

// CreateWithZxid's zxid is the new node's czxid, read off the create's reply
// (no request more than the create): on every member of an ensemble, with
// other clients writing meanwhile, through a namespace, and with guards.
func TestCreateWithZxid(t *testing.T) {
	z := integration.StartZK(t, 3)
	ctx := ctxT(t)
	base := fmt.Sprintf("/zxid-%d", time.Now().UnixNano())
	var wg sync.WaitGroup
	for i, m := range z.Members() {
		for j, opts := range [][]session.Option{nil, {session.WithNamespace("/ns-zxid")}} {
			c := connect(t, []string{m.Addr()}, opts...)
			dir := fmt.Sprintf("%s/m%d-%d", base, i, j)
			wg.Go(func() {
				for k := range 40 {
					var guards []string
					if k%4 == 3 {
						guards = []string{dir} // exists since the first create
					}
					node, zxid, err := c.CreateWithZxid(ctx, fmt.Sprintf("%s/_c_%d-lock-", dir, k), nil,
						zk.FlagEphemeral|zk.FlagSequence, guards...)
					if !assert.NoError(t, err) {
						return
					}
					_, st, err := c.Get(ctx, node)
					if assert.NoError(t, err) {
						assert.Equal(t, st.Czxid, zxid, "%s on %s", node, m)
					}
				}
				_, _, err := c.CreateWithZxid(ctx, dir+"/guarded", nil, 0, dir+"/missing")
				assert.ErrorIs(t, err, session.ErrGuardFailed)
				ok, _, err := c.Exists(ctx, dir+"/guarded")
				assert.NoError(t, err)
				assert.False(t, ok, "nothing created without the guard")
				assert.Zero(t, session.ZxidTapMisses(c), "every zxid came off a reply")
			})
		}
	}
	wg.Wait()

	// Creates of one path by many goroutines of one client cannot be told
	// apart on the wire: each still gets its own node's czxid.
	c := connect(t, z.Servers())
	var same sync.WaitGroup
	for range 8 {
		same.Go(func() {
			for range 10 {
				node, zxid, err := c.CreateWithZxid(ctx, base+"/same/item-", nil, zk.FlagEphemeral|zk.FlagSequence)
				if !assert.NoError(t, err) {
					return
				}
				_, st, err := c.Get(ctx, node)
				if assert.NoError(t, err) {
					assert.Equal(t, st.Czxid, zxid, node)
				}
			}
		})
	}
	same.Wait()

	// A node right under the root: no parent is written any more.
	node, zxid, err := c.CreateWithZxid(ctx, base+"-root", []byte("x"), zk.FlagEphemeral)
	require.NoError(t, err)
	_, st, err := c.Get(ctx, node)
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, zxid)
}

// A create whose reply the tap cannot match (its path is longer than the
// tap reads ahead) costs one read of the Stat, and the zxid is still the
// node's czxid.
func TestCreateWithZxidPastTheLookahead(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	c := connect(t, servers)
	dir := fmt.Sprintf("/zxid-long-%d", time.Now().UnixNano())
	long := dir + "/" + strings.Repeat("n", 5000) + "-"
	node, zxid, err := c.CreateWithZxid(ctx, long, nil, zk.FlagEphemeral|zk.FlagSequence)
	require.NoError(t, err)
	_, st, err := c.Get(ctx, node)
	require.NoError(t, err)
	assert.Equal(t, st.Czxid, zxid)
	assert.Equal(t, int64(1), session.ZxidTapMisses(c), "the Stat was read once")
}
