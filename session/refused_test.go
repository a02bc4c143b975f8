package session_test

import (
	"crypto/tls"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
	"github.com/zkrecipes/zkrecipes/session"
)

// Connect gives up at once, with an error that is recipes.ErrRefused and
// names each server and its refusal, when every server of the list
// refused the client in one round: a certificate from a CA the client
// does not trust, no client certificate where the server requires one.
// It does not wait for its connection timeout (an hour here) or its
// context: the next round would meet the same refusals. A server down
// beside one that refuses may come back: Connect waits then.
func TestConnectRefused(t *testing.T) {
	ca := harness.NewCA(t, "")
	z := harness.StartZKTLSWith(t, harness.ZKTLSOptions{
		Server: ca.Issue(t, "server", "localhost", harness.Loopback), CA: ca, NeedClientCert: true,
	})
	addr := z.TLSServers()[0]
	p := harness.NewProxy(t, addr) // a second address of the same server
	untrusting := harness.NewCA(t, "other CA").ClientConfig(nil)
	const untrusted = ": tls handshake: tls: failed to verify certificate: x509: certificate signed by unknown authority"

	for _, tc := range []struct {
		name    string
		servers []string
		cfg     *tls.Config
		want    []string
	}{
		{"another CA", []string{addr}, untrusting, []string{"every server refused the client: " + addr + untrusted}},
		{"no client certificate", []string{addr}, ca.ClientConfig(nil),
			[]string{"every server refused the client: " + addr + ": ", "remote error: tls: ", "(no client certificate was given: the server may require one)"}},
		{"each of two servers", []string{addr, p.Addr()}, untrusting, []string{addr + untrusted, p.Addr() + untrusted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			c, err := session.Connect(ctx, tc.servers, quiet(), session.WithTLS(tc.cfg), session.WithConnectionTimeout(time.Hour))
			if err == nil {
				c.Close()
				t.Fatalf("connected to %v", tc.servers)
			}
			require.NoError(t, ctx.Err(), "it gave up at once, not at its context's end: %v", err)
			require.ErrorIs(t, err, session.ErrNotConnected)
			require.ErrorIs(t, err, recipes.ErrRefused)
			for _, want := range tc.want {
				assert.ErrorContains(t, err, want)
			}
			t.Log(err)
		})
	}

	t.Run("a server down beside one that refuses", func(t *testing.T) {
		ports, err := harness.FreePorts(1)
		require.NoError(t, err)
		down := net.JoinHostPort(harness.Loopback, strconv.Itoa(ports[0])) // nothing listens there
		_, err = connectFails(t, []string{addr, down}, session.WithTLS(untrusting))
		assert.NotErrorIs(t, err, recipes.ErrRefused, "it waited for the server down: %v", err)
	})

	useSession(t, connect(t, []string{addr}, session.WithTLS(ca.ClientConfig(ca.Issue(t, "client", "alice")))))
}
