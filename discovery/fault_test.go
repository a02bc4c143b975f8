package discovery_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
	"github.com/zkrecipes/zkrecipes/nodes"
	"github.com/zkrecipes/zkrecipes/session"
)

// A ServiceCache whose session is lost (its connection blackholed past the
// session timeout) keeps serving its last instances, marked stale, while
// the registry changes; once connected again (a new session) it shows
// what the server holds, fresh.
func TestServiceCacheAcrossSessionLoss(t *testing.T) {
	z := harness.StartZK(t, 1)
	p := harness.NewProxy(t, z.Servers()[0])
	c := zktest.Connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
	w := zktest.Connect(t, z.Servers(), session.WithSessionTimeout(20*time.Second))
	states, err := c.Subscribe(ctxT(t))
	require.NoError(t, err)
	base := basePath(t)
	a := discovery.Instance{Name: "orders", ID: "a", Address: "h", Port: new(1), Type: discovery.Dynamic}
	pathA := writeInstance(t, w, base, a)

	d, err := discovery.New(c, discovery.WithBasePath(base))
	require.NoError(t, err)
	sc, err := d.Cache(ctxT(t), "orders")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sc.Close()) })
	require.NoError(t, sc.Initialized(ctxT(t)))
	ids := func() []string {
		var out []string
		for _, in := range sc.Instances() {
			out = append(out, in.ID)
		}
		return out
	}
	require.Equal(t, []string{"a"}, ids())
	before := c.CurrentSession().ID()

	p.Blackhole(t)
	zktest.AwaitState(t, states, session.Lost)
	require.NoError(t, w.Delete(ctxT(t), pathA, -1))
	writeInstance(t, w, base, discovery.Instance{Name: "orders", ID: "b", Address: "h", Port: new(2), Type: discovery.Dynamic})
	require.False(t, sc.Freshness().StaleSince.IsZero(), "stale while cut off")
	require.Equal(t, []string{"a"}, ids(), "the last instances, served while cut off")

	p.Restore(t)
	eventually(t, func() bool { return len(ids()) == 1 && ids()[0] == "b" && sc.Freshness().StaleSince.IsZero() },
		func() string { return "the cache never showed the registry again" })
	require.NotEqual(t, before, c.CurrentSession().ID(), "a new session")
}

// A registration through each fault: its placement ends with the
// session's cause; an update made during the fault (its Update timing
// out) is what is registered once the instance is back, with the next
// generation, exactly once: the service's child version (cversion) shows
// no create or delete when the session lived on, and one delete (the
// expired session's) and one create when a new session registered it.
func TestRegistrationFaults(t *testing.T) {
	z := harness.StartZK(t, 1)
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, p *harness.Proxy, states <-chan session.StateChange)
		heal  func(t *testing.T, p *harness.Proxy)
	}{
		{name: "cut", fault: func(t *testing.T, p *harness.Proxy, _ <-chan session.StateChange) { p.Cut(t) },
			heal: func(t *testing.T, p *harness.Proxy) { p.Restore(t) }},
		{name: "blackhole past the session timeout",
			fault: func(t *testing.T, p *harness.Proxy, states <-chan session.StateChange) {
				p.Blackhole(t)
				zktest.AwaitState(t, states, session.Lost)
			},
			heal: func(t *testing.T, p *harness.Proxy) { p.Restore(t) }},
		{name: "server restart",
			fault: func(t *testing.T, _ *harness.Proxy, _ <-chan session.StateChange) { z.Members()[0].Stop(t) },
			heal:  func(t *testing.T, _ *harness.Proxy) { z.Members()[0].Start(t); z.WaitReady(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := harness.NewProxy(t, z.Servers()[0])
			c := zktest.Connect(t, []string{p.Addr()}, session.WithSessionTimeout(2*time.Second))
			w := zktest.Connect(t, z.Servers(), session.WithSessionTimeout(20*time.Second))
			states, err := c.Subscribe(ctxT(t))
			require.NoError(t, err)
			base := basePath(t)
			// A static instance of another keeps the service's container
			// from being reaped, so that its cversion counts on.
			writeInstance(t, w, base, discovery.Instance{Name: "orders", ID: "static", Type: discovery.Static})
			d, err := discovery.New(c, discovery.WithBasePath(base))
			require.NoError(t, err)
			r := register(t, d, discovery.Instance{Name: "orders", ID: "a", Address: "h", Port: new(1)})
			placed, err := r.Registered(ctxT(t))
			require.NoError(t, err)
			first := c.CurrentSession().ID()
			_, before, err := w.Get(ctxT(t), base+"/orders")
			require.NoError(t, err)

			tc.fault(t, p, states)
			select {
			case <-placed.Done():
			case <-time.After(zktest.WaitLimit):
				t.Fatal("the registration's placement outlived the fault")
			}
			require.ErrorIs(t, placed.Err(), session.ErrSuspended)
			upd := r.Instance()
			upd.Port = new(2)
			short, cancel := context.WithTimeout(ctxT(t), 50*time.Millisecond)
			err = r.Update(short, upd)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded, "not written during the fault")
			require.Equal(t, 2, *r.Instance().Port, "the update is kept")

			tc.heal(t, p)
			back, err := r.Registered(ctxT(t))
			require.NoError(t, err)
			require.Equal(t, placed.Generation()+1, back.Generation())
			want, err := r.Instance().Encode()
			require.NoError(t, err)
			eventually(t, func() bool {
				data, _, err := w.Get(ctxT(t), r.Path())
				return err == nil && string(data) == string(want)
			}, func() string { return "the update was never registered" })
			_, st, err := w.Get(ctxT(t), r.Path())
			require.NoError(t, err)
			now := c.CurrentSession().ID()
			require.Equal(t, now, st.EphemeralOwner, "registered by the current session")
			_, after, err := w.Get(ctxT(t), base+"/orders")
			require.NoError(t, err)
			if now == first {
				assert.Equal(t, before.Cversion, after.Cversion, "the session lived on: the node was never made again")
			} else {
				assert.Equal(t, before.Cversion+2, after.Cversion, "a new session: deleted with the old one, made again once")
			}
			found, err := discovery.New(w, discovery.WithBasePath(base))
			require.NoError(t, err)
			all, err := found.Instances(ctxT(t), "orders")
			require.NoError(t, err)
			require.Len(t, all, 2, "one registration, one static instance")
		})
	}
}

// Unregister during a cut stops the keeping first: once the connection is
// back the node is deleted and stays so, through later reconnections
// (CURATOR-164).
func TestUnregisterDuringCut(t *testing.T) {
	z := harness.StartZK(t, 1)
	p := harness.NewProxy(t, z.Servers()[0])
	c := zktest.Connect(t, []string{p.Addr()}, session.WithSessionTimeout(10*time.Second))
	w := zktest.Connect(t, z.Servers())
	base := basePath(t)
	d, err := discovery.New(c, discovery.WithBasePath(base))
	require.NoError(t, err)
	r := register(t, d, discovery.Instance{Name: "orders", ID: "a", Type: discovery.Static})
	placed, err := r.Registered(ctxT(t))
	require.NoError(t, err)
	p.Cut(t)
	<-placed.Done()
	unregistered := make(chan error, 1)
	go func() { unregistered <- r.Unregister(ctxT(t)) }()
	_, err = r.Registered(ctxT(t))
	require.ErrorIs(t, err, nodes.ErrClosed, "unregistered before the connection is back")
	p.Restore(t)
	require.NoError(t, <-unregistered)
	ok, _, err := w.Exists(ctxT(t), r.Path())
	require.NoError(t, err)
	require.False(t, ok)
	p.Cut(t)
	p.Restore(t)
	_, _, err = c.Exists(ctxT(t), "/") // a round trip on the next connection
	require.NoError(t, err)
	ok, _, err = w.Exists(ctxT(t), r.Path())
	require.NoError(t, err)
	assert.False(t, ok, "no reconnection registers it again")
}
