package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/session"
)

// zklock services lists the names under --base, a service's instances
// (a field that is null as "-"), or with --json their data as stored; a
// node that is no instance is named on stderr and left out.
func TestServices(t *testing.T) {
	srv := zkServers(t)
	c := zkClient(t, srv)
	base := lockPath(t)
	ctx := t.Context()

	code, p := runZklock(t, "services", "--servers", srv, "--base", base)
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String(), "no base path: no services")

	spec, err := discovery.ParseURISpec("{scheme}://{address}:{port}")
	require.NoError(t, err)
	reg := time.UnixMilli(1764320000123)
	insts := []discovery.Instance{
		{Name: "orders", ID: "a", Address: "10.0.0.5", Port: new(8080), Registered: reg, Type: discovery.Dynamic, URISpec: spec},
		{Name: "orders", ID: "b", Type: discovery.Static},
		{Name: "billing", ID: "c", Address: "h", SSLPort: new(443), Registered: reg, Type: discovery.Permanent, URISpec: spec},
	}
	var stored []string
	for _, inst := range insts {
		path, err := discovery.InstancePath(base, inst)
		require.NoError(t, err)
		data, err := inst.Encode()
		require.NoError(t, err)
		require.NoError(t, c.EnsurePath(ctx, session.ParentPath(path)))
		_, err = c.Create(ctx, path, data, session.Ephemeral)
		require.NoError(t, err)
		if inst.Name == "orders" {
			stored = append(stored, string(data))
		}
	}
	_, err = c.Create(ctx, base+"/orders/junk", []byte("not json"), session.Ephemeral)
	require.NoError(t, err)

	code, p = runZklock(t, "services", "--servers", srv, "--base", base)
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	assert.Equal(t, "billing\norders\n", p.stdout.String())

	code, p = runZklock(t, "services", "--servers", srv, "--base", base, "orders")
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	assert.Equal(t, "a\t10.0.0.5\t8080\t-\tDYNAMIC\thttp://10.0.0.5:8080\t2025-11-28T08:53:20.123Z\n"+
		"b\t-\t-\t-\tSTATIC\t-\t-\n", p.stdout.String())
	assert.Contains(t, p.stderr.String(), "node junk of orders: discovery: not a service instance")

	code, p = runZklock(t, "services", "orders", "--servers", srv, "--base", base, "--json")
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	assert.Equal(t, strings.Join(append(stored, "not json"), "\n")+"\n", p.stdout.String())

	code, p = runZklock(t, "services", "--servers", srv, "--base", base, "nobody")
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String(), fmt.Sprintf("a service with no instance: %q", p.stdout))
}
