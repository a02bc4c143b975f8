package session_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// TestCreatorOnlyACL: every node a client with the creator-only ACL makes
// is its user's, the namespace node and the parents it creates included;
// a client without the credentials can do nothing to them, and another
// session of the same user can.
func TestCreatorOnlyACL(t *testing.T) {
	servers := zktest.Shared(t)
	ctx := ctxT(t)
	ns := acltest.Root()
	// WithACL before WithDigestAuth: the check waits for every Option.
	owner := connect(t, servers, session.WithACL(session.AuthACL(session.PermAll)),
		session.WithDigestAuth(acltest.User, acltest.Password), session.WithNamespace(ns))
	node, err := owner.Create(ctx, "/a/b/node", []byte("x"), session.Ephemeral)
	require.NoError(t, err)
	require.Equal(t, "/a/b/node", node)
	acltest.RequireTree(t, acltest.Raw(t, servers), ns, ns+node)

	stranger := connect(t, servers)
	_, _, err = stranger.Get(ctx, ns+node)
	require.ErrorIs(t, err, session.ErrNoAuth, "the stranger reads")
	require.ErrorIs(t, stranger.Delete(ctx, ns+node, -1), session.ErrNoAuth, "the stranger deletes")
	_, err = stranger.Create(ctx, ns+"/a/b/other", nil, session.Ephemeral)
	require.ErrorIs(t, err, session.ErrNoAuth, "the stranger creates")
	_, err = stranger.Set(ctx, ns, nil, -1)
	require.ErrorIs(t, err, session.ErrNoAuth, "the stranger writes the namespace node")
	require.ErrorIs(t, err, recipes.ErrRefused, "a refusal, as on every backend")

	same := connect(t, servers, acltest.Options()...) // another session, no namespace
	require.NoError(t, same.Delete(ctx, ns+node, -1), "the same user deletes")
}

// TestCreatorOnlyACLNeedsCredentials: the auth scheme without credentials
// is refused before any connection, with a message that says what to add.
func TestCreatorOnlyACLNeedsCredentials(t *testing.T) {
	c, err := session.Connect(context.Background(), []string{"127.0.0.1:1"},
		session.WithACL(append(session.WorldACL(session.PermRead), session.AuthACL(session.PermAll)...)))
	require.Nil(t, c)
	require.ErrorIs(t, err, session.ErrInvalidArgument)
	require.ErrorContains(t, err, "WithACL: the auth scheme (creator only) needs credentials: add WithDigestAuth")
}
