package discovery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
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
