package discovery_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/nodes"
)

// register registers inst through d, unregistered at t's cleanup.
func register(t testing.TB, d *discovery.Discovery, inst discovery.Instance) *discovery.Registration {
	t.Helper()
	r, err := d.Register(ctxT(t), inst)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Unregister(context.Background()) })
	return r
}

// A registered instance is read back equal, at its node, under a
// parent; an update is what readers see next; Unregister
// removes it and ends its placement. (The parents are containers:
// session's Create makes them so; its tests check the server reaps them.)
func TestRegister(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	base := basePath(t)
	d, err := discovery.New(c, discovery.WithBasePath(base))
	require.NoError(t, err)
	payload := springPayload(t, "orders-1", "orders", map[string]string{"zone": "eu"})
	inst := discovery.Instance{Name: "orders", ID: "a", Address: "10.0.0.5", Port: new(8080), Payload: payload,
		URISpec: mustSpec(t, "{scheme}://{address}:{port}")}
	r := register(t, d, inst)
	require.Equal(t, base+"/orders/a", r.Path())

	got := r.Instance()
	require.Equal(t, discovery.Dynamic, got.Type, "Curator's default type")
	require.False(t, got.Registered.IsZero(), "the registration time is set")
	require.Equal(t, "a", got.Node)
	found, err := d.Instances(ctxT(t), "orders")
	require.NoError(t, err)
	require.Equal(t, []discovery.Instance{got}, found)

	_, st, err := c.Get(ctxT(t), r.Path())
	require.NoError(t, err)
	assert.Equal(t, c.CurrentSession().ID(), st.EphemeralOwner, "a Dynamic instance is ephemeral")

	placed, err := r.Registered(ctxT(t))
	require.NoError(t, err)
	upd := got
	upd.Port = new(9090)
	upd.Registered = time.Time{} // keeps the registration's
	require.NoError(t, r.Update(ctxT(t), upd))
	found, err = d.Instances(ctxT(t), "orders")
	require.NoError(t, err)
	require.Len(t, found, 1)
	require.Equal(t, 9090, *found[0].Port)
	require.Equal(t, got.Registered, found[0].Registered)
	require.Equal(t, r.Instance(), found[0])
	require.NoError(t, placed.Err(), "an update is no new registration")

	require.NoError(t, r.Unregister(ctxT(t)))
	require.ErrorIs(t, placed.Err(), nodes.ErrClosed)
	found, err = d.Instances(ctxT(t), "orders")
	require.NoError(t, err)
	require.Empty(t, found)
	_, err = r.Registered(ctxT(t))
	require.ErrorIs(t, err, nodes.ErrClosed)
	require.ErrorIs(t, r.Update(ctxT(t), upd), nodes.ErrClosed)
	require.NoError(t, r.Unregister(ctxT(t)), "a second Unregister does nothing")
}

// Each service type is registered in its create mode; a DynamicSequential
// instance is known by its node's name.
func TestRegisterTypes(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	base := basePath(t)
	d, err := discovery.New(c, discovery.WithBasePath(base))
	require.NoError(t, err)
	for _, tc := range []struct {
		typ       discovery.ServiceType
		ephemeral bool
	}{{discovery.Dynamic, true}, {discovery.DynamicSequential, true}, {discovery.Static, false}, {discovery.Permanent, false}} {
		t.Run(string(tc.typ), func(t *testing.T) {
			r := register(t, d, discovery.Instance{Name: "s", ID: "id-" + string(tc.typ), Type: tc.typ})
			_, st, err := c.Get(ctxT(t), r.Path())
			require.NoError(t, err)
			assert.Equal(t, tc.ephemeral, st.EphemeralOwner != 0)
			if tc.typ == discovery.DynamicSequential {
				require.Regexp(t, "/s/id-DYNAMIC_SEQUENTIAL[0-9]{10}$", r.Path())
			}
			found, err := d.Instances(ctxT(t), "s")
			require.NoError(t, err)
			require.Contains(t, found, r.Instance())
			require.NoError(t, r.Unregister(ctxT(t)))
			ok, _, err := c.Exists(ctxT(t), r.Path())
			require.NoError(t, err)
			assert.False(t, ok, "unregistered: the node is gone, persistent or not")
		})
	}
}

// Bad input is an ErrInvalidArgument error that names what is wrong, and
// registers nothing.
func TestRegisterBadInput(t *testing.T) {
	c := zktest.Connect(t, sharedServers(t))
	base := basePath(t)
	d, err := discovery.New(c, discovery.WithBasePath(base))
	require.NoError(t, err)
	//lint:ignore SA1012 a nil context is the bad input tested
	_, err = d.Register(nil, discovery.Instance{Name: "s", ID: "a"}) //nolint:staticcheck
	require.ErrorIs(t, err, discovery.ErrInvalidArgument)
	for _, inst := range []discovery.Instance{
		{Name: "s", ID: ""}, {Name: "", ID: "a"}, {Name: "s", ID: "a/b"},
		{Name: "s", ID: "a", Type: "LATER"}, {Name: "s", ID: "a", Payload: []byte("{not json")},
	} {
		_, err := d.Register(ctxT(t), inst)
		require.ErrorIs(t, err, discovery.ErrInvalidArgument, "%+v", inst)
	}
	names, err := d.Names(ctxT(t))
	require.NoError(t, err)
	require.Empty(t, names)

	r := register(t, d, discovery.Instance{Name: "s", ID: "a"})
	for _, inst := range []discovery.Instance{
		{Name: "t", ID: "a"}, {Name: "s", ID: "b"}, {Name: "s", ID: "a", Type: discovery.Static},
	} {
		err := r.Update(ctxT(t), inst)
		require.ErrorIs(t, err, discovery.ErrInvalidArgument)
		require.ErrorContains(t, err, "cannot change")
	}
}

// A registration whose context ends before the node is in place leaves
// nothing behind: here the id is held by another session's node, which
// a Dynamic registration waits for.
func TestRegisterCancelled(t *testing.T) {
	servers := sharedServers(t)
	c := zktest.Connect(t, sharedServers(t))
	other := zktest.Connect(t, servers)
	base := basePath(t)
	inst := discovery.Instance{Name: "s", ID: "a", Type: discovery.Dynamic}
	held := writeInstance(t, other, base, discovery.Instance{Name: "s", ID: "a", Address: "theirs", Type: discovery.Dynamic})
	d, err := discovery.New(c, discovery.WithBasePath(base))
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctxT(t), 300*time.Millisecond)
	defer cancel()
	_, err = d.Register(short, inst)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	data, st, err := c.Get(ctxT(t), held)
	require.NoError(t, err)
	assert.Equal(t, other.CurrentSession().ID(), st.EphemeralOwner, "their node is left alone")
	got, err := discovery.Decode(data)
	require.NoError(t, err)
	assert.Equal(t, "theirs", got.Address)
}
