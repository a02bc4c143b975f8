package ttl

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/internal/testkit/harness"
)

// What a client meets when it talks TLS to a server: the handshake
// failures that trying again meets again are BadCertificate; an
// unreachable server and a timeout are not.
func TestBadCertificate(t *testing.T) {
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

	for _, tc := range []struct {
		name string
		addr string
		cfg  *tls.Config
		bad  bool
	}{
		{"trusted", optional, ca.ClientConfig(nil), false},
		{"another CA", optional, harness.NewCA(t, "another").ClientConfig(nil), true},
		{"another name", optional, named, true},
		{"no client certificate", required, ca.ClientConfig(nil), true},
		{"a client certificate", required, ca.ClientConfig(ca.Issue(t, "client", "client")), false},
		{"a plain server", plain, ca.ClientConfig(nil), true},
		{"nothing listening", closed, ca.ClientConfig(nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := talk(tc.addr, tc.cfg)
			switch {
			case tc.name == "trusted" || tc.name == "a client certificate":
				require.NoError(t, err)
			case tc.bad:
				require.Error(t, err)
				assert.True(t, BadCertificate(err), "%v", err)
				assert.True(t, BadCertificate(Permanent(err)), "wrapped")
			default:
				require.Error(t, err)
				assert.False(t, BadCertificate(err), "%v", err)
			}
		})
	}
	assert.False(t, BadCertificate(context.DeadlineExceeded))
	assert.False(t, BadCertificate(nil))
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
