package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

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
		"creator ACL without credentials": {context.Background(), ok,
			[]session.Option{session.WithACL(session.AuthACL(session.PermAll))}, session.ErrInvalidArgument},
		"another user's digest ACL": {context.Background(), ok, []session.Option{session.WithDigestAuth("alice", "a"),
			session.WithACL(session.DigestACL(session.PermAll, "bob", "b"))}, session.ErrInvalidArgument},
		"creator ACL without delete": {context.Background(), ok, []session.Option{session.WithDigestAuth("alice", "a"),
			session.WithACL(session.AuthACL(session.PermRead | session.PermCreate | session.PermWrite))}, session.ErrInvalidArgument},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := session.Connect(tc.ctx, tc.servers, tc.opts...)
			assert.Nil(t, c)
			assert.ErrorIs(t, err, tc.want)
			if tc.want == session.ErrInvalidArgument {
				assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "the module's one sentinel for bad input")
			}
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
			_, err := c.Create(ctx, p, nil, session.Persistent)
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
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	})
}

// session.ErrInvalidArgument is recipes.ErrInvalidArgument, and so is every
// error that wraps it, without a server.
func TestInvalidArgumentChain(t *testing.T) {
	assert.ErrorIs(t, session.ErrInvalidArgument, recipes.ErrInvalidArgument)
	assert.ErrorIs(t, session.ErrRequestTooLarge, recipes.ErrInvalidArgument)
	for _, p := range []string{"", "rel", "/trailing/", "/a//b", "/a/../b", "/nul\x00"} {
		err := session.ValidatePath(p)
		assert.ErrorIs(t, err, session.ErrInvalidArgument, "%q", p)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "%q", p)
	}
	_, err := (&session.Client{}).FencedResource("/")
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	for _, opt := range []session.Option{
		session.WithSessionTimeout(0), session.WithConnectionTimeout(-time.Second), session.WithNamespace("app"),
		session.WithRetryPolicy(nil), session.WithACL(nil), session.WithDigestAuth("", "x"), session.WithErrorPolicy(9),
		session.WithMaxRequestSize(1), session.WithACL(session.AuthACL(session.PermAll)), nil,
	} {
		_, err := session.Connect(context.Background(), []string{"127.0.0.1:1"}, opt)
		assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	}
}
