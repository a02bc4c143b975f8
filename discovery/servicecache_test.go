package discovery_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/testkit/acltest"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// A ServiceCache of a service not registered yet is empty, then shows an
// instance when its node comes, its new data when it changes, and nothing
// once it is deleted; each change is told on Changed.
func TestServiceCacheComesAndGoes(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	base := basePath(t)
	d, err := discovery.New(c, discovery.WithBasePath(base))
	require.NoError(t, err)
	sc, err := d.Cache(ctxT(t), "orders")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sc.Close()) })
	require.NoError(t, sc.Initialized(ctxT(t)))
	require.Empty(t, sc.Instances())

	inst := discovery.Instance{Name: "orders", ID: "i-1", Address: "a", Port: new(1), Type: discovery.Dynamic}
	p := writeInstance(t, c, base, inst)
	inst.Node = "i-1"
	eventually(t, func() bool { return len(sc.Instances()) == 1 }, func() string { return "no instance" })
	require.Equal(t, []discovery.Instance{inst}, sc.Instances())
	<-sc.Changed()

	inst.Address = "b"
	data, err := inst.Encode()
	require.NoError(t, err)
	_, err = c.Set(ctxT(t), p, data, -1)
	require.NoError(t, err)
	eventually(t, func() bool { return sc.Instances()[0].Address == "b" }, func() string { return "no update" })

	require.NoError(t, c.Delete(ctxT(t), p, -1))
	eventually(t, func() bool { return len(sc.Instances()) == 0 }, func() string { return "still there" })
	<-sc.Changed()
	removeNodes(t, c, session.ParentPath(p), base)
}

// A service whose node refuses this client the read is an error, as
// Instances says it, not an empty service: the ServiceCache's Initialized
// and the Provider tell the refusal.
func TestServiceCacheRefused(t *testing.T) {
	servers := sharedServers(t)
	owner := zktest.Connect(t, servers, acltest.Options()...)
	stranger := zktest.Connect(t, servers)
	base := basePath(t)
	p := writeInstance(t, owner, base, discovery.Instance{Name: "orders", ID: "i-1", Type: discovery.Static})
	t.Cleanup(func() { removeNodes(t, owner, p, session.ParentPath(p), base) })
	d, err := discovery.New(stranger, discovery.WithBasePath(base))
	require.NoError(t, err)
	_, err = d.Instances(ctxT(t), "orders")
	require.ErrorIs(t, err, session.ErrNoAuth, "the one-shot read")

	sc, err := d.Cache(ctxT(t), "orders")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sc.Close()) })
	err = sc.Initialized(ctxT(t))
	require.ErrorIs(t, err, session.ErrNoAuth, "the cache")
	require.ErrorIs(t, err, recipes.ErrRefused)
	prov, err := discovery.NewProvider(sc)
	require.NoError(t, err)
	_, err = prov.Instance(ctxT(t))
	require.ErrorIs(t, err, session.ErrNoAuth, "the provider")
}
