package refusal

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
	"github.com/zkrecipes/zkrecipes/recipes"
)

// What a client meets when it talks TLS to a server: the handshake
// failures that trying again meets again are refusals, for their reason;
// an unreachable server and a timeout are not.
func TestTLSRefusals(t *testing.T) {
	ca := harness.NewCA(t, "")
	cert := ca.Issue(t, "server", harness.Loopback)
	optional := serve(t, func(c net.Conn) net.Conn {
		return tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert.Pair}})
	})
	required := serve(t, func(c net.Conn) net.Conn {
		return tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert.Pair}, ClientCAs: ca.Pool,
			ClientAuth: tls.RequireAndVerifyClientCert})
	})
	plain := serve(t, func(c net.Conn) net.Conn { return c })
	closed := func() string { // nothing listens there any more
		l, err := net.Listen("tcp", harness.Loopback+":0")
		require.NoError(t, err)
		defer l.Close()
		return l.Addr().String()
	}()
	named := ca.ClientConfig(nil)
	named.ServerName = "another.example"
	// An alert that is not about certificates: GetCertificate's error
	// makes crypto/tls send internal_error.
	internal := serve(t, func(c net.Conn) net.Conn {
		return tls.Server(c, &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return nil, errors.New("no certificate at hand")
		}})
	})
	// VerifyPeerCertificate's error makes it send bad_certificate.
	refusing := serve(t, func(c net.Conn) net.Conn {
		return tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert.Pair}, ClientAuth: tls.RequireAnyClientCert,
			VerifyPeerCertificate: func([][]byte, [][]*x509.Certificate) error { return errors.New("not this one") }})
	})
	// A server that speaks TLS for the handshake, then not: the client
	// meets a malformed record after the first.
	garbled := serve(t, func(c net.Conn) net.Conn {
		tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert.Pair}})
		_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
		if tc.Handshake() == nil {
			_, _ = c.Write([]byte("+PONG\r\n")) // in the clear
		}
		return c
	})
	early, earlyRoots := selfSigned(t, time.Now().Add(time.Hour), time.Now().Add(2*time.Hour))
	notYet := serve(t, func(c net.Conn) net.Conn {
		return tls.Server(c, &tls.Config{Certificates: []tls.Certificate{early}})
	})
	old, oldRoots := selfSigned(t, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))
	expired := serve(t, func(c net.Conn) net.Conn {
		return tls.Server(c, &tls.Config{Certificates: []tls.Certificate{old}})
	})
	client := ca.ClientConfig(ca.Issue(t, "client", "client"))

	var (
		record  tls.RecordHeaderError
		invalid x509.CertificateInvalidError
		remote  *net.OpError
	)
	for _, tc := range []struct {
		name string
		addr string
		cfg  *tls.Config
		want Reason
		as   any // the error is one of these (errors.As), when set
	}{
		{"trusted", optional, ca.ClientConfig(nil), NotRefused, nil},
		{"another CA", optional, harness.NewCA(t, "another").ClientConfig(nil), Untrusted, nil},
		{"another name", optional, named, Hostname, nil},
		{"no client certificate", required, ca.ClientConfig(nil), ByPeer, &remote},
		{"a client certificate", required, client, NotRefused, nil},
		{"a plain server", plain, ca.ClientConfig(nil), NotTLS, &record},
		{"nothing listening", closed, ca.ClientConfig(nil), NotRefused, nil},
		{"an internal_error alert", internal, ca.ClientConfig(nil), NotRefused, &remote},
		{"a bad_certificate alert", refusing, client, ByPeer, &remote},
		{"a malformed record after the handshake", garbled, ca.ClientConfig(nil), NotRefused, &record},
		{"a certificate not valid yet (a clock behind)", notYet, &tls.Config{RootCAs: earlyRoots, ServerName: "server"}, NotRefused, &invalid},
		{"an expired certificate", expired, &tls.Config{RootCAs: oldRoots, ServerName: "server"}, Certificate, &invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := talk(tc.addr, tc.cfg)
			switch {
			case tc.name == "trusted" || tc.name == "a client certificate":
				require.NoError(t, err)
				return
			case tc.as != nil:
				require.ErrorAs(t, err, tc.as, "the failure the case is about")
			}
			require.Error(t, err)
			got, cause := Of(err)
			assert.Equal(t, tc.want, got, "%v", err)
			assert.Equal(t, tc.want != NotRefused, Is(err), "%v", err)
			if tc.want != NotRefused {
				assert.NotNil(t, cause)
			}
			// A dialer that wraps the handshake's error in one of its own
			// (gomemcache's DialContext, say): the chain is searched
			// past the first *net.OpError.
			dial := &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("handshake: %w", err)}
			for _, wrapped := range []error{
				dial,
				errors.Join(errors.New("another server: refused"), dial),
				hiding{dial}, // compat's Transient: no Unwrap, an As
			} {
				got, _ := Of(wrapped)
				assert.Equal(t, tc.want, got, "wrapped: %v", wrapped)
				marked := Mark(wrapped)
				assert.Equal(t, tc.want != NotRefused, errors.Is(marked, recipes.ErrRefused), "marked: %v", marked)
				assert.Equal(t, wrapped.Error(), marked.Error(), "the text stays the server's")
				got, _ = Of(fmt.Errorf("acquire: %w", marked))
				assert.Equal(t, tc.want, got, "marked and wrapped: %v", marked)
			}
		})
	}
	assert.False(t, Is(context.DeadlineExceeded))
	assert.False(t, Is(nil))
	assert.NoError(t, Mark(nil))
}

// hiding hides err as compat's Transient mark does: no Unwrap, and an As
// that looks into err.
type hiding struct{ err error }

func (h hiding) Error() string        { return h.err.Error() }
func (h hiding) As(target any) bool   { return errors.As(h.err, target) }
func (h hiding) Is(target error) bool { return errors.Is(h.err, target) }

// The alerts about certificates, and no other, as crypto/tls reports one
// it received (its alert type is unexported; tls.AlertError has the same
// text).
func TestCertificateAlerts(t *testing.T) {
	for a := range 256 {
		alert := tls.AlertError(a)
		want := slices.Contains([]int{42, 43, 44, 45, 46, 48, 49, 116}, a)
		remote := &net.OpError{Op: "remote error", Err: alert}
		assert.Equal(t, want, Is(remote), "%v", remote)
		assert.False(t, Is(&net.OpError{Op: "read", Err: alert}), "not received: %v", alert)
	}
	assert.False(t, Is(&net.OpError{Op: "remote error"}))
	assert.False(t, Is(tls.RecordHeaderError{Msg: "received record with version 504f when expecting version 303"}),
		"a malformed record after the first")
}

// selfSigned is a certificate for "server" valid from notBefore to
// notAfter, and a pool that trusts it.
func selfSigned(t *testing.T, notBefore, notAfter time.Time) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "server"},
		DNSNames: []string{"server"}, NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// talk dials addr with TLS, writes a line and reads the answer: a server
// that refuses the client's certificate says so after the client's side
// of the handshake ended (TLS 1.3), at the first read.
func talk(addr string, cfg *tls.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	_, err = c.Read(make([]byte, 16))
	return err
}

// serve accepts connections on a Loopback port until t ends, wraps each
// with wrap, and answers its first line with "+PONG\r\n" (a plain server
// answers what the TLS handshake sends it, and closes).
func serve(t *testing.T, wrap func(net.Conn) net.Conn) string {
	l, err := net.Listen("tcp", harness.Loopback+":0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			raw, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := wrap(raw)
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 64)
				if _, err := c.Read(buf); err != nil && !errors.Is(err, io.EOF) {
					return
				}
				_, _ = c.Write([]byte("+PONG\r\n"))
			}()
		}
	}()
	return l.Addr().String()
}
