package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/session"
)

// zklock services lists the names under --base, a service's instances
// (a field that is null as "-"), or with -o json (--json) JSON Lines: the
// names, or the instances' data as stored; a node that is no instance
// (or, for JSON, not JSON) is named on stderr and left out.
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

	for _, json := range [][]string{{"--json"}, {"-o", "json"}, {"--output", "json"}} {
		code, p = runZklock(t, slices.Concat([]string{"services", "orders", "--servers", srv, "--base", base}, json)...)
		require.Equal(t, 0, code, "stderr: %s", p.stderr)
		assert.Equal(t, strings.Join(stored, "\n")+"\n", p.stdout.String(), "JSON Lines: the data that is JSON")
		assert.Contains(t, p.stderr.String(), "node junk of orders: not JSON: ")
	}

	code, p = runZklock(t, "services", "--servers", srv, "--base", base, "-o", "json")
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	var names []string
	for line := range strings.Lines(p.stdout.String()) {
		var rec struct{ Name string }
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "%q", line)
		names = append(names, rec.Name)
	}
	assert.Equal(t, []string{"billing", "orders"}, names)

	code, p = runZklock(t, "services", "--servers", srv, "--base", base, "nobody")
	require.Equal(t, 0, code, "stderr: %s", p.stderr)
	assert.Empty(t, p.stdout.String(), fmt.Sprintf("a service with no instance: %q", p.stdout))
}

// services --timeout bounds the connection, as ls's: a ZooKeeper that
// cannot be reached exits 69 once it passes, naming the last error.
func TestServicesTimeout(t *testing.T) {
	code, p := runZklock(t, "services", "--servers", "127.0.0.1:1", "--timeout", "1s")
	assert.Equal(t, exitUnavailable, code)
	assert.Contains(t, p.stderr.String(), "timed out after 1s")
	assert.Contains(t, p.stderr.String(), "connection refused")
}
