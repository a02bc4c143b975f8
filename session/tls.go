package session

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
)

// WithTLS makes the client speak TLS, configured by cfg, to every server:
// the servers listed are their secure client ports (ZooKeeper's
// secureClientPort, served by its Netty connection factory). Default: plain
// TCP.
//
// Each server's certificate is verified against cfg.RootCAs (the system's
// roots when nil) and, when cfg.ServerName is empty, against the host that
// the server list names, though the client dials the addresses it resolves
// to: "zk1.example.com:2281" is verified as zk1.example.com,
// "10.0.0.5:2281" as the IP address 10.0.0.5. Set cfg.ServerName to verify
// every server as that one name. cfg.Certificates are presented to servers
// that require a client certificate (ssl.clientAuth=need). A zero
// cfg.MinVersion means TLS 1.2. cfg is copied: later changes to it are not
// seen.
//
// A failed TLS handshake (an untrusted certificate, another host name, a
// refused client certificate) fails the connection attempt as a refused
// connection does: the next server is tried, the attempt is reported to the
// Connect hook of WithTrace, and when Connect gives up its ErrNotConnected
// error names the last attempt's failure, e.g. "...; last attempt:
// 127.0.0.1:2281: tls handshake: tls: failed to verify certificate: x509:
// certificate signed by unknown authority" (errors.As finds the
// *tls.CertificateVerificationError). The handshake is part of the
// attempt's bound (see the package documentation on sick members).
//
// Session loss is what it is without TLS: every reconnection, to the same
// server or another, makes a new TLS handshake, and the session survives
// it, or not, as it survives any reconnection.
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) error {
		if cfg == nil {
			return invalid("WithTLS: nil tls.Config")
		}
		c.tls = cfg.Clone()
		if c.tls.MinVersion == 0 {
			c.tls.MinVersion = tls.VersionTLS12
		}
		return nil
	}
}

// tlsDialer makes the TLS handshakes of a client with WithTLS.
type tlsDialer struct {
	cfg *tls.Config

	mu    sync.Mutex
	hosts map[string]string // a resolved address ("ip:port") -> the host the server list names
}

// newTLSDialer returns the dialer of cfg; nil when cfg is nil (plain TCP).
func newTLSDialer(cfg *tls.Config) *tlsDialer {
	if cfg == nil {
		return nil
	}
	return &tlsDialer{cfg: cfg, hosts: make(map[string]string)}
}

// learn notes that address was resolved from host (hostProvider.Init).
func (d *tlsDialer) learn(address, host string) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.hosts[address] = host
}

// serverName is the name address is verified as: the host it was resolved
// from, or its own host when it was not resolved here.
func (d *tlsDialer) serverName(address string) string {
	d.mu.Lock()
	host, ok := d.hosts[address]
	d.mu.Unlock()
	if !ok {
		host, _, _ = net.SplitHostPort(address)
	}
	return host
}

// handshake runs the TLS handshake of a connection to address on raw,
// within raw's deadline, and returns the TLS connection; on failure raw is
// closed.
func (d *tlsDialer) handshake(raw net.Conn, address string) (net.Conn, error) {
	cfg := d.cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = d.serverName(address)
	}
	c := tls.Client(raw, cfg)
	if err := c.Handshake(); err != nil {
		raw.Close()
		if refusedWithoutCert(cfg, err) {
			return nil, fmt.Errorf("tls handshake: %w (no client certificate was given: the server may require one)", err)
		}
		return nil, fmt.Errorf("tls handshake: %w", err)
	}
	return tlsConn{c, raw}, nil
}

// refusedWithoutCert reports whether err is the server's refusal of a
// client that cfg gives no certificate: ZooKeeper with ssl.clientAuth=need
// answers with a bad_certificate alert (certificate_required in TLS 1.3),
// which says nothing of the missing certificate. crypto/tls reports an
// alert from the peer as a net.OpError "remote error" whose error, of an
// unexported type, is the alert's text.
func refusedWithoutCert(cfg *tls.Config, err error) bool {
	var op *net.OpError
	if len(cfg.Certificates) > 0 || cfg.GetClientCertificate != nil || !errors.As(err, &op) || op.Op != "remote error" {
		return false
	}
	alert := op.Err.Error()
	return alert == "tls: bad certificate" || alert == "tls: certificate required"
}

// tlsConn is a TLS connection whose Close closes the socket at once. The
// client closes a connection when it is done with it or no longer trusts
// it (the watchdog's drop); tls.Conn.Close would first write a
// close_notify alert, which can block the closer for seconds on a peer that
// does not read.
type tlsConn struct {
	*tls.Conn
	raw net.Conn
}

func (c tlsConn) Close() error { return c.raw.Close() }
