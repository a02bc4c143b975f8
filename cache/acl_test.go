package cache_test

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/cache"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// requireRefused checks a refusal: recipes.ErrRefused and session.ErrNoAuth,
// naming path.
func requireRefused(t testing.TB, err error, path, what string) {
	t.Helper()
	require.ErrorIs(t, err, recipes.ErrRefused, what)
	require.ErrorIs(t, err, session.ErrNoAuth, what)
	require.ErrorContains(t, err, path, what)
}

// A node whose ACL refuses the cache's identity the read is out of the
// view, told once (Refused, Freshness.Refused), and holds nothing back:
// Initialized returns, at once, nil for nodes below the path and the
// refusal for the path itself. It was read again, without end, before.
func TestRefused(t *testing.T) {
	servers := sharedServers(t)
	open := connect(t, servers, session.WithDigestAuth(acltest.User, acltest.Password))
	closed := connect(t, servers, acltest.Options()...)
	stranger := connect(t, servers) // no credentials
	mkTree(t, open, "/r=r", "/r/a=1", "/r/b=2", "/r/b/x=3")
	mkTree(t, closed, "/r/secret=s", "/r/secret/under=u")

	t.Run("below the path", func(t *testing.T) {
		x, err := cache.Start(ctxT(t), stranger, "/r")
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, x.Close()) })
		require.NoError(t, x.Initialized(ctxT(t)), "a refused node below the path does not hold Initialized back")
		assert.Equal(t, "/r /r/a /r/b /r/b/x", paths(keyed(x.Snapshot())))
		assert.Equal(t, []string{"a", "b"}, x.Children("/r"))
		f := x.Freshness()
		requireRefused(t, f.Refused, "/r/secret", "Freshness.Refused")
		assert.True(t, f.Initialized)
		assert.True(t, f.StaleSince.IsZero(), "the readable view is fresh")

		events := readUntil(t, x, cache.Initialized)
		var refused []cache.Event
		for _, ev := range events {
			if ev.Type == cache.Refused {
				refused = append(refused, ev)
			}
		}
		require.Len(t, refused, 1, "one Refused for the node, none for its subtree: %v", events)
		assert.Equal(t, "/r/secret", refused[0].Node.Path)
		requireRefused(t, refused[0].Err, "/r/secret", "Refused's Err")
		assert.Equal(t, "/r /r/a /r/b /r/b/x", paths(fold(t, events)))

		// Another refused child is told once; its deletion clears it, and
		// a child change that leaves /r/secret refused tells nothing new.
		mkTree(t, closed, "/r/hidden=h")
		ev := readUntil(t, x, cache.Refused)
		assert.Equal(t, "/r/hidden", ev[len(ev)-1].Node.Path)
		requireRefused(t, x.Freshness().Refused, "/r/hidden", "two refused")
		require.NoError(t, closed.Delete(ctxT(t), "/r/hidden", -1))
		mkTree(t, open, "/r/c=4")
		ev = readUntil(t, x, cache.Created)
		assert.Equal(t, "/r/c", ev[len(ev)-1].Node.Path)
		assert.Empty(t, ev[:len(ev)-1], "nothing but /r/c's Created")
		f = x.Freshness()
		requireRefused(t, f.Refused, "/r/secret", "after /r/hidden's deletion")
		assert.NotContains(t, f.Refused.Error(), "/r/hidden")
	})

	t.Run("the path itself", func(t *testing.T) {
		x, err := cache.Start(ctxT(t), stranger, "/r/secret")
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, x.Close()) })
		requireRefused(t, x.Initialized(ctxT(t)), "/r/secret", "Initialized")
		assert.Empty(t, x.Snapshot())
		requireRefused(t, x.Freshness().Refused, "/r/secret", "Freshness.Refused")
		events := readUntil(t, x, cache.Initialized)
		require.Len(t, events, 2, "Refused, then Initialized: %v", events)
		assert.Equal(t, cache.Refused, events[0].Type)
		requireRefused(t, events[0].Err, "/r/secret", "Refused's Err")
	})
}

// The test's refused nodes really are refused to the stranger, and open to
// the others: the scenario above stands on it.
func TestRefusedFixture(t *testing.T) {
	servers := sharedServers(t)
	closed := connect(t, servers, acltest.Options()...)
	stranger := connect(t, servers)
	mkTree(t, closed, "/s=s")
	_, _, err := stranger.Get(ctxT(t), "/s")
	require.ErrorIs(t, err, zk.ErrNoAuth)
	_, _, err = stranger.Children(ctxT(t), "/s")
	require.ErrorIs(t, err, zk.ErrNoAuth)
	_, _, err = closed.Get(ctxT(t), "/s")
	require.NoError(t, err)
}
