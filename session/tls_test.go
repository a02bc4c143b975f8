package session_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// connectFails connects to servers (addresses, "ip:port", as the Connect
// hook reports them) with opts, which must fail: once every one of them
// has had a failed attempt, it gives up, and returns Connect's error and
// the attempts traced. It waits for the attempts (bounded by waitLimit),
// not for a connection timeout that a slow handshake could outlast.
func connectFails(t *testing.T, servers []string, opts ...session.Option) (*tracetest.Recorder, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	rec := tracetest.New()
	tr := rec.ClientTrace()
	var mu sync.Mutex
	failed := map[string]bool{}
	record := tr.Connect
	tr.Connect = func(ci session.ConnectInfo) {
		record(ci)
		if ci.Err == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		failed[ci.Server] = true
		if !slices.ContainsFunc(servers, func(s string) bool { return !failed[s] }) {
			cancel()
		}
	}
	opts = append([]session.Option{quiet(), session.WithConnectionTimeout(waitLimit)}, opts...)
	c, err := session.Connect(ctx, servers, append(opts, session.WithClientTrace(tr))...)
	if err == nil {
		c.Close()
		t.Fatalf("connected to %v", servers)
	}
	require.ErrorIs(t, err, session.ErrNotConnected)
	return rec, err
}

// useSession creates, reads and deletes a node through c.
func useSession(t *testing.T, c *session.Client) {
	t.Helper()
	ctx := ctxT(t)
	node, err := c.Create(ctx, "/tls-", []byte("over TLS"), session.Ephemeral|session.PersistentSequential)
	require.NoError(t, err)
	data, _, err := c.Get(ctx, node)
	require.NoError(t, err)
	assert.Equal(t, "over TLS", string(data))
	require.NoError(t, c.Delete(ctx, node, -1))
}

// A client that trusts the server's CA works over TLS, and reconnects (a
// new TLS handshake) to the same session after its connection is cut; one
// that trusts another CA fails, with an error that says the certificate is
// not trusted.
func TestTLS(t *testing.T) {
	ca := harness.NewCA(t, "")
	z := harness.StartZKTLS(t, ca.Issue(t, "server", "localhost", harness.Loopback), ca, false)
	p := harness.NewProxy(t, z.TLSServers()[0])
	rec := tracetest.New()
	c := connect(t, []string{p.Addr()}, session.WithTLS(ca.ClientConfig(nil)), session.WithClientTrace(rec.ClientTrace()))
	states := subscribe(t, c)
	s, err := c.Session(ctxT(t))
	require.NoError(t, err)
	useSession(t, c)

	p.Cut(t)
	expect(t, states, session.Suspended)
	p.Restore(t)
	got := expect(t, states, session.Reconnected)
	assert.Equal(t, s.ID(), got[0].SessionID, "the same session")
	useSession(t, c)
	ok, _ := connectsTo(rec, p.Addr())
	assert.Len(t, ok, 2, "the first connection and the reconnection")

	t.Run("another CA", func(t *testing.T) {
		other := harness.NewCA(t, "other CA")
		rec, err := connectFails(t, z.TLSServers(), session.WithTLS(other.ClientConfig(nil)))
		var unknown x509.UnknownAuthorityError
		require.ErrorAs(t, err, &unknown, "%v", err)
		var verify *tls.CertificateVerificationError
		require.ErrorAs(t, err, &verify, "%v", err)
		assert.ErrorContains(t, err, z.TLSServers()[0]+": tls handshake: tls: failed to verify certificate: x509: certificate signed by unknown authority")
		assert.ErrorIs(t, err, recipes.ErrRefused)
		_, failed := connectsTo(rec, z.TLSServers()[0])
		require.NotEmpty(t, failed, "the failed attempts are traced")
		assert.ErrorAs(t, failed[0].Err, &unknown)
	})
	t.Run("plain port", func(t *testing.T) {
		_, err := connectFails(t, z.Servers(), session.WithTLS(ca.ClientConfig(nil)))
		assert.ErrorContains(t, err, "last attempt: "+z.Servers()[0]+": tls handshake: ")
	})
	t.Run("the config as WithTLS was called", func(t *testing.T) {
		cfg := ca.ClientConfig(nil)
		opt := session.WithTLS(cfg)
		cfg.RootCAs = harness.NewCA(t, "other CA").Pool // not seen
		cfg.ServerName = "elsewhere"
		useSession(t, connect(t, z.TLSServers(), opt))
	})
}

// The certificate is verified for the host the server list names, though
// the client dials the address it resolves to; cfg.ServerName, when set,
// is the name verified instead.
func TestTLSServerName(t *testing.T) {
	ca := harness.NewCA(t, "")
	z := harness.StartZKTLS(t, ca.Issue(t, "server", "localhost"), ca, false)
	addr := z.TLSServers()[0]
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)

	t.Run("an IP address the certificate does not name", func(t *testing.T) {
		_, err := connectFails(t, []string{addr}, session.WithTLS(ca.ClientConfig(nil)))
		var name x509.HostnameError
		require.ErrorAs(t, err, &name, "%v", err)
		assert.ErrorContains(t, err, "x509: cannot validate certificate for 127.0.0.1 because it doesn't contain any IP SANs")
	})
	t.Run("the host name of the server list", func(t *testing.T) {
		useSession(t, connect(t, []string{net.JoinHostPort("localhost", port)}, session.WithTLS(ca.ClientConfig(nil))))
	})
	t.Run("ServerName set", func(t *testing.T) {
		cfg := ca.ClientConfig(nil)
		cfg.ServerName = "localhost"
		useSession(t, connect(t, []string{addr}, session.WithTLS(cfg)))

		cfg.ServerName = "elsewhere"
		_, err := connectFails(t, []string{addr}, session.WithTLS(cfg))
		var name x509.HostnameError
		require.ErrorAs(t, err, &name, "%v", err)
		assert.ErrorContains(t, err, "not elsewhere")
	})
}

// A name and its own IP address in one server list are two servers, each
// verified as itself: with a certificate for the name alone, the name's
// entry connects every time, whichever entry the shuffle tries first, and
// the address's entry fails for its host name.
func TestTLSNameBesideItsAddress(t *testing.T) {
	ca := harness.NewCA(t, "")
	z := harness.StartZKTLS(t, ca.Issue(t, "server", "localhost"), ca, false)
	addr := z.TLSServers()[0]
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	servers := []string{net.JoinHostPort("localhost", port), addr}

	const runs = 8 // a server name chosen at random would fail half of them
	for range runs {
		rec := tracetest.New()
		c := connect(t, servers, session.WithTLS(ca.ClientConfig(nil)), session.WithClientTrace(rec.ClientTrace()))
		useSession(t, c)
		c.Close()
		for _, ci := range rec.Connects() {
			if ci.Err == nil || ci.Server != addr {
				continue // a connection, or localhost as ::1, where nothing listens
			}
			var name x509.HostnameError
			require.ErrorAs(t, ci.Err, &name, "only the address's entry fails")
			assert.Equal(t, "127.0.0.1", name.Host)
		}
	}
}

// A server that requires a client certificate refuses a client without
// one, with an error that says so, and serves one with a certificate from
// the CA it trusts. Under TLS 1.3 the refusal comes after the client's
// handshake, in ZooKeeper's: the error says the same.
func TestTLSClientCertificate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tls13 bool
	}{{"TLS 1.2", false}, {"TLS 1.3", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ca := harness.NewCA(t, "")
			z := harness.StartZKTLSWith(t, harness.ZKTLSOptions{
				Server: ca.Issue(t, "server", "localhost", harness.Loopback), CA: ca,
				NeedClientCert: true, TLS13Only: tc.tls13,
			})

			_, err := connectFails(t, z.TLSServers(), session.WithTLS(ca.ClientConfig(nil)))
			assert.ErrorIs(t, err, recipes.ErrRefused)
			assert.ErrorContains(t, err, "every server refused the client: "+z.TLSServers()[0]+": ")
			assert.ErrorContains(t, err, "remote error: tls: ")
			assertRefusedCert(t, err)
			assert.ErrorContains(t, err, "(no client certificate was given: the server may require one)")

			useSession(t, connect(t, z.TLSServers(), session.WithTLS(ca.ClientConfig(ca.Issue(t, "client", "alice")))))
		})
	}
}

// assertRefusedCert checks that err is a server's refusal of the client's
// certificate: bad_certificate (ZooKeeper 3.8 on Java 17, in TLS 1.2 and
// 1.3) or certificate_required (TLS 1.3, from other servers).
func assertRefusedCert(t *testing.T, err error) {
	t.Helper()
	var op *net.OpError
	require.ErrorAs(t, err, &op, "%v", err)
	assert.Equal(t, "remote error", op.Op)
	alert := op.Err.Error()
	assert.True(t, alert == "tls: bad certificate" || alert == "tls: certificate required", "the alert: %q", alert)
}

// A nil tls.Config is bad input.
func TestWithTLSConfig(t *testing.T) {
	_, err := session.Connect(context.Background(), []string{"127.0.0.1:1"}, session.WithTLS(nil))
	require.ErrorIs(t, err, session.ErrInvalidArgument)
	assert.False(t, errors.Is(err, session.ErrNotConnected))
}
