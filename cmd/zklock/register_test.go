package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// instancesOf returns the instances of service under base, read now.
func instancesOf(t *testing.T, d *discovery.Discovery, service string) []discovery.Instance {
	t.Helper()
	found, err := d.Instances(t.Context(), service)
	require.NoError(t, err)
	return found
}

// zklock register keeps the instance registered while COMMAND runs, with
// every field given (the payload file's JSON as stored), COMMAND seeing
// ZKLOCK_PATH; once COMMAND exits the instance is gone and zklock exits
// with COMMAND's status.
func TestRegisterWhileRunning(t *testing.T) {
	srv := zkServers(t)
	base := lockPath(t)
	d, err := discovery.New(zkClient(t, srv), discovery.WithBasePath(base))
	require.NoError(t, err)
	payload, err := discovery.NewPayload(discovery.SpringCloudClass,
		discovery.SpringCloudPayload{ID: "orders-1", Name: "orders", Metadata: map[string]string{"zone": "eu"}})
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "payload.json")
	require.NoError(t, os.WriteFile(file, append(payload, '\n'), 0o600))

	p := startZklock(t, "register", "--servers", srv, "--base", base, "--service", "orders", "--id", "orders-1",
		"--address", "10.0.0.5", "--port", "8080", "--payload-file", file, "--",
		"sh", "-c", `echo "at $ZKLOCK_PATH"; read x; exit 3`)
	p.waitOutput(t, p.stdout, "\n")
	assert.Equal(t, "at "+base+"/orders/orders-1\n", p.stdout.String())
	found := instancesOf(t, d, "orders")
	require.Len(t, found, 1)
	got := found[0]
	assert.False(t, got.Registered.IsZero())
	want := discovery.Instance{Name: "orders", ID: "orders-1", Address: "10.0.0.5", Port: new(8080), Payload: payload,
		Registered: got.Registered, Type: discovery.Dynamic, Node: "orders-1"}
	assert.Equal(t, want, got)

	p.closeStdin(t)
	assert.Equal(t, 3, p.wait(t), "COMMAND's status")
	assert.Empty(t, instancesOf(t, d, "orders"), "unregistered once COMMAND ended")
}

// Interrupted, zklock passes the signal on to COMMAND and unregisters the
// instance once COMMAND is gone.
func TestRegisterInterrupted(t *testing.T) {
	srv := zkServers(t)
	base := lockPath(t)
	d, err := discovery.New(zkClient(t, srv), discovery.WithBasePath(base))
	require.NoError(t, err)
	p := startZklock(t, "register", "--servers", srv, "--base", base, "--service", "s", "--address", "h",
		"--port", "1", "--", "sh", "-c", trapScript)
	pgid := readyPGID(t, p)
	require.Len(t, instancesOf(t, d, "s"), 1)
	p.signal(t, syscall.SIGTERM)
	assert.Equal(t, 7, p.wait(t), "the trap's status")
	assert.Contains(t, p.stdout.String(), "got TERM")
	waitGroupGone(t, pgid)
	assert.Empty(t, instancesOf(t, d, "s"))
}

// A connection cut and restored at once is no loss: the instance is
// registered again by the same session and COMMAND runs on.
func TestRegisterAcrossCut(t *testing.T) {
	srv := zkServers(t)
	base := lockPath(t)
	d, err := discovery.New(zkClient(t, srv), discovery.WithBasePath(base))
	require.NoError(t, err)
	proxy := harness.NewProxy(t, strings.Split(srv, ",")[0])
	p := startZklock(t, "register", "--servers", proxy.Addr(), "--session-timeout", "10s", "--base", base,
		"--service", "s", "--id", "a", "--address", "h", "--port", "1", "--", "sh", "-c", `echo ready; read x; exit 0`)
	p.waitOutput(t, p.stdout, "ready\n")
	proxy.Cut(t)
	proxy.Restore(t)
	require.Len(t, instancesOf(t, d, "s"), 1)
	p.closeStdin(t)
	assert.Equal(t, 0, p.wait(t), "stderr: %s", p.stderr)
	assert.Empty(t, instancesOf(t, d, "s"))
}

// A registration that stays lost past the session timeout (the
// connection blackholed) stops COMMAND: SIGTERM to its group, exit 76,
// the cause named.
func TestRegisterLost(t *testing.T) {
	srv := zkServers(t)
	base := lockPath(t)
	d, err := discovery.New(zkClient(t, srv), discovery.WithBasePath(base))
	require.NoError(t, err)
	proxy := harness.NewProxy(t, strings.Split(srv, ",")[0])
	p := startZklock(t, "register", "--servers", proxy.Addr(), "--session-timeout", "2s", "--base", base,
		"--service", "s", "--id", "a", "--address", "h", "--port", "1", "--", "sh", "-c", trapScript)
	pgid := readyPGID(t, p)
	require.Len(t, instancesOf(t, d, "s"), 1)

	proxy.Blackhole(t)
	assert.Equal(t, 76, p.wait(t))
	assert.Contains(t, p.stdout.String(), "got TERM")
	stderr := p.stderr.String()
	assert.Contains(t, stderr, "zklock: registration of s/a under "+base+" lost while sh was running")
	assert.Contains(t, stderr, "not registered again within 2s (the session timeout)")
	waitGroupGone(t, pgid)
	// The server expires the cut-off session, and the instance with it.
	waitUntil(t, "the instance to go with its session", func() (bool, string) {
		return len(instancesOf(t, d, "s")) == 0, "still registered"
	})
	proxy.Restore(t)
}

// register --help prints register's own help.
func TestRegisterHelp(t *testing.T) {
	code, p := runZklock(t, "register", "--help")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(p.stdout.String(), "Usage: zklock register [flags] --service NAME"), "%q", p.stdout)
	assert.Contains(t, p.stdout.String(), "exits 76")
}

// An id another session's instance holds is waited for; --timeout ends
// the wait with 75, COMMAND never run, their instance left alone.
func TestRegisterTimeout(t *testing.T) {
	srv := zkServers(t)
	base := lockPath(t)
	other := zkClient(t, srv)
	d, err := discovery.New(other, discovery.WithBasePath(base))
	require.NoError(t, err)
	reg, err := d.Register(t.Context(), discovery.Instance{Name: "s", ID: "a", Address: "theirs", Port: new(1)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = reg.Unregister(context.Background()) })
	code, p := runZklock(t, "register", "--servers", srv, "--timeout", "500ms", "--base", base,
		"--service", "s", "--id", "a", "--address", "h", "--port", "1", "--", "sh", "-c", "echo ran")
	assert.Equal(t, 75, code)
	assert.Empty(t, p.stdout.String(), "COMMAND did not run")
	assert.Contains(t, p.stderr.String(), "timed out after 500ms waiting for registration of s/a under "+base)
	found := instancesOf(t, d, "s")
	require.Len(t, found, 1)
	assert.Equal(t, "theirs", found[0].Address)
}
