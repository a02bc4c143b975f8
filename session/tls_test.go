package session_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/internal/testkit/tracetest"
	"github.com/zkrecipes/zkrecipes/session"
)

// refusedWithin is the connection timeout of the clients that must fail:
// Connect gives up after it, naming the last attempt's failure.
const refusedWithin = 2 * time.Second

// connectFails connects with opts, which must fail, and returns the error.
func connectFails(t *testing.T, servers []string, opts ...session.Option) error {
	t.Helper()
	opts = append([]session.Option{quiet(), session.WithConnectionTimeout(refusedWithin)}, opts...)
	c, err := session.Connect(ctxT(t), servers, opts...)
	if err == nil {
		c.Close()
		t.Fatalf("connected to %v", servers)
	}
	require.ErrorIs(t, err, session.ErrNotConnected)
	return err
}

// useSession creates, reads and deletes a node through c.
func useSession(t *testing.T, c *session.Client) {
	t.Helper()
	ctx := ctxT(t)
	node, err := c.Create(ctx, "/tls-", []byte("over TLS"), zk.FlagEphemeral|zk.FlagSequence)
	require.NoError(t, err)
	data, _, err := c.Get(ctx, node)
	require.NoError(t, err)
	assert.Equal(t, "over TLS", string(data))
	require.NoError(t, c.Delete(ctx, node, -1))
}

// A client that trusts the server's CA works over TLS, and reconnects (a
// new TLS handshake) to the same session after its connection is cut; one
// that trusts another CA fails within its connection timeout, with an
// error that says the certificate is not trusted.
func TestTLS(t *testing.T) {
	ca := harness.NewCA(t, "")
	z := harness.StartZKTLS(t, ca.Issue(t, "server", "localhost", harness.Loopback), ca, false)
	p := harness.NewProxy(t, z.TLSServers()[0])
	rec := tracetest.New()
	c := connect(t, []string{p.Addr()}, session.WithTLS(ca.ClientConfig(nil)), session.WithTrace(rec.Trace()))
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
		rec := tracetest.New()
		other := harness.NewCA(t, "other CA")
		err := connectFails(t, z.TLSServers(), session.WithTLS(other.ClientConfig(nil)), session.WithTrace(rec.Trace()))
		var unknown x509.UnknownAuthorityError
		require.ErrorAs(t, err, &unknown, "%v", err)
		var verify *tls.CertificateVerificationError
		require.ErrorAs(t, err, &verify, "%v", err)
		assert.ErrorContains(t, err, z.TLSServers()[0]+": tls handshake: tls: failed to verify certificate: x509: certificate signed by unknown authority")
		_, failed := connectsTo(rec, z.TLSServers()[0])
		require.NotEmpty(t, failed, "the failed attempts are traced")
		assert.ErrorAs(t, failed[0].Err, &unknown)
	})
	t.Run("plain port", func(t *testing.T) {
		err := connectFails(t, z.Servers(), session.WithTLS(ca.ClientConfig(nil)))
		assert.ErrorContains(t, err, "last attempt: "+z.Servers()[0]+": tls handshake: ")
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
		err := connectFails(t, []string{addr}, session.WithTLS(ca.ClientConfig(nil)))
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
		err := connectFails(t, []string{net.JoinHostPort("localhost", port)}, session.WithTLS(cfg))
		var name x509.HostnameError
		require.ErrorAs(t, err, &name, "%v", err)
		assert.ErrorContains(t, err, "not elsewhere")
	})
}

// A server that requires a client certificate refuses a client without
// one, with an error that says so, and serves one with a certificate from
// the CA it trusts.
func TestTLSClientCertificate(t *testing.T) {
	ca := harness.NewCA(t, "")
	z := harness.StartZKTLS(t, ca.Issue(t, "server", "localhost", harness.Loopback), ca, true)

	err := connectFails(t, z.TLSServers(), session.WithTLS(ca.ClientConfig(nil)))
	assert.ErrorContains(t, err, "last attempt: "+z.TLSServers()[0]+": tls handshake: remote error: tls: bad certificate"+
		" (no client certificate was given: the server may require one)")

	useSession(t, connect(t, z.TLSServers(), session.WithTLS(ca.ClientConfig(ca.Issue(t, "client", "alice")))))
}

// A nil tls.Config is bad input.
func TestWithTLSConfig(t *testing.T) {
	_, err := session.Connect(context.Background(), []string{"127.0.0.1:1"}, session.WithTLS(nil))
	require.ErrorIs(t, err, session.ErrInvalidArgument)
	assert.False(t, errors.Is(err, session.ErrNotConnected))
}
