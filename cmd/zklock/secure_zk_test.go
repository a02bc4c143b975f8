package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/session"
)

// secretFile writes content to a file of the test's (mode 0600) and
// returns its path.
func secretFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// authPath is a lock path of the test's under /zklock-auth: the nodes
// there get creator-only ACLs, which the other tests' paths must not.
func authPath(t *testing.T) string {
	return "/zklock-auth/" + regexp.MustCompile(`[^A-Za-z0-9_-]+`).ReplaceAllString(t.Name(), "_")
}

// authClient is a session client of the test's with digest credentials.
func authClient(t *testing.T, servers, user, password string) *session.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := session.Connect(ctx, strings.Split(servers, ","), session.WithDigestAuth(user, password),
		session.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// With --auth-file the lock's nodes are the identity's alone (--acl
// creator, the default then): a client without the credentials can
// neither list nor delete them, and a zklock with a wrong password, or
// none, is refused: exit 69, "authentication refused", nothing of either
// password shown. --acl read lets everyone list (zklock ls) but not
// delete.
func TestZKDigestACL(t *testing.T) {
	srv := zkServers(t)
	good := secretFile(t, "auth", "# zklock's identity\n\ndigest alice:zk-s3cr3t\n")
	wrong := secretFile(t, "wrong", "digest alice:not-it\n")
	anon := zkClient(t, srv)
	alice := authClient(t, srv, "alice", "zk-s3cr3t")
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	t.Run("creator", func(t *testing.T) {
		path := authPath(t)
		h := holdLock(t, srv, path, "--auth-file", good, "-v")
		nodes, _, err := alice.Children(ctx, path)
		require.NoError(t, err)
		require.Len(t, nodes, 1)
		_, _, err = anon.Children(ctx, path)
		assert.ErrorIs(t, err, session.ErrNoAuth, "listed without the credentials")
		assert.ErrorIs(t, anon.Delete(ctx, path+"/"+nodes[0], -1), session.ErrNoAuth, "deleted without the credentials")

		for name, args := range map[string][]string{
			"wrong password": {"--auth-file", wrong},
			"no credentials": nil,
		} {
			code, p := runZklock(t, append(append([]string{"--servers", srv}, args...), path, "--", "echo", "ran")...)
			assert.Equal(t, exitUnavailable, code, name)
			assert.Contains(t, p.stderr.String(), "zklock: zookeeper "+srv+": authentication refused: zk: not authenticated (", name)
			assert.Empty(t, p.stdout.String(), "%s: the command ran", name)
			assertNoSecret(t, p, "zk-s3cr3t", "not-it")
		}
		_, p := runZklock(t, "--servers", srv, path, "--", "true")
		assert.Contains(t, p.stderr.String(), "give the credentials with --auth-file")

		// ls needs the credentials too.
		code, p := runZklock(t, "--servers", srv, "ls", path)
		assert.Equal(t, exitUnavailable, code)
		assert.Contains(t, p.stderr.String(), "zklock: ls: zookeeper "+srv+": authentication refused: ")
		code, p = runZklock(t, "--servers", srv, "--auth-file", good, "ls", path)
		assert.Equal(t, exitOK, code, "stderr: %s", p.stderr)
		assert.Contains(t, p.stdout.String(), "\tholder\t")

		h.closeStdin(t)
		assert.Equal(t, exitOK, h.wait(t))
		assertNoSecret(t, h, "zk-s3cr3t")
	})

	t.Run("read", func(t *testing.T) {
		path := authPath(t)
		h := holdLock(t, srv, path, "--auth-file", good, "--acl", "read")
		nodes, _, err := anon.Children(ctx, path)
		require.NoError(t, err, "--acl read: anyone may list")
		require.Len(t, nodes, 1)
		assert.ErrorIs(t, anon.Delete(ctx, path+"/"+nodes[0], -1), session.ErrNoAuth, "deleted without the credentials")
		code, p := runZklock(t, "--servers", srv, "ls", path)
		assert.Equal(t, exitOK, code, "stderr: %s", p.stderr)
		assert.Contains(t, p.stdout.String(), "\tholder\t")
		code, _ = runZklock(t, "--servers", srv, path, "--", "true")
		assert.Equal(t, exitUnavailable, code, "joined the queue without the credentials")
		h.closeStdin(t)
		assert.Equal(t, exitOK, h.wait(t))
	})
}

// The flags of ZooKeeper's security are checked before anything is
// connected to: exit 64, no secret shown.
func TestZKSecurityUsage(t *testing.T) {
	sasl := secretFile(t, "sasl", "sasl bob:hunter2\n")
	oneWord := secretFile(t, "oneword", "bob:hunter2\n")
	noColon := secretFile(t, "nocolon", "digest hunter2\n")
	empty := secretFile(t, "empty", "# nothing\n")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--acl", "creator"}, "--acl creator needs --auth-file"},
		{[]string{"--acl", "read"}, "--acl read needs --auth-file"},
		{[]string{"--acl", "everyone"}, `unknown --acl "everyone": want creator, open or read`},
		{[]string{"--auth-file", sasl}, `line 1: scheme "sasl" is not supported: zklock authenticates with digest only`},
		{[]string{"--auth-file", oneWord}, `line 1: want "digest USER:PASSWORD"`},
		{[]string{"--auth-file", noColon}, `line 1: want "digest USER:PASSWORD"`},
		{[]string{"--auth-file", empty}, `no "digest USER:PASSWORD" line in it`},
		{[]string{"--auth-file", "/nonexistent/auth"}, "--auth-file: open /nonexistent/auth: no such file"},
		{[]string{"--tls-cert", sasl}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-ca", sasl}, "--tls-ca " + sasl + ": no PEM certificate in it"},
		{[]string{"--backend", "redis", "--redis", "127.0.0.1:1", "--auth-file", sasl}, "--auth-file needs --backend zk"},
		{[]string{"--backend", "memcached", "--memcached", "127.0.0.1:1", "--tls-ca", sasl},
			"--tls-ca needs --backend zk, redis, redis-cluster, redis-sentinel, redlock or mysql"},
	} {
		args := tc.args
		if args[0] != "--backend" {
			args = append([]string{"--servers", "127.0.0.1:1"}, args...)
		}
		code, p := runZklock(t, append(args, "/x", "--", "true")...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Contains(t, p.stderr.String(), tc.msg, "%v", tc.args)
		assertNoSecret(t, p, "hunter2")
	}
}

// Over TLS: zklock trusts the CA of --tls-ca and presents the client
// certificate the server asks for. A server certificate from another CA,
// or for another host name, is refused at once (no wait for the
// connection timeout): exit 69, naming the certificate's trouble.
func TestZKTLS(t *testing.T) {
	ca := harness.NewCA(t, "zk CA")
	z := harness.StartZKTLS(t, ca.Issue(t, "zk", "127.0.0.1"), ca, true)
	client := ca.Issue(t, "client", "zklock")
	srv := strings.Join(z.TLSServers(), ",")
	cert := []string{"--tls-cert", client.CertFile, "--tls-key", client.KeyFile}
	path := lockPath(t)

	env := runEnv(t, append(append([]string{"--servers", srv, "--tls-ca", ca.CertFile}, cert...), path)...)
	assert.Equal(t, path, env["path"])
	assert.NotEqual(t, "-", env["token"])
	code, p := runZklock(t, append(append([]string{"--servers", srv, "--tls-ca", ca.CertFile}, cert...), "ls", path)...)
	assert.Contains(t, freeOrGone, code, "ls over TLS (the lock released): %s", p.stderr)

	other := harness.NewCA(t, "another CA")
	_, port, _ := strings.Cut(srv, ":")
	// The alert a server sends when a client certificate is missing is
	// the JDK's choice: bad_certificate, or (newer ones, TLS 1.3)
	// certificate_required.
	noCert := func(alert string) string {
		return "zklock: zookeeper " + srv + ": TLS: the server refused the connection: remote error: tls: " + alert +
			" (does the server want a client certificate? --tls-cert and --tls-key)"
	}
	for _, tc := range []struct {
		name string
		args []string
		msgs []string // one of them
	}{
		{"untrusted", append([]string{"--servers", srv, "--tls-ca", other.CertFile}, cert...),
			[]string{"zklock: zookeeper " + srv + ": TLS: certificate not trusted: x509: certificate signed by unknown authority"}},
		{"host name", append([]string{"--servers", "localhost:" + port, "--tls-ca", ca.CertFile}, cert...),
			[]string{"zklock: zookeeper localhost:" + port + ": TLS: certificate not valid for the host name: x509: certificate is not valid for any names, but wanted to match localhost"}},
		{"no client certificate", []string{"--servers", srv, "--tls-ca", ca.CertFile},
			[]string{noCert("bad certificate"), noCert("certificate required")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, p := runZklock(t, append(tc.args, "-v", path, "--", "echo", "ran")...)
			assert.Equal(t, exitUnavailable, code)
			stderr := p.stderr.String()
			assert.True(t, slices.ContainsFunc(tc.msgs, func(m string) bool { return strings.Contains(stderr, m) }),
				"stderr %q has none of %q", stderr, tc.msgs)
			assert.Empty(t, p.stdout.String(), "the command ran")
		})
	}
}

// assertNoSecret checks that none of secrets is in p's output.
func assertNoSecret(t *testing.T, p *proc, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		assert.NotContains(t, p.stdout.String(), s, "a secret on stdout")
		assert.NotContains(t, p.stderr.String(), s, "a secret on stderr")
	}
}
