package discovery_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/testkit/curator"
	"github.com/zkrecipes/zkrecipes/internal/testkit/zktest"
)

// Interoperability with curator-x-discovery 5.4 (Debian's
// libcurator-discovery-java), run in a JVM by package curator, on the
// shared server: Curator registers and Go finds; Go writes instance nodes
// with its encoding (as a registration will) and Curator's
// queryForInstances and ServiceCache read them.

// interopCases are the golden cases registered through Curator's default
// serializer (which writes no enabled field).
func interopCases(t testing.TB) []goldenCase {
	var out []goldenCase
	for _, c := range goldenCases(t) {
		if !c.full {
			out = append(out, c)
		}
	}
	return out
}

// eventually polls cond until it holds, bounded by zktest.WaitLimit; it
// fails t with what() otherwise.
func eventually(t testing.TB, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(zktest.WaitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", zktest.WaitLimit, what())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// decodeAll decodes the instances the agent returned.
func decodeAll(t testing.TB, raw [][]byte) []discovery.Instance {
	t.Helper()
	out := make([]discovery.Instance, 0, len(raw))
	for _, r := range raw {
		inst, err := discovery.Decode(r)
		require.NoError(t, err)
		out = append(out, inst)
	}
	return out
}

// Curator registers one instance of each type and payload shape (Spring
// Cloud's ZookeeperInstance with metadata among them); Go's one-shot
// reads and its ServiceCache find each with every field equal.
func TestInteropCuratorRegisters(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator registrant"))
	c := zktest.Connect(t, servers)
	base := basePath(t)
	t.Cleanup(func() { a.Delete(t, base) })
	d, err := discovery.New(c, discovery.WithBasePath(base))
	require.NoError(t, err)

	cases := interopCases(t)
	var names []string
	for _, cs := range cases {
		a.Register(t, base, cs.java)
		names = append(names, cs.inst.Name)
	}
	slices.Sort(names)
	got, err := d.Names(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, names, got)
	require.Equal(t, names, a.ServiceNames(t, base))

	for _, cs := range cases {
		t.Run(cs.file, func(t *testing.T) {
			found, err := d.Instances(ctxT(t), cs.inst.Name)
			require.NoError(t, err)
			require.Len(t, found, 1)
			want := cs.inst
			want.Node = cs.inst.ID
			if cs.inst.Type == discovery.DynamicSequential {
				require.Regexp(t, "^"+cs.inst.ID+"[0-9]{10}$", found[0].Node)
				want.Node = found[0].Node
			}
			require.Equal(t, want, found[0])

			sc, err := d.Cache(ctxT(t), cs.inst.Name)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, sc.Close()) })
			require.NoError(t, sc.Initialized(ctxT(t)))
			require.Equal(t, []discovery.Instance{want}, sc.Instances())
		})
	}

	// A name with no instance is an empty answer.
	none, err := d.Instances(ctxT(t), "nobody")
	require.NoError(t, err)
	require.Empty(t, none)
}

// Go writes each instance's node with its encoding and create mode;
// Curator's queryForInstances returns it with every field equal (Java
// re-serializes what it read, enabled included: true, its default), and
// Curator's ServiceCache sees it come, then go when Go deletes it.
func TestInteropGoWrites(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator finder"))
	c := zktest.Connect(t, servers)
	base := basePath(t)
	t.Cleanup(func() { a.Delete(t, base) })
	for _, cs := range interopCases(t) {
		t.Run(cs.file, func(t *testing.T) {
			a.StartServiceCache(t, base, cs.inst.Name)
			defer a.CloseServiceCache(t)

			created := writeInstance(t, c, base, cs.inst)

			want := cs.inst
			want.Enabled = new(true)
			require.Equal(t, []discovery.Instance{want}, decodeAll(t, a.QueryInstances(t, base, cs.inst.Name)))

			var seen []discovery.Instance
			eventually(t, func() bool { seen = decodeAll(t, a.ServiceCacheInstances(t)); return len(seen) == 1 },
				func() string { return "Curator's ServiceCache never saw the instance" })
			require.Equal(t, want, seen[0])

			require.NoError(t, c.Delete(ctxT(t), created, -1))
			eventually(t, func() bool { return len(a.ServiceCacheInstances(t)) == 0 },
				func() string { return "Curator's ServiceCache still sees the deleted instance" })
		})
	}
}

// Go registers each instance (Register); Curator's queryForInstances
// returns it with every field equal, and Curator's ServiceCache sees it
// come, then go when Go unregisters it.
func TestInteropGoRegisters(t *testing.T) {
	servers := sharedServers(t)
	a := curator.Start(t, servers, curator.WithName("curator finder"))
	c := zktest.Connect(t, servers)
	base := basePath(t)
	t.Cleanup(func() { a.Delete(t, base) })
	d, err := discovery.New(c, discovery.WithBasePath(base))
	require.NoError(t, err)
	for _, cs := range interopCases(t) {
		t.Run(cs.file, func(t *testing.T) {
			a.StartServiceCache(t, base, cs.inst.Name)
			defer a.CloseServiceCache(t)

			r, err := d.Register(ctxT(t), cs.inst)
			require.NoError(t, err)
			t.Cleanup(func() { _ = r.Unregister(context.Background()) })

			want := cs.inst
			want.Enabled = new(true)
			if want.Registered.IsZero() {
				want.Registered = r.Instance().Registered // Register sets it, as Curator's builder
			}
			queried := decodeAll(t, a.QueryInstances(t, base, cs.inst.Name))
			require.Len(t, queried, 1)
			require.Equal(t, []discovery.Instance{want}, queried)

			var seen []discovery.Instance
			eventually(t, func() bool { seen = decodeAll(t, a.ServiceCacheInstances(t)); return len(seen) == 1 },
				func() string { return "Curator's ServiceCache never saw the instance" })
			require.Equal(t, want, seen[0])

			require.NoError(t, r.Unregister(ctxT(t)))
			eventually(t, func() bool { return len(a.ServiceCacheInstances(t)) == 0 },
				func() string { return "Curator's ServiceCache still sees the unregistered instance" })
		})
	}
}
